# Filters that import nothing from ansible: they run on any Python.


def double(value, times=2):
    return value * times


def boom(value):
    raise ValueError("kaboom")


def keys_of(value):
    return sorted(value)


def marked(value):
    return 'given'


marked.accept_args_markers = True


class FilterModule:
    def filters(self):
        return {'double': double, 'boom': boom, 'keys_of': keys_of, 'marked': marked}
