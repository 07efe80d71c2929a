from ansible.plugins.action.debug import ActionModule

assert ActionModule
