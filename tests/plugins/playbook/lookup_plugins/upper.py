from ansible.errors import AnsibleError
from ansible.plugins.lookup import LookupBase


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        if 'fail' in terms:
            raise AnsibleError("upper refuses 'fail'")
        return [term.upper() for term in terms]
