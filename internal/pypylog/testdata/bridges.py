import time
def h(n):
    s = 0
    for i in range(n):
        if i % 3 == 0:
            s += 1
        elif i % 5 == 0:
            s += 2
        else:
            s -= 1
    return s
def inner(x):
    t = 0
    for j in range(x):
        t += j
    return t
def outer(n):
    s = 0
    for i in range(n):
        s += inner(i % 50)
    return s
h(3000000); outer(200000)
