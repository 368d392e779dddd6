"""Traced tensors and tiles: the values a kernel computes with.

An :class:`NkiTensor` names one NKIR tensor (a kernel argument or an HBM
buffer, an SBUF or PSUM tile) through a *view*: a logical ``shape`` and, per
physical dimension of the tensor, an affine index over the view's axes.
Indexing a tensor makes a new view and emits nothing; a key holding a tile
makes a :class:`DynTensor`, a view with run-time (indirect) indices.

What an operator, an item assignment, ``astype`` or a reshape that merges
HBM dimensions emits is not this module's: those emitters create NkiTensors,
so they sit above it (tracer.tensor, tracer.merge) and fill the table
:data:`emitters` when imported.  The tracer package imports them, so the
table is full whenever a kernel is traced.
"""

import linecache
import numbers
import re

import numpy as np

from .._proto import nkir_pb2 as ir
from ..errors import NKIError, NKISyntaxError
from . import dtypes as _dt
from .affine import Aff, IndexExpr, Predicate, broadcast_shapes
from .builder import Access, Op, caller_loc, full_access, loc_suffix, require
from .index import _align_map, _index, _reshape_map, mask_affs, op_shape

__all__ = ["NkiTensor", "DynTensor", "Buffer", "ParDim", "sbuf", "psum", "hbm",
           "shared_hbm", "private_hbm", "new_tile", "new_param", "new_hbm",
           "is_tensor", "is_scalar", "has_tile", "emitters"]


class Emitters:
    """The ops NkiTensor's methods stand for, filled in by the modules that
    emit them: ``tensor_tensor``, ``activation``, ``copy``, ``assign`` and
    ``inplace`` by tracer.tensor, ``merged_view`` by tracer.merge."""

    __slots__ = ("tensor_tensor", "activation", "copy", "assign", "inplace",
                 "merged_view")


emitters = Emitters()


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
        if has_tile(key):                   # t[idx_tile, ...]: indirect
            return dyn_getitem(self, key)
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
        emitters.assign(view, value)

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
            return emitters.merged_view(self, shape, e)
        return self._view(shape, m)

    def broadcast_to(self, shape):
        """A view broadcasting size-1 dimensions (also the partition dim)."""
        shape = tuple(int(s) for s in shape)
        return self._view(shape, _align_map(self.shape, shape))

    def astype(self, dtype):
        return emitters.copy(self, dtype=dtype)

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
            return self._hbm_view(dt)
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

    def _hbm_view(self, dt):
        """A whole HBM tensor's bytes read as ``dt`` (numpy's ``view``):
        a tensor of its own, NKIR Tensor.view_of, sharing the memory; both
        read-only (the executor refuses writes to either)."""
        b = require("tensor.view")
        t = b.tensors[self._tid]
        whole = (tuple(self.shape) == tuple(t.shape)
                 and all(repr(a) == repr(Aff.axis(j)) for j, a in enumerate(self._imap)))
        if not whole:
            raise _err("tensor.view(%s) / .ap(dtype=%s) of an HBM tensor: nkid views whole"
                       " tensors only, `%s` is a slice or reshape of shape %s"
                       % (_dt.name_of(dt), _dt.name_of(dt), self.name, list(self.shape)),
                       NotImplementedError)
        nbytes = self.shape[-1] * _dt.itemsize(self.dtype)
        if nbytes % _dt.itemsize(dt):
            raise _err("cannot view a %s tensor of shape %s as %s: the last dimension's %d"
                       " bytes are not a multiple of %d"
                       % (_dt.name_of(self.dtype), list(self.shape), _dt.name_of(dt),
                          nbytes, _dt.itemsize(dt)), ValueError)
        shape = tuple(self.shape[:-1]) + (nbytes // _dt.itemsize(dt),)
        root = t.view_of if t.view_of is not None else self._tid
        v = new_hbm(shape, dt, self._space, _guess_name() or self.name)
        b.tensors[v._tid].view_of = root
        return v

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
        return emitters.tensor_tensor(self, o, ir.ALU_ADD)

    def __radd__(self, o):
        return emitters.tensor_tensor(o, self, ir.ALU_ADD)

    def __sub__(self, o):
        return emitters.tensor_tensor(self, o, ir.ALU_SUBTRACT)

    def __rsub__(self, o):
        return emitters.tensor_tensor(o, self, ir.ALU_SUBTRACT)

    def __mul__(self, o):
        return emitters.tensor_tensor(self, o, ir.ALU_MULTIPLY)

    def __rmul__(self, o):
        return emitters.tensor_tensor(o, self, ir.ALU_MULTIPLY)

    def __truediv__(self, o):
        return emitters.tensor_tensor(self, o, ir.ALU_DIVIDE)

    def __rtruediv__(self, o):
        return emitters.tensor_tensor(o, self, ir.ALU_DIVIDE)

    def __mod__(self, o):
        return emitters.tensor_tensor(self, o, ir.ALU_MOD)

    def __rmod__(self, o):
        return emitters.tensor_tensor(o, self, ir.ALU_MOD)

    def __pow__(self, o):
        return emitters.tensor_tensor(self, o, ir.ALU_POWER)

    def __rpow__(self, o):
        return emitters.tensor_tensor(o, self, ir.ALU_POWER)

    def __neg__(self):
        return emitters.activation(self, ir.ACT_NEGATIVE)

    def __pos__(self):
        return self

    def __abs__(self):
        return emitters.activation(self, ir.ACT_ABS)

    def __invert__(self):
        if _dt.is_float(self.dtype) or self.dtype == _dt.bool_:
            return emitters.activation(self, ir.ACT_LOGICAL_NOT)
        return emitters.tensor_tensor(self, 0, ir.ALU_INVERT)    # numpy's ~ on integers

    def _bitwise(self, o, logical, bitwise, reverse=False):
        alu = bitwise if not _dt.is_float(self.dtype) and self.dtype != _dt.bool_ else logical
        return emitters.tensor_tensor(o, self, alu) if reverse else emitters.tensor_tensor(self, o, alu)

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
        return emitters.tensor_tensor(self, o, ir.ALU_LEFT_SHIFT)

    def __rshift__(self, o):
        return emitters.tensor_tensor(self, o, ir.ALU_RIGHT_SHIFT)

    def __lt__(self, o):
        return emitters.tensor_tensor(self, o, ir.ALU_LESS)

    def __le__(self, o):
        return emitters.tensor_tensor(self, o, ir.ALU_LESS_EQUAL)

    def __gt__(self, o):
        return emitters.tensor_tensor(self, o, ir.ALU_GREATER)

    def __ge__(self, o):
        return emitters.tensor_tensor(self, o, ir.ALU_GREATER_EQUAL)

    # a tensor against None is Python's comparison, not an op: NKI 0.6's
    # NkiTensor has no comparison operators and kernels test an optional
    # tensor argument with `t != None` (nki-library's router_topk, ...)
    def __eq__(self, o):
        if o is None:
            return False
        return emitters.tensor_tensor(self, o, ir.ALU_EQUAL)

    def __ne__(self, o):
        if o is None:
            return True
        return emitters.tensor_tensor(self, o, ir.ALU_NOT_EQUAL)

    __hash__ = object.__hash__

    # -- in place: x += y writes x (and psum += matmul accumulates)
    def __iadd__(self, o):
        return emitters.inplace(self, o, ir.ALU_ADD)

    def __isub__(self, o):
        return emitters.inplace(self, o, ir.ALU_SUBTRACT)

    def __imul__(self, o):
        return emitters.inplace(self, o, ir.ALU_MULTIPLY)

    def __itruediv__(self, o):
        return emitters.inplace(self, o, ir.ALU_DIVIDE)


def has_tile(key):
    """True if an index key uses a tile's values."""
    if isinstance(key, NkiTensor):
        return True
    return isinstance(key, tuple) and any(isinstance(k, NkiTensor) for k in key)


class DynTensor(NkiTensor):
    """A view of a tensor with run-time (indirect) indices."""

    __slots__ = ("_dyn",)

    def _why(self):
        dims = ", ".join(str(d) for d, _, _ in self._dyn)
        return ("the view of `%s` indexed by a tile (dimension %s) is an indirect access;"
                " pass it to nl.load, nl.store, nl.atomic_rmw, nisa.dma_copy or"
                " nisa.tensor_copy_dynamic_src/dst (The API does not allow using tiles /"
                " tensors with indirect indices."
                " err_indirect_indices_are_not_supported_with_nki_api)"
                % (self.name or "tensor", dims))

    def _access(self, shape=None, mask=()):
        raise NKIError(self._why() + loc_suffix())

    def __getitem__(self, key):
        raise NKIError("cannot index again " + self._why() + loc_suffix())

    def reshape(self, *shape, **_):
        raise NKIError("cannot reshape " + self._why() + loc_suffix())

    def broadcast_to(self, shape):
        raise NKIError("cannot broadcast " + self._why() + loc_suffix())


def _align(idx, shape, rank_adv):
    """The index tile ``idx`` seen in the view's ``shape``: numpy aligns
    index arrays from the right within the first ``rank_adv`` axes."""
    off = rank_adv - len(idx.shape)
    m = {}
    for j, n in enumerate(idx.shape):
        a = off + j
        if n == shape[a]:
            m[j] = Aff.axis(a)
        elif n == 1:
            m[j] = None
        else:
            raise NKIError("index tile of shape %s cannot be broadcast to %s%s"
                           % (list(idx.shape), list(shape), loc_suffix()))
    return idx._view(tuple(shape), m)


def dyn_getitem(t, key):
    """``t[key]`` where some key items are tiles: a DynTensor."""
    if not isinstance(key, tuple):
        key = (key,)
    if any(k is None or k is Ellipsis for k in key):
        raise NKIError("an index tile cannot be combined with None or '...' in one index"
                       + loc_suffix())
    tiles = {}
    plain = []
    for i, k in enumerate(key):
        if isinstance(k, NkiTensor):
            if isinstance(k, DynTensor):
                raise NKIError("an index tile cannot itself be indexed by a tile"
                               + loc_suffix())
            if k._space not in (ir.SPACE_SBUF, ir.SPACE_PSUM):
                raise NKIError("index tile `%s` must be on chip (SBUF), not in HBM;"
                               " load it with nl.load first%s" % (k.name or "tile", loc_suffix()))
            tiles[i] = k
            plain.append(IndexExpr(tuple(k.shape), Aff(0)))
        else:
            plain.append(k)
    shape, logical = _index(t.shape, tuple(plain))
    rank_adv = len(broadcast_shapes(*[k.shape for k in plain
                                      if isinstance(k, IndexExpr)]))
    base = t._view(shape, dict(enumerate(logical)))
    dyn = []
    for i, k in tiles.items():
        idx = _align(k, shape, rank_adv)
        for p, a in enumerate(t._imap):
            coef = a.t.get(i, 0)
            if coef:
                dyn.append((p, idx, coef))
    d = DynTensor(base._tid, base.shape, base.dtype, base._imap, base._space, base.name)
    d._dyn = dyn
    return d


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
