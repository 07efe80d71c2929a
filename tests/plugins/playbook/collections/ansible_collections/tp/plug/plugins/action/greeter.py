from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        module_result = self._execute_module(task_vars=task_vars)
        result.update(module_result)
        result['through_action'] = True
        return result
