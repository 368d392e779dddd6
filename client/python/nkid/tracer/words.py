"""How the tracer's messages name what they are about: an operand by the
name the kernel gave it and its shape."""

__all__ = ["operands_word"]


def _one(x, shape):
    name = getattr(x, "name", None)
    if shape is None:
        return "scalar %r" % (x,)
    return "%s %s" % (name, list(shape)) if name else "a tile %s" % list(shape)


def operands_word(operands, shapes):
    """"x [128, 512] and y [64, 512]": operands (tiles or scalars) with
    their shapes, joined as a sentence names them."""
    words = [_one(x, s) for x, s in zip(operands, shapes)]
    if len(words) <= 2:
        return " and ".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]
