"""Traced tensors and tiles, and the helpers that emit NKIR ops for them.

An :class:`NkiTensor` names one NKIR tensor (a kernel argument or an HBM
buffer, an SBUF or PSUM tile) through a *view*: a logical ``shape`` and, per
physical dimension of the tensor, an affine index over the view's axes.
Indexing a tensor makes a new view and emits nothing; NKI operations take
views as operands and return fresh tiles.  A fresh tile that is immediately
assigned into another tile (``t[...] = nl.load(...)``, ``psum += nl.matmul(...)``)
is not materialized: the producing op is retargeted to write the
destination directly.
"""

import linecache
import math
import numbers
import re

import numpy as np

from .._proto import nkir_pb2 as ir
from ..errors import NKIError, NKISyntaxError
from . import dtypes as _dt
from .affine import Aff, IndexExpr, Predicate, as_index, broadcast_shapes
from .builder import Access, Op, require, caller_loc, loc_suffix, full_access

__all__ = ["NkiTensor", "Buffer", "ParDim", "sbuf", "psum", "hbm", "shared_hbm",
           "private_hbm", "new_tile", "new_param", "new_hbm", "tensor_tensor",
           "activation", "reduce", "matmul", "transpose", "copy", "load", "store",
           "select", "is_tensor", "is_scalar", "mask_affs"]


class Buffer:
    """A memory space for nl.ndarray(buffer=...)."""

    __slots__ = ("name", "space")

    def __init__(self, name, space):
        self.name = name
        self.space = space

    def __repr__(self):
        return "nl." + self.name


sbuf = Buffer("sbuf", ir.SPACE_SBUF)
psum = Buffer("psum", ir.SPACE_PSUM)
hbm = Buffer("hbm", ir.SPACE_HBM)
private_hbm = Buffer("private_hbm", ir.SPACE_HBM)
shared_hbm = Buffer("shared_hbm", ir.SPACE_SHARED_HBM)
_BUFFER_OF_SPACE = {ir.SPACE_SBUF: sbuf, ir.SPACE_PSUM: psum, ir.SPACE_HBM: hbm,
                    ir.SPACE_SHARED_HBM: shared_hbm}
_ON_CHIP = (ir.SPACE_SBUF, ir.SPACE_PSUM)


class ParDim(int):
    """``nl.par_dim(n)``: marks the partition dimension in a tile shape."""

    def __repr__(self):
        return "par_dim(%d)" % int(self)


def is_tensor(x):
    return isinstance(x, NkiTensor)


def is_scalar(x):
    return isinstance(x, (numbers.Number, np.number, np.bool_)) and not isinstance(x, IndexExpr)


def _err(msg, cls=NKIError):
    return cls(msg + loc_suffix())


_NAME_RE = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=[^=]")


def _guess_name():
    """The variable a kernel line assigns to (for messages), or ''."""
    path, line = caller_loc()
    m = _NAME_RE.match(linecache.getline(path, line))
    return m.group(1) if m else ""


class NkiTensor:
    """A tensor or tile of a traced kernel, seen through a view."""

    __slots__ = ("_tid", "shape", "dtype", "_imap", "_space", "_producer",
                 "_inplace", "name", "_omask", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, tid, shape, dtype, imap, space, name=""):
        self._tid = tid
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype
        self._imap = imap
        self._space = space
        self._producer = None
        self._inplace = False
        self.name = name
        self._omask = ()        # operand masking, t[mask]: Affs over the view's axes

    # -- basic properties
    @property
    def buffer(self):
        return _BUFFER_OF_SPACE[self._space]

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape))

    @property
    def itemsize(self):
        return self.dtype.itemsize

    def __len__(self):
        return self.shape[0]

    def __iter__(self):
        raise TypeError("a NKI tensor is not iterable; index it with nl.arange,"
                        " slices or loop variables")

    def __repr__(self):
        return "<NkiTensor %s %s %s %s>" % (self.name or "#%d" % self._tid, self.buffer,
                                            list(self.shape), _dt.name_of(self.dtype))

    def __bool__(self):
        raise _err("dynamic control-flow depending on tensor value is not supported."
                   " (err_dynamic_control_flow_not_supported)", NKISyntaxError)

    # -- views
    def _view(self, shape, m):
        """A view of shape ``shape`` whose logical axis j is ``m[j]``."""
        imap = [a.subst(m) for a in self._imap]
        return NkiTensor(self._tid, shape, self.dtype, imap, self._space, self.name)

    def _access(self, shape=None, mask=()):
        _bitcast_refresh(self._tid)
        if shape is None or tuple(shape) == self.shape:
            return Access(self._tid, self._imap, self.shape, mask)
        shape = tuple(shape)
        m = _align_map(self.shape, shape)
        return Access(self._tid, [a.subst(m) for a in self._imap], shape, mask)

    def __getitem__(self, key):
        if isinstance(key, Predicate):      # t[mask]: NKI's operand masking (matmul)
            v = self._view(self.shape, {j: Aff.axis(j) for j in range(len(self.shape))})
            v._omask = tuple(self._omask) + tuple(mask_affs(key, self.shape))
            return v
        if _dynamic.has_tile(key):          # t[idx_tile, ...]: indirect
            return _dynamic.getitem(self, key)
        if (len(self.shape) == 1 and self._space in (ir.SPACE_SBUF, ir.SPACE_PSUM)
                and isinstance(key, tuple) and len(key) == 2
                and not any(k is None or k is Ellipsis for k in key)):
            # a tile of partitions only is [P, 1] on chip: t[:, i] of a
            # [P, N] tile indexes on as t[:, i][:, 0] (NKI's reference
            # flash attention passes such columns as [P, 1] buffers)
            return self.reshape((self.shape[0], 1))[key]
        shape, logical = _index(self.shape, key)
        return self._view(shape, dict(enumerate(logical)))

    def __setitem__(self, key, value):
        view = self[key]
        if isinstance(value, NkiTensor) and value._inplace and value._tid == self._tid:
            value._inplace = False          # x[i] += y: already written by __iadd__
            return
        assign(view, value)

    def reshape(self, *shape, **kwargs):
        """A view with another shape (the same elements in row-major order).

        Supported when each dimension of the original is either split into,
        or formed by, consecutive new dimensions whose index stays affine;
        a reshape of an HBM tensor that merges dimensions is a copy
        (tracer.merge).
        """
        if not shape and "shape" in kwargs:         # t.reshape(shape=(...)), nki.tensor's
            shape = (kwargs["shape"],)
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = tuple(int(s) for s in shape)
        if int(np.prod(shape)) != self.size:
            raise _err("cannot reshape a tensor of shape %s into %s"
                       % (list(self.shape), list(shape)), ValueError)
        try:
            m = _reshape_map(self.shape, shape)
        except NotImplementedError as e:
            from .merge import merged_view
            return merged_view(self, shape, e)
        return self._view(shape, m)

    def broadcast_to(self, shape):
        """A view broadcasting size-1 dimensions (also the partition dim)."""
        shape = tuple(int(s) for s in shape)
        return self._view(shape, _align_map(self.shape, shape))

    def astype(self, dtype):
        return copy(self, dtype=dtype)

    def view(self, dtype):
        """The tensor reinterpreted as ``dtype`` (NKI: "a new view of the
        tensor, reinterpret to a specified type"): its bytes read as
        ``dtype``, the last dimension scaled by the sizes (numpy's
        ``ndarray.view``). On-chip tiles only; the view is read-only, each
        read sees the viewed tile's current bytes (an OP_BITCAST before
        it)."""
        dt = _dt.normalize(dtype)
        if dt == self.dtype:
            return self
        if self._space not in (ir.SPACE_SBUF, ir.SPACE_PSUM):
            raise NotImplementedError("NkiTensor.view(%s) of a %s tensor in HBM: nkid"
                                      " reinterprets on-chip tiles only"
                                      % (_dt.name_of(dt), _dt.name_of(self.dtype)))
        b = require("tile.view")
        if len(self.shape) < 2:
            raise _err("tile.view(%s) needs a tile with a free dimension, got shape %s"
                       % (_dt.name_of(dt), list(self.shape)), ValueError)
        nbytes = self.shape[-1] * _dt.itemsize(self.dtype)
        if nbytes % _dt.itemsize(dt):
            raise _err("cannot view a %s tile of shape %s as %s: the last dimension's %d"
                       " bytes are not a multiple of %d"
                       % (_dt.name_of(self.dtype), list(self.shape), _dt.name_of(dt),
                          nbytes, _dt.itemsize(dt)), ValueError)
        shape = tuple(self.shape[:-1]) + (nbytes // _dt.itemsize(dt),)
        t = new_tile(shape, dt, self._space, _guess_name() or self.name)
        b.tensors[t._tid].bitcast = self
        return t

    def assert_shape(self, shape):
        """Raise unless the tensor has ``shape``; returns the tensor."""
        if tuple(int(s) for s in shape) != self.shape:
            raise _err("expected a tensor of shape %s, got %s"
                       % (list(shape), list(self.shape)), AssertionError)
        return self

    def expand_dims(self, axis):
        """A view with a size-1 dimension inserted at ``axis``."""
        shape = list(self.shape)
        shape.insert(axis if axis >= 0 else len(shape) + 1 + axis, 1)
        return self.reshape(tuple(shape))

    # -- arithmetic
    def __add__(self, o):
        return tensor_tensor(self, o, ir.ALU_ADD)

    def __radd__(self, o):
        return tensor_tensor(o, self, ir.ALU_ADD)

    def __sub__(self, o):
        return tensor_tensor(self, o, ir.ALU_SUBTRACT)

    def __rsub__(self, o):
        return tensor_tensor(o, self, ir.ALU_SUBTRACT)

    def __mul__(self, o):
        return tensor_tensor(self, o, ir.ALU_MULTIPLY)

    def __rmul__(self, o):
        return tensor_tensor(o, self, ir.ALU_MULTIPLY)

    def __truediv__(self, o):
        return tensor_tensor(self, o, ir.ALU_DIVIDE)

    def __rtruediv__(self, o):
        return tensor_tensor(o, self, ir.ALU_DIVIDE)

    def __mod__(self, o):
        return tensor_tensor(self, o, ir.ALU_MOD)

    def __rmod__(self, o):
        return tensor_tensor(o, self, ir.ALU_MOD)

    def __pow__(self, o):
        return tensor_tensor(self, o, ir.ALU_POWER)

    def __rpow__(self, o):
        return tensor_tensor(o, self, ir.ALU_POWER)

    def __neg__(self):
        return activation(self, ir.ACT_NEGATIVE)

    def __pos__(self):
        return self

    def __abs__(self):
        return activation(self, ir.ACT_ABS)

    def __invert__(self):
        if _dt.is_float(self.dtype) or self.dtype == _dt.bool_:
            return activation(self, ir.ACT_LOGICAL_NOT)
        return tensor_tensor(self, 0, ir.ALU_INVERT)    # numpy's ~ on integers

    def _bitwise(self, o, logical, bitwise, reverse=False):
        alu = bitwise if not _dt.is_float(self.dtype) and self.dtype != _dt.bool_ else logical
        return tensor_tensor(o, self, alu) if reverse else tensor_tensor(self, o, alu)

    def __and__(self, o):
        return self._bitwise(o, ir.ALU_LOGICAL_AND, ir.ALU_BITWISE_AND)

    def __rand__(self, o):
        return self._bitwise(o, ir.ALU_LOGICAL_AND, ir.ALU_BITWISE_AND, True)

    def __or__(self, o):
        return self._bitwise(o, ir.ALU_LOGICAL_OR, ir.ALU_BITWISE_OR)

    def __ror__(self, o):
        return self._bitwise(o, ir.ALU_LOGICAL_OR, ir.ALU_BITWISE_OR, True)

    def __xor__(self, o):
        return self._bitwise(o, ir.ALU_LOGICAL_XOR, ir.ALU_BITWISE_XOR)

    def __rxor__(self, o):
        return self._bitwise(o, ir.ALU_LOGICAL_XOR, ir.ALU_BITWISE_XOR, True)

    def __lshift__(self, o):
        return tensor_tensor(self, o, ir.ALU_LEFT_SHIFT)

    def __rshift__(self, o):
        return tensor_tensor(self, o, ir.ALU_RIGHT_SHIFT)

    def __lt__(self, o):
        return tensor_tensor(self, o, ir.ALU_LESS)

    def __le__(self, o):
        return tensor_tensor(self, o, ir.ALU_LESS_EQUAL)

    def __gt__(self, o):
        return tensor_tensor(self, o, ir.ALU_GREATER)

    def __ge__(self, o):
        return tensor_tensor(self, o, ir.ALU_GREATER_EQUAL)

    def __eq__(self, o):
        return tensor_tensor(self, o, ir.ALU_EQUAL)

    def __ne__(self, o):
        return tensor_tensor(self, o, ir.ALU_NOT_EQUAL)

    __hash__ = object.__hash__

    # -- in place: x += y writes x (and psum += matmul accumulates)
    def _inplace_op(self, o, alu):
        b = require("in-place arithmetic")
        p = getattr(o, "_producer", None)
        if (alu == ir.ALU_ADD and p is not None and p.kind == ir.OP_MATMUL
                and b.is_last_op(p) and self._space == ir.SPACE_PSUM
                and o.shape == self.shape and not p.fields.get("accumulate")):
            _retarget(b, o, self, accumulate=True)
        else:
            dst = self._access()
            src = [self._access(), _operand(b, o, self.shape, ())]
            b.note_read(dst)
            b.emit(Op(ir.OP_TENSOR_TENSOR, b.loc_here(), dst, src, {"alu": alu}))
            b.note_write(dst)
        self._inplace = True
        return self

    def __iadd__(self, o):
        return self._inplace_op(o, ir.ALU_ADD)

    def __isub__(self, o):
        return self._inplace_op(o, ir.ALU_SUBTRACT)

    def __imul__(self, o):
        return self._inplace_op(o, ir.ALU_MULTIPLY)

    def __itruediv__(self, o):
        return self._inplace_op(o, ir.ALU_DIVIDE)


# ---------------------------------------------------------------- creation

def _physical(shape, par=0):
    """Physical shape (partition dim first, rank >= 2 for tiles) and the
    identity-like index map from the logical shape."""
    shape = tuple(int(s) for s in shape)
    order = [par] + [j for j in range(len(shape)) if j != par]
    phys = [shape[j] for j in order]
    imap = [Aff.axis(j) for j in order]
    return phys, imap


def _bitcast_refresh(tid):
    """Before an op touches tile tid, a tile.view(dtype): refresh it from
    the viewed tile (OP_BITCAST), so that it reads the current bytes."""
    b = require("tile access")
    src = b.tensors[tid].bitcast
    if src is None:
        return
    acc = src._access(op_shape(src.shape))
    b.note_read(acc)
    t = b.tensors[tid]
    b.emit(Op(ir.OP_BITCAST, b.loc_here(), full_access(tid, t.shape), [acc], {}))


def new_tile(shape, dtype, space=ir.SPACE_SBUF, name="", par=0, loc=None):
    """A fresh TENSOR_TILE (no op emitted)."""
    b = require("tile allocation")
    dtype = _dt.normalize(dtype)
    phys, imap = _physical(shape, par)
    if len(phys) == 1:                  # a [P] tile is stored as [P, 1]
        phys.append(1)
        imap.append(Aff(0))
    tid = b.add_tensor(name, ir.TENSOR_TILE, space, dtype, phys, loc=loc)
    b.tensors[tid].blocks = par         # stored [P, blocks..., free...]
    return NkiTensor(tid, shape, dtype, imap, space, name)


def new_hbm(shape, dtype, space, name="", fill=ir.FILL_UNINIT):
    b = require("nl.ndarray")
    dtype = _dt.normalize(dtype)
    phys, imap = _physical(shape)
    tid = b.add_tensor(name, ir.TENSOR_HBM, space, dtype, phys, fill=fill)
    return NkiTensor(tid, shape, dtype, imap, space, name)


def new_param(b, name, shape, dtype):
    dtype = _dt.normalize(dtype)
    tid = b.add_param(name, dtype, shape)
    return NkiTensor(tid, shape, dtype, [Aff.axis(j) for j in range(len(shape))],
                     ir.SPACE_HBM, name)


# ---------------------------------------------------------------- indexing

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
        from .words import operands_word
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


# ---------------------------------------------------------------- ops

def _operand(b, x, shape, mask):
    if isinstance(x, NkiTensor):
        if x._omask:
            raise _err("operand masking (tile[mask]) is only supported for the operands of"
                       " matmul (nl.matmul, nisa.nc_matmul); pass mask= instead", ValueError)
        acc = x._access(shape, mask)
        b.note_read(acc)
        return acc
    if is_scalar(x):
        return float(x)
    if isinstance(x, IndexExpr):
        if x.is_const() and not x.shape:
            return float(x.aff.c)
        return _operand(b, iota_tile(x, _dt.int32), shape, mask)
    raise _err("unsupported operand %r" % (x,), TypeError)


def _shape(x):
    if isinstance(x, NkiTensor):
        return x.shape
    if isinstance(x, IndexExpr) and x.shape:
        return x.shape
    return None


def _dtype_of(x):
    if isinstance(x, NkiTensor):
        return x.dtype
    if isinstance(x, IndexExpr):
        return _dt.int32
    return None


def op_shape(shape):
    """The iteration shape of an op producing a tile of ``shape``: a [P]
    tile is computed as [P, 1]."""
    return (shape[0], 1) if len(shape) == 1 else tuple(shape)


def _result(b, kind, shape, dtype, srcs, fields, mask, space=ir.SPACE_SBUF, loc=None):
    loc = loc or b.loc_here()
    t = new_tile(shape, dtype, space, _guess_name(), loc=loc)
    dst = t._access(op_shape(shape), mask)
    op = b.emit(Op(kind, loc, dst, srcs, fields))
    t._producer = op
    return t


def tensor_tensor(x, y, alu, dtype=None, mask=None):
    """Element-wise ``x alu y``; either may be a scalar."""
    b = require("element-wise operations")
    sx, sy = _shape(x), _shape(y)
    if sx is None and sy is None:
        raise _err("an element-wise NKI operation needs at least one tile operand", TypeError)
    shape = broadcast_tiles(sx, sy, operands=(x, y))
    oshape = op_shape(shape)
    if dtype is None:
        dx, dy = _dtype_of(x), _dtype_of(y)
        if dx is not None and dy is not None:
            dtype = _dt.promote(dx, dy)
        elif dx is not None:
            dtype = _dt.promote_scalar(dx, y)
        else:
            dtype = _dt.promote_scalar(dy, x)
    ma = mask_affs(mask, oshape)
    srcs = [_operand(b, x, oshape, ma), _operand(b, y, oshape, ma)]
    return _result(b, ir.OP_TENSOR_TENSOR, shape, dtype, srcs, {"alu": alu}, ma)


def activation(x, act, dtype=None, mask=None, scale=1.0, bias=None):
    """``act(x * scale + bias)``."""
    b = require("activation functions")
    if not isinstance(x, NkiTensor):
        x = _as_tile(x)
    shape = x.shape
    oshape = op_shape(shape)
    ma = mask_affs(mask, oshape)
    if isinstance(scale, (NkiTensor, IndexExpr)):
        x = tensor_tensor(x, scale, ir.ALU_MULTIPLY, mask=mask)
        scale = 1.0
    srcs = [_operand(b, x, oshape, ma)]
    if bias is not None:
        srcs.append(_operand(b, bias, oshape, ma))
    return _result(b, ir.OP_ACTIVATION, shape, _dt.normalize(dtype) if dtype else x.dtype,
                   srcs, {"act": act, "scale": float(scale)}, ma)


def _as_tile(x):
    if isinstance(x, IndexExpr):
        return iota_tile(x, _dt.int32)
    raise _err("expected a tile, got %r" % (x,), TypeError)


def _axes(axis, rank):
    if isinstance(axis, (list, tuple)):
        axes = [int(a) for a in axis]
    else:
        axes = [int(axis)]
    axes = sorted(set(a + rank if a < 0 else a for a in axes))
    for a in axes:
        if not 0 <= a < rank:
            raise _err("reduction axis %d is out of range for a tile of rank %d"
                       % (a, rank), ValueError)
    return axes


def reduce(x, alu, axis, dtype=None, mask=None, keepdims=False):
    """Reduce ``x`` along ``axis`` with ``alu`` (add, maximum, mean, ...)."""
    b = require("reductions")
    if not isinstance(x, NkiTensor):
        x = _as_tile(x)
    axes = _axes(axis, len(x.shape))
    kshape = tuple(1 if j in axes else n for j, n in enumerate(x.shape))
    ma = mask_affs(mask, x.shape)
    src = _operand(b, x, None, ma)
    if keepdims:
        lshape = kshape
        m = {j: Aff.axis(j) for j in range(len(kshape))}
    else:
        kept = [j for j in range(len(x.shape)) if j not in axes]
        lshape = tuple(x.shape[j] for j in kept)
        m = {i: Aff.axis(j) for i, j in enumerate(kept)}
    loc = b.loc_here()
    t = new_tile(lshape, _dt.normalize(dtype) if dtype else x.dtype, ir.SPACE_SBUF,
                 _guess_name(), loc=loc)
    dmask = [a for a in ma if not any(k in axes for k in a.axes())]
    dst = Access(t._tid, [a.subst(m) for a in t._imap], kshape, dmask)
    op = b.emit(Op(ir.OP_REDUCE, loc, dst, [src],
                   {"alu": alu, "axes": axes, "acc_dtype": ir.DT_FLOAT32}))
    t._producer = op
    return t


def matmul(x, y, transpose_x=False, mask=None, engine=ir.ENGINE_DEFAULT):
    """PSUM fp32 [M, N] = x @ y (x given [M, K]) or x.T @ y (x given [K, M])."""
    b = require("matmul")
    if len(x.shape) != 2 or len(y.shape) != 2:
        raise _err("matmul operands must be 2-D tiles, got %s and %s"
                   % (list(x.shape), list(y.shape)), ValueError)
    m = x.shape[1] if transpose_x else x.shape[0]
    n = y.shape[1]
    shape = (m, n)
    ma = mask_affs(mask, shape)
    srcs = []
    for t, free, out_axis in ((x, 1 if transpose_x else 0, 0), (y, 1, 1)):
        # operand masking (NKI's "lhs_T[i_lhs_f <= 64]"): the operand's
        # masked-off elements are not read (they count as 0 in the sum); a
        # constraint on its free axis alone also masks that output axis
        acc = t._access(None, list(t._omask)) if isinstance(t, NkiTensor) \
            else _operand(b, t, None, ())
        if isinstance(t, NkiTensor):
            b.note_read(acc)
            for a in t._omask:
                if a.axes() == [free]:
                    ma.append(a.subst({free: Aff.axis(out_axis)}))
        srcs.append(acc)
    fields = {"transpose_x": bool(transpose_x), "acc_dtype": ir.DT_FLOAT32}
    if engine:
        fields["engine"] = engine
    return _result(b, ir.OP_MATMUL, shape, _dt.float32, srcs, fields, ma, ir.SPACE_PSUM)


def transpose(x, dtype=None, mask=None, engine=ir.ENGINE_DEFAULT, space=ir.SPACE_SBUF):
    """dst [F, P] <- x [P, F]."""
    b = require("transpose")
    if len(x.shape) != 2:
        raise _err("transpose needs a 2-D tile, got %s" % list(x.shape), ValueError)
    shape = (x.shape[1], x.shape[0])
    srcs = [_operand(b, x, None, ())]
    fields = {"engine": engine} if engine else {}
    return _result(b, ir.OP_TRANSPOSE, shape, _dt.normalize(dtype) if dtype else x.dtype,
                   srcs, fields, mask_affs(mask, shape), space)


def copy(x, dtype=None, mask=None, engine=ir.ENGINE_DEFAULT):
    """A new SBUF tile with the values of ``x`` (cast to ``dtype``)."""
    b = require("nl.copy")
    if not isinstance(x, NkiTensor):
        x = _as_tile(x)
    ma = mask_affs(mask, op_shape(x.shape))
    fields = {"engine": engine} if engine else {}
    return _result(b, ir.OP_COPY, x.shape, _dt.normalize(dtype) if dtype else x.dtype,
                   [_operand(b, x, op_shape(x.shape), ma)], fields, ma)


def load(src, dtype=None, mask=None):
    """HBM -> a new SBUF tile."""
    b = require("nl.load")
    if not isinstance(src, NkiTensor):
        raise _err("nl.load expects a tensor in HBM, got %r" % (src,), TypeError)
    if isinstance(src, _dynamic.DynTensor):
        from .indirect import load as indirect_load
        return indirect_load(src, dtype=dtype, mask=mask)
    if not src.shape:
        # x[b, h] of an HBM tensor: one element, loaded as a [1, 1] tile
        src = NkiTensor(src._tid, (1, 1), src.dtype, src._imap, src._space, src.name)
    ma = mask_affs(mask, op_shape(src.shape))
    return _result(b, ir.OP_LOAD, src.shape, _dt.normalize(dtype) if dtype else src.dtype,
                   [_operand(b, src, op_shape(src.shape), ma)], {}, ma)


def store(dst, value, mask=None):
    """SBUF/PSUM value -> HBM dst."""
    b = require("nl.store")
    if not isinstance(dst, NkiTensor):
        raise _err("nl.store expects a destination tensor in HBM, got %r" % (dst,), TypeError)
    if isinstance(dst, _dynamic.DynTensor):
        from .indirect import store as indirect_store
        return indirect_store(dst, value, mask=mask)
    if not dst.shape:
        # out[b, h] of an HBM tensor: one element, stored as a [1, 1] tile
        # (NKI's reference flash attention backward stores a partition
        # reduction's [1] result so), as nl.load loads it
        dst = NkiTensor(dst._tid, (1, 1), dst.dtype, dst._imap, dst._space, dst.name)
    ma = mask_affs(mask, dst.shape)
    d = dst._access(None, ma)
    src = _operand(b, value, dst.shape, ma)
    b.emit(Op(ir.OP_STORE, b.loc_here(), d, [src]))
    b.note_write(d)


def select(cond, x, y, dtype=None, mask=None):
    """``cond != 0 ? x : y`` element-wise."""
    b = require("nl.where")
    shape = broadcast_tiles(_shape(cond), _shape(x), _shape(y), operands=(cond, x, y))
    oshape = op_shape(shape)
    if dtype is None:
        dx, dy = _dtype_of(x), _dtype_of(y)
        dtype = (_dt.promote(dx, dy) if dx is not None and dy is not None
                 else dx or dy or _dt.float32)
    ma = mask_affs(mask, oshape)
    srcs = [_operand(b, v, oshape, ma) for v in (cond, x, y)]
    return _result(b, ir.OP_SELECT, shape, dtype, srcs, {}, ma)


def iota_tile(expr, dtype, mask=None):
    """A tile holding the values of an index expression."""
    b = require("iota")
    if isinstance(expr, IndexExpr):
        shape, aff = expr.shape, expr.aff
    else:
        shape, aff = (1, 1), Aff(int(expr))
    if len(shape) < 2:
        pad = 2 - len(shape)
        shape = (1,) * pad + tuple(shape)
        aff = aff.shift(pad)
    return _result(b, ir.OP_IOTA, shape, _dt.normalize(dtype), [], {"expr": aff},
                   mask_affs(mask, shape))


def fill(view, value, mask=None):
    """Write ``value`` into every element of ``view`` (OP_ALLOC on a view)."""
    b = require("memset")
    ma = mask_affs(mask, view.shape)
    d = view._access(None, ma)
    v = float(value)
    fields = {"fill": ir.FILL_ZERO} if v == 0.0 and not math.copysign(1, v) < 0 else \
        {"fill": ir.FILL_VALUE, "value": v}
    b.emit(Op(ir.OP_ALLOC, b.loc_here(), d, (), fields))
    b.note_write(d)


def _retarget(b, value, view, accumulate=False):
    """Make the op that produced the fresh tile ``value`` write ``view``."""
    op = value._producer
    old = op.dst.tensor
    dst = view._access(op.dst.shape, op.dst.mask)
    op.dst = dst
    for i in op.fields.get("_dst_srcs", ()):
        op.src[i] = dst         # nl.loop_reduce: the destination is an input
        b.note_read(dst)
    undo = op.fields.get("_undo")
    if undo is not None:
        undo()
    if accumulate:
        op.fields["accumulate"] = True
        t = b.tensors[dst.tensor]
        if t.pending_alloc is not None and view._space == ir.SPACE_PSUM:
            # the first access since the tile's uninitialized allocation
            # starts an accumulation group: on the device the group's
            # first matmul overwrites, so the tile starts at zero
            t.pending_alloc[0].fields["fill"] = ir.FILL_ZERO
            t.pending_alloc[0].fields["_acc_group"] = True
        b.note_read(dst)
    b.note_write(dst)
    b.drop_tensor_if_last(old)
    value._tid, value._imap, value._space = view._tid, view._imap, view._space
    value.dtype, value.name = view.dtype, view.name
    value._producer = None


_ELEMENTWISE = (ir.OP_TENSOR_TENSOR, ir.OP_ACTIVATION, ir.OP_COPY, ir.OP_SELECT,
                ir.OP_ISA_DROPOUT)


def _no_overlap(op, view):
    """True if making ``op`` write ``view`` cannot change what it reads:
    it reads ``view``'s tensor only element-wise at the very same indices."""
    dst = view._access(op.dst.shape)
    for s in op.src:
        if isinstance(s, Access) and s.tensor == dst.tensor:
            if op.kind not in _ELEMENTWISE or s.shape != dst.shape or s.index != dst.index:
                return False
    return True


_RETARGET_SPACES = {ir.OP_LOAD: (ir.SPACE_SBUF,), ir.OP_MATMUL: (ir.SPACE_PSUM,),
                    ir.OP_DMA_COPY: (ir.SPACE_SBUF,)}


def assign(view, value, mask=None):
    """``view[...] = value``."""
    b = require("tensor assignment")
    if not view.shape and not any(a.axes() for a in view._imap):
        # t[i, j] = ...: one element, written as a [1, 1] tile
        view = NkiTensor(view._tid, (1, 1), view.dtype, view._imap, view._space, view.name)
    if isinstance(value, _dynamic.DynTensor) or isinstance(view, _dynamic.DynTensor):
        from .indirect import assign as indirect_assign
        return indirect_assign(view, value, mask)
    if isinstance(value, NkiTensor):
        p = value._producer
        if (p is not None and b.is_last_op(p) and value.shape == view.shape
                and view._space in _RETARGET_SPACES.get(p.kind, _ON_CHIP) and mask is None
                and _no_overlap(p, view)):
            _retarget(b, value, view)
            return
        ma = mask_affs(mask, view.shape)
        if (not ma and p is not None and p.dst is not None and p.dst.mask
                and p.dst.shape == view.shape):
            # the fresh tile of a masked op holds only what its mask
            # selected: copy those elements only (t[...] = op(.., mask=m))
            ma = list(p.dst.mask)
        if view._space in _ON_CHIP:
            kind = ir.OP_LOAD if value._space not in _ON_CHIP else ir.OP_COPY
        elif value._space in _ON_CHIP:
            kind = ir.OP_STORE
        else:
            raise _err("cannot assign an HBM tensor to an HBM tensor; load it into"
                       " a tile and store the tile", TypeError)
        d = view._access(None, ma)
        src = _operand(b, value, view.shape, ma)
        b.emit(Op(kind, b.loc_here(), d, [src]))
        b.note_write(d)
        return
    if isinstance(value, IndexExpr):
        value = iota_tile(value, view.dtype)
        return assign(view, value, mask)
    if is_scalar(value):
        return fill(view, value, mask)
    if isinstance(value, np.ndarray):
        raise _err("cannot assign a host numpy array inside a kernel", TypeError)
    raise _err("cannot assign %r to a NKI tensor" % (value,), TypeError)


from . import dynamic as _dynamic  # noqa: E402 (it subclasses NkiTensor)
