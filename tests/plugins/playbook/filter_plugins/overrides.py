# A playbook's own filter takes the place of Ansible's of the same name.


class FilterModule:
    def filters(self):
        return {'b64encode': lambda value: 'overridden:' + value}
