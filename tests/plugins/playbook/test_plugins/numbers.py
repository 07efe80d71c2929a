class TestModule:
    def tests(self):
        return {'even_number': lambda value: value % 2 == 0}
