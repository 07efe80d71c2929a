#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule
m = AnsibleModule(argument_spec={}, supports_check_mode=True)
m.warn("careful")
m.deprecate("old thing", version="2.99")
m.exit_json(changed=False, ansible_facts={"my_fact": 42})
