def greet(name):
    return 'greetings, %s' % name
