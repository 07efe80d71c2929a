from ansible.plugins.lookup import LookupBase


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        found = []
        for term in terms:
            path = self.find_file_in_search_path(variables, 'files', term)
            with open(path) as f:
                found.append(f.read().strip())
        return found
