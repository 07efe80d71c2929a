# An action plugin that runs modules on the host: native ones (file, stat, slurp), a
# library module, and a command, as real plugins do.
import base64

from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _, args = self.validate_argument_spec(argument_spec=dict(
            path=dict(type='str', required=True),
            word=dict(type='str', default='hello'),
        ))
        path = args['path']
        before = self._execute_module('ansible.legacy.stat', module_args={'path': path}, task_vars=task_vars)
        touched = self._execute_module('ansible.legacy.file', module_args={'path': path, 'state': 'touch'}, task_vars=task_vars)
        echoed = self._low_level_execute_command("printf '%s' " + args['word'] + " >> " + path + " && cat " + path)
        slurped = self._execute_module('ansible.legacy.slurp', module_args={'src': path}, task_vars=task_vars)
        greeted = self._execute_module('greet', module_args={'name': args['word']}, task_vars=task_vars)
        result.update(
            existed=before['stat']['exists'],
            touched=touched.get('changed'),
            rc=echoed['rc'],
            stdout=echoed['stdout'],
            content=base64.b64decode(slurped['content']).decode() if 'content' in slurped else None,
            greeting=greeted.get('greeting'),
            check=self._task.check_mode,
            host=task_vars['inventory_hostname'],
            templated=self._templar.template('{{ myvar }}!'),
            changed=bool(touched.get('changed')),
        )
        return result
