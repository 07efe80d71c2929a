#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.greeting import greet

def main():
    m = AnsibleModule(argument_spec=dict(name=dict(type='str', required=True)), supports_check_mode=True)
    m.exit_json(changed=False, text=greet(m.params['name']))

main()
