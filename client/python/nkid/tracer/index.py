"""Index arithmetic of views: a key (ints, slices, nl.arange expressions,
None, ...) applied to a shape, the maps of a reshape and of a broadcast,
the shape of an element-wise op's operands, and a mask's constraints.
Pure functions of shapes and affine indices: they emit nothing.
"""

from ..errors import NKIError, NKISyntaxError
from .affine import Aff, IndexExpr, Predicate, as_index, broadcast_shapes
from .loc import loc_suffix
from .words import operands_word

__all__ = ["broadcast_tiles", "mask_affs", "op_shape"]


def _err(msg, cls=NKIError):
    return cls(msg + loc_suffix())


def _slice_extent(s, dim):
    """(start Aff, step, extent) of a slice over a dimension of size dim."""
    step = 1 if s.step is None else int(s.step)
    if step == 0:
        raise _err("slice step cannot be zero", ValueError)
    start, stop = s.start, s.stop
    si, ti = as_index(start), as_index(stop)
    if (start is None or (si is not None and si.is_const() and not si.shape)) and \
       (stop is None or (ti is not None and ti.is_const() and not ti.shape)):
        a = None if start is None else si.aff.c
        z = None if stop is None else ti.aff.c
        if step > 0 and z is not None and z > dim and (a is None or a >= 0):
            # Past the end: not clipped as numpy would, so that nkid
            # reports NKI's out-of-bound access with the kernel's line.
            lo = 0 if a is None else a
            return Aff(lo), step, len(range(lo, z, step))
        lo, hi, st = slice(a, z, step).indices(dim)
        n = len(range(lo, hi, st))
        return Aff(lo), st, n
    if start is None:
        start = 0 if step > 0 else dim - 1
        si = as_index(start)
    if stop is None:
        if step < 0:
            raise _err("a symbolic slice needs an explicit stop", NKISyntaxError)
        stop = dim
        ti = as_index(stop)
    if si is None or ti is None or si.shape or ti.shape:
        raise _err("slice bounds must be integers or loop variables", NKISyntaxError)
    diff = ti - si
    if not diff.is_const():
        raise _err("the size of a slice with a symbolic start must be constant"
                   " (write a[i*128:(i+1)*128] or nl.ds(i*128, 128))", NKISyntaxError)
    n = len(range(0, diff.aff.c, step))
    return si.aff, step, n


def _index(shape, key):
    """Shape and per-dimension logical Aff of ``tensor[key]``."""
    if not isinstance(key, tuple):
        key = (key,)
    rank = len(shape)
    if any(k is Ellipsis for k in key):
        if sum(1 for k in key if k is Ellipsis) > 1:
            raise _err("an index can only have a single ellipsis ('...')", IndexError)
        i = key.index(Ellipsis)
        nfill = rank - (len(key) - 1 - sum(1 for k in key if k is None))
        key = key[:i] + (slice(None),) * max(nfill, 0) + key[i + 1:]
    nreal = sum(1 for k in key if k is not None)
    if nreal > rank:
        raise _err("too many indices for tensor of rank %d" % rank, IndexError)
    advanced = [k for k in key if isinstance(k, IndexExpr) and k.shape]
    basic = any(isinstance(k, slice) or k is None for k in key)
    key = key + (slice(None),) * (rank - nreal)
    if advanced and basic:
        raise _err("Mixing basic tensor indexing and advanced tensor indexing is not"
                   " supported. (err_unsupported_mixing_basic_advanced_tensor_indexing)",
                   NKISyntaxError)
    if isinstance(key[0], Predicate) or any(isinstance(k, Predicate) for k in key):
        raise _err("a mask cannot be used as an index", IndexError)

    logical = []
    if advanced:
        out = broadcast_shapes(*[k.shape for k in advanced])
        extra = []
        d = 0
        for k in key:
            if isinstance(k, slice):           # trailing dims left out: full range
                extra.append((d, shape[d]))
                logical.append(None)
            else:
                logical.append(_scalar_or_adv(k, out, shape[d]))
            d += 1
        if extra:
            base = len(out)
            out = out + tuple(n for _, n in extra)
            for i, (d, n) in enumerate(extra):
                logical[d] = Aff.axis(base + i)
        return out, logical

    out = []
    d = 0
    for k in key:
        if k is None:
            out.append(1)
            continue
        if isinstance(k, slice):
            start, step, n = _slice_extent(k, shape[d])
            j = len(out)
            out.append(n)
            logical.append(start + Aff.axis(j, step if n > 1 else 0))
        else:
            logical.append(_scalar_or_adv(k, (), shape[d]))
        d += 1
    return tuple(out), logical


def _scalar_or_adv(k, out, dim):
    i = as_index(k)
    if i is None:
        if isinstance(k, float) and k.is_integer():
            i = as_index(int(k))
        else:
            raise _err("unsupported index %r (NKI indices are integers, slices, loop"
                       " variables and nl.arange/nl.mgrid expressions)" % (k,), IndexError)
    if not i.shape:
        if i.is_const() and i.aff.c < 0:
            return Aff(i.aff.c + dim)
        return i.aff
    return i.aff.shift(len(out) - len(i.shape))


def _reshape_map(old, new):
    """Logical axis map old -> Aff over new axes, for a row-major reshape."""
    oi = [j for j, n in enumerate(old) if n != 1]
    ni = [j for j, n in enumerate(new) if n != 1]
    m = {j: None for j, n in enumerate(old) if n == 1}
    a = b = 0
    while a < len(oi) or b < len(ni):
        go, gn = [oi[a]], [ni[b]]
        po, pn = old[oi[a]], new[ni[b]]
        a += 1
        b += 1
        while po != pn:
            if po < pn:
                go.append(oi[a]); po *= old[oi[a]]; a += 1
            else:
                gn.append(ni[b]); pn *= new[ni[b]]; b += 1
        if len(go) == 1:
            e, stride = Aff(0), 1
            for j in reversed(gn):
                e = e + Aff.axis(j, stride)
                stride *= new[j]
            m[go[0]] = e
        else:
            raise _err("reshape from %s to %s merges dimensions, which needs a"
                       " non-affine index; nkid supports reshapes that split"
                       " dimensions or add/remove size-1 dimensions"
                       % (list(old), list(new)), NotImplementedError)
    return m


def _align_map(src, dst):
    """Broadcast map from a shape to another: the partition axes align, the
    free axes align from the right (numpy style); size-1 axes broadcast."""
    src, dst = tuple(src), tuple(dst)
    if not src:
        return {}
    if len(src) > len(dst):
        if all(n == 1 for n in src[len(dst):]) and len(dst) >= 1:
            m = _align_map(src[:len(dst)], dst)
            m.update({j: None for j in range(len(dst), len(src))})
            return m
        raise _err("shape %s cannot be broadcast to %s" % (list(src), list(dst)), ValueError)
    m = {}
    if src[0] == dst[0]:
        m[0] = Aff.axis(0)
    elif src[0] == 1:
        m[0] = None
    else:
        raise _err("shape %s cannot be broadcast to %s (partition dimension %d vs %d)"
                   % (list(src), list(dst), src[0], dst[0]), ValueError)
    off = len(dst) - len(src)
    for j in range(1, len(src)):
        d = j + off
        if src[j] == dst[d]:
            m[j] = Aff.axis(d)
        elif src[j] == 1:
            m[j] = None
        else:
            raise _err("shape %s cannot be broadcast to %s" % (list(src), list(dst)),
                       ValueError)
    return m


def broadcast_tiles(*shapes, operands=None):
    """The result shape of an element-wise op: partition dims must match or
    be 1; free dims broadcast numpy-style from the right; a [P] tile acts as
    [P, 1].  operands (the tiles, in order) name them in the error."""
    if operands is not None:
        named = [(x, s) for x, s in zip(operands, shapes) if s is not None]
        what = "operands " + operands_word([x for x, _ in named], [s for _, s in named])
    shapes = [tuple(s) for s in shapes if s is not None]
    if operands is None:
        what = "operand shapes " + " and ".join(str(list(x)) for x in shapes)
    if not shapes:
        return ()
    rank = max(len(s) for s in shapes)
    p = 1
    for s in shapes:
        if s and s[0] != 1:
            if p != 1 and s[0] != p:
                raise _err("%s are not broadcastable (partition dimension)" % what,
                           ValueError)
            p = s[0]
    free = [1] * (rank - 1)
    for s in shapes:
        f = s[1:]
        off = (rank - 1) - len(f)
        for i, n in enumerate(f):
            cur = free[off + i]
            if cur == 1:
                free[off + i] = n
            elif n != 1 and n != cur:
                raise _err("%s are not broadcastable" % what, ValueError)
    return (p,) + tuple(free)


def mask_affs(mask, shape):
    """The constraints of a mask (Predicate) over the axes of ``shape``."""
    if mask is None or mask is True:
        return []
    if isinstance(mask, IndexExpr) or not isinstance(mask, Predicate):
        raise _err("NKI mask expressions must be affine expressions of static loop"
                   " indices. Dynamic values, tensor elements, or non-affine"
                   " operations are not supported in mask predicates.", ValueError)
    pshape = mask.shape
    m = _align_map(pshape, shape) if pshape else {}
    out = []
    if any(not isinstance(k, int) and k[0] == "f" for t in mask.terms for k in t.aff.t):
        raise _err("NKI mask expressions must be affine expressions of static loop"
                   " indices. Dynamic values, tensor elements, or non-affine"
                   " operations are not supported in mask predicates."
                   " (err_unsupported_expression_in_mask)", ValueError)
    for t in mask.terms:
        a = t.aff.shift(len(pshape) - len(t.shape))
        out.append(a.subst(m) if pshape else a)
    return out


def op_shape(shape):
    """The iteration shape of an op producing a tile of ``shape``: a [P]
    tile is computed as [P, 1]."""
    return (shape[0], 1) if len(shape) == 1 else tuple(shape)
