#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule
print("not json")
