from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        result['word'] = self._task.args['word']
        result['role_path_seen'] = task_vars['role_path'].endswith('roles/plugged')
        return result
