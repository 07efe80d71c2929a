#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec=dict(name=dict(type='str', required=True)), supports_check_mode=True)
    module.exit_json(changed=False, greeting='hello ' + module.params['name'])


if __name__ == '__main__':
    main()
