from common import Skip

def clients_dying(ctx, r):
    raise Skip("x")
signals = descriptors = compiler = remote = clients_dying
