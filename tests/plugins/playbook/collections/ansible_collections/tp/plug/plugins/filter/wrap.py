class FilterModule:
    def filters(self):
        return {'wrap': lambda value, left, right: left + value + right}
