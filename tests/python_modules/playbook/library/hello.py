#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule

def main():
    m = AnsibleModule(argument_spec=dict(name=dict(type='str', required=True), path=dict(type='path')), supports_check_mode=True)
    changed = False
    if m.params['path'] and not m.check_mode:
        with open(m.params['path'], 'w') as f:
            f.write('hello %s\n' % m.params['name'])
        changed = True
    m.exit_json(changed=changed, greeting='hello %s' % m.params['name'])

main()
