from common import Skip

def scenario(ctx, r):
    raise Skip("not written")
