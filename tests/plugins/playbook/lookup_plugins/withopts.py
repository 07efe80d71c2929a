DOCUMENTATION = """
name: withopts
short_description: a lookup with options
options:
  _terms:
    description: words
  suffix:
    description: put after each word
    type: str
    default: '.'
"""

from ansible.plugins.lookup import LookupBase


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        return [term + self.get_option('suffix') for term in terms]
