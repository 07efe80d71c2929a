class FilterModule:
    def filters(self):
        return {'role_shout': lambda value: value.upper() + '!'}
