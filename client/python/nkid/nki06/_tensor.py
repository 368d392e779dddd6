"""NKI 0.6's tensor views on the tracer's NkiTensor.

NKI 0.6's ``NkiTensor`` has view methods the legacy tile lacks
(``ap``, ``slice``, ``select``, ``permute``, ``reshape_dim``, ...) and one
indexing rule of its own: an integer on the partition dimension of an
on-chip tensor keeps it as a size-1 dimension.  The tracer's
:class:`nkid.tracer.tensor.NkiTensor` is shared by both languages, so the
methods are installed on it here (new names only: the legacy kernels never
call them), and ``__getitem__`` applies the 0.6 rule only while a 0.6
kernel is traced (``_lang.active()``).

Views are affine maps (docs/nkir.md, "Indexing"): ``.ap(pattern)`` turns
each ``[stride, count]`` pair into a term on the tensor dimension whose
row-major stride divides the stride (the outermost such); a pattern that
would carry from one dimension into the next is refused.  ``scalar_offset``
and ``vector_offset`` tiles become run-time indices (NKIR ``DynIndex``),
which ``nisa.dma_copy`` and ``nisa.tensor_copy`` take; a loop register of
``nl.fori_loop`` with constant bounds is the loop variable itself.
"""

import numpy as np

from .._proto import nkir_pb2 as _ir
from ..errors import NKIError
from ..tracer import tensor as _t
from ..tracer import dtypes as _dt
from ..tracer import dynamic as _dyn
from ..tracer.affine import Aff, IndexExpr, as_index
from ..tracer.builder import current as _current, loc_suffix as _loc
from . import _lang

NkiTensor = _t.NkiTensor
_ON_CHIP = (_ir.SPACE_SBUF, _ir.SPACE_PSUM)
_legacy_getitem = NkiTensor.__getitem__


def _err(msg, cls=NKIError):
    return cls(msg + _loc())


def _on_chip(t):
    return t._space in _ON_CHIP


def _getitem(self, key):
    if _lang.active() and _on_chip(self) and not isinstance(self, _dyn.DynTensor):
        k = key if isinstance(key, tuple) else (key,)
        if k and k[0] is not Ellipsis and k[0] is not None and not isinstance(k[0], slice):
            i = as_index(k[0])
            if i is not None and not i.shape and not isinstance(k[0], NkiTensor):
                # NKI 0.6: an integer on the partition dim keeps it (size 1)
                key = (slice(k[0], k[0] + 1),) + tuple(k[1:])
    return _legacy_getitem(self, key)


def _base_shape(t):
    b = _current()
    if b is None:
        raise _err("tensor views can only be taken inside a NKI kernel while it is traced")
    return b.tensors[t._tid].shape


def _row_strides(shape):
    out, s = [], 1
    for n in reversed(shape):
        out.append(s)
        s *= int(n)
    return list(reversed(out))


def _origin(t):
    """The view's first element, per tensor dimension (Affs without axes)."""
    return [a.subst({j: None for j in a.axes()}) for a in t._imap]


def _strides(t):
    """Element strides of the view's axes in the tensor's row-major storage."""
    rs = _row_strides(_base_shape(t))
    out = [0] * len(t.shape)
    for d, a in enumerate(t._imap):
        for j in a.axes():
            out[j] += a.t[j] * rs[d]
    return out


def _new_view(t, shape, imap):
    return NkiTensor(t._tid, tuple(int(s) for s in shape), t.dtype, imap, t._space, t.name)


def _check_dim(t, dim, what, allow0=False):
    n = len(t.shape)
    if not isinstance(dim, (int, np.integer)) or not -n <= dim < n:
        raise _err("%s: dimension %r out of range for a tensor of rank %d" % (what, dim, n),
                   IndexError)
    dim = int(dim) % n
    if dim == 0 and _on_chip(t) and not allow0:
        raise _err("%s: dimension 0 of an on-chip tensor is the partition dimension and"
                   " cannot be %s" % (what, what.split(".")[-1].rstrip("()") + "d"))
    return dim


# ---------------------------------------------------------------- views

def permute(self, dims):
    dims = tuple(int(d) for d in dims)
    if sorted(dims) != list(range(len(self.shape))):
        raise _err("permute: dims %s must be a permutation of range(%d)"
                   % (list(dims), len(self.shape)), ValueError)
    if _on_chip(self) and dims[0] != 0:
        raise _err("permute: on-chip tensors keep the partition dimension outermost"
                   " (dims[0] must be 0), got %s" % list(dims), ValueError)
    m = {old: Aff.axis(new) for new, old in enumerate(dims)}
    return _new_view(self, [self.shape[d] for d in dims], [a.subst(m) for a in self._imap])


def broadcast(self, dim, size):
    dim = _check_dim(self, dim, "broadcast")
    if self.shape[dim] != 1:
        raise _err("broadcast: dimension %d has size %d, not 1" % (dim, self.shape[dim]),
                   ValueError)
    shape = list(self.shape)
    shape[dim] = int(size)
    m = {j: (None if j == dim else Aff.axis(j)) for j in range(len(shape))}
    return _new_view(self, shape, [a.subst(m) for a in self._imap])


def expand_dim(self, dim):
    n = len(self.shape)
    if not -n - 1 <= dim <= n:
        raise _err("expand_dim: position %r out of range for rank %d" % (dim, n), IndexError)
    dim = dim % (n + 1)
    if dim == 0 and _on_chip(self):
        raise _err("expand_dim: cannot insert before the partition dimension of an on-chip"
                   " tensor", ValueError)
    m = {j: Aff.axis(j if j < dim else j + 1) for j in range(n)}
    shape = list(self.shape[:dim]) + [1] + list(self.shape[dim:])
    return _new_view(self, shape, [a.subst(m) for a in self._imap])


def squeeze_dim(self, dim):
    dim = _check_dim(self, dim, "squeeze_dim")
    if self.shape[dim] != 1:
        raise _err("squeeze_dim: dimension %d has size %d, not 1" % (dim, self.shape[dim]),
                   ValueError)
    m = {j: (None if j == dim else Aff.axis(j if j < dim else j - 1))
         for j in range(len(self.shape))}
    shape = [s for j, s in enumerate(self.shape) if j != dim]
    return _new_view(self, shape, [a.subst(m) for a in self._imap])


def reshape_dim(self, dim, shape):
    n = len(self.shape)
    dim = int(dim) % n
    shape = [int(s) for s in shape]
    if shape.count(-1) > 1:
        raise _err("reshape_dim: at most one -1 in %s" % shape, ValueError)
    if -1 in shape:
        rest = int(np.prod([s for s in shape if s != -1]))
        shape[shape.index(-1)] = self.shape[dim] // max(rest, 1)
    if int(np.prod(shape)) != self.shape[dim]:
        raise _err("reshape_dim: prod(%s) must equal dimension %d's size %d"
                   % (shape, dim, self.shape[dim]), ValueError)
    if dim == 0 and _on_chip(self) and len(shape) != 1:
        raise _err("reshape_dim: cannot split the partition dimension of an on-chip tensor",
                   ValueError)
    new = list(self.shape[:dim]) + shape + list(self.shape[dim + 1:])
    k = len(shape)
    inner = _row_strides(shape)
    m = {}
    for j in range(n):
        if j < dim:
            m[j] = Aff.axis(j)
        elif j > dim:
            m[j] = Aff.axis(j + k - 1)
        else:
            e = Aff(0)
            for i in range(k):
                e = e + Aff.axis(dim + i, inner[i] if shape[i] > 1 else 0)
            m[j] = e
    return _new_view(self, new, [a.subst(m) for a in self._imap])


def flatten_dims(self, start_dim, end_dim):
    n = len(self.shape)
    s, e = int(start_dim) % n, int(end_dim) % n
    if s > e:
        raise _err("flatten_dims: start_dim %d after end_dim %d" % (s, e), ValueError)
    if s == 0 and _on_chip(self):
        raise _err("flatten_dims: start_dim must be > 0 for an on-chip tensor", ValueError)
    return self.reshape(tuple(self.shape[:s]) + (int(np.prod(self.shape[s:e + 1])),)
                        + tuple(self.shape[e + 1:]))


def _reshape06(self, *shape, **kwargs):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    if not _lang.active():
        return _legacy_reshape(self, *shape, **kwargs)
    shape = tuple(int(s) for s in shape)
    if -1 in shape:
        rest = int(np.prod([s for s in shape if s != -1]))
        shape = tuple(self.size // max(rest, 1) if s == -1 else s for s in shape)
    if int(np.prod(shape)) != self.size:
        raise _err("reshape: cannot reshape a tensor of shape %s (%d elements) into %s (%d"
                   " elements)" % (list(self.shape), self.size, list(shape),
                                    int(np.prod(shape))), ValueError)
    if _on_chip(self) and shape and shape[0] != self.shape[0]:
        raise _err("reshape: an on-chip tensor keeps its partition dimension (shape[0] must"
                   " be %d), got %s" % (self.shape[0], list(shape)), ValueError)
    v = _merge_view(self, shape)
    if v is not None:
        return v
    return _legacy_reshape(self, shape, **kwargs)


def _merge_view(t, new):
    """``t.reshape(new)`` as an affine view when every group of old axes
    that merges into one new axis walks storage contiguously (so the merged
    index is affine); None when some group does not (or nothing merges)."""
    old = t.shape
    oi = [j for j, n in enumerate(old) if n != 1]
    ni = [j for j, n in enumerate(new) if n != 1]
    groups = []
    a = b = 0
    while a < len(oi) or b < len(ni):
        if a >= len(oi) or b >= len(ni):
            return None
        go, gn = [oi[a]], [ni[b]]
        po, pn = old[oi[a]], new[ni[b]]
        a += 1
        b += 1
        while po != pn:
            if po < pn:
                if a >= len(oi):
                    return None
                go.append(oi[a]); po *= old[oi[a]]; a += 1
            else:
                if b >= len(ni):
                    return None
                gn.append(ni[b]); pn *= new[ni[b]]; b += 1
        groups.append((go, gn))
    if all(len(go) == 1 for go, _ in groups):
        return None                     # no merge: the tracer's reshape
    imap = []
    for aff in t._imap:
        out = Aff(aff.c, {k: v for k, v in aff.t.items() if not isinstance(k, int)})
        for go, gn in groups:
            if len(go) == 1:
                c = aff.t.get(go[0], 0)
                stride = 1
                for j in reversed(gn):
                    if c:
                        out = out + Aff.axis(j, c * stride)
                    stride *= new[j]
                continue
            if len(gn) != 1:
                return None
            # the merged axis c = sum(a_i * inner_i): each a_i's coefficient
            # must be inner_i times the last one's
            last = aff.t.get(go[-1], 0)
            inner = 1
            for j in reversed(go):
                if aff.t.get(j, 0) != last * inner:
                    return None
                inner *= old[j]
            if last:
                out = out + Aff.axis(gn[0], last)
        imap.append(out)
    return _new_view(t, new, imap)


_legacy_reshape = NkiTensor.reshape


def rearrange(self, src_pattern, dst_pattern, fixed_sizes=None):
    fixed = dict(fixed_sizes or {})
    sizes = {}
    split = []
    for d, p in enumerate(src_pattern):
        names = list(p) if isinstance(p, (tuple, list)) else [p]
        known = [fixed.get(x) for x in names]
        if known.count(None) > 1:
            raise _err("rearrange: cannot infer the sizes of %s" % names, ValueError)
        rest = int(np.prod([k for k in known if k is not None])) if names else 1
        for x, k in zip(names, known):
            sizes[x] = k if k is not None else self.shape[d] // max(rest, 1)
        split.append(names)
    t = self
    off = 0
    for d, names in enumerate(split):
        if len(names) != 1:
            t = reshape_dim(t, d + off, [sizes[x] for x in names])
        off += len(names) - 1
    flat = [x for names in split for x in names]
    dst = []
    for p in dst_pattern:
        dst.append(list(p) if isinstance(p, (tuple, list)) else [p])
    order = [flat.index(x) for names in dst for x in names]
    if order != list(range(len(flat))):
        t = permute(t, order)
    shape = [int(np.prod([sizes[x] for x in names])) for names in dst]
    if list(shape) != list(t.shape):
        t = t.reshape(tuple(shape))
    return t


def slice_(self, dim, start, end, step=1):
    dim = int(dim) % len(self.shape)
    if not (0 <= start < end <= self.shape[dim]) or step < 1:
        raise _err("slice: need 0 <= start < end <= %d and step >= 1 on dimension %d, got"
                   " (%d, %d, %d)" % (self.shape[dim], dim, start, end, step), IndexError)
    key = [slice(None)] * len(self.shape)
    key[dim] = slice(start, end, step)
    return _legacy_getitem(self, tuple(key))


def select(self, dim, index):
    dim = int(dim) % len(self.shape)
    if isinstance(index, NkiTensor) or isinstance(index, VirtualRegisterLike):
        if dim == 0 and _on_chip(self):
            raise _err("select: a dynamic select on an on-chip tensor cannot target the"
                       " partition dimension", ValueError)
        pattern = [[s, n] for s, n in zip(_strides(self), self.shape)]
        pattern.pop(dim)
        return ap(self, pattern, scalar_offset=index, indirect_dim=_tensor_dim(self, dim))
    key = [slice(None)] * len(self.shape)
    i = int(index)
    if not 0 <= i < self.shape[dim]:
        raise _err("select: index %d out of range for dimension %d of size %d"
                   % (i, dim, self.shape[dim]), IndexError)
    key[dim] = i
    v = _legacy_getitem(self, tuple(key))
    if dim == 0 and _on_chip(self):
        return v
    return v


def _tensor_dim(t, axis):
    """The tensor dimension the view's axis walks (for indirect_dim)."""
    for d, a in enumerate(t._imap):
        if axis in a.t:
            return d
    return axis


def vector_select(self, dim, vector_offset):
    if int(dim) != 0:
        raise _err("vector_select: dim must be 0", ValueError)
    if _on_chip(self):
        raise _err("vector_select: only supported on HBM tensors", ValueError)
    pattern = [[s, n] for s, n in zip(_strides(self), self.shape)]
    pattern[0] = [pattern[0][0], vector_offset.shape[0]]
    return ap(self, pattern, vector_offset=vector_offset, indirect_dim=0)


def is_contiguous(self):
    st = _strides(self)
    expect = 1
    first = 1 if _on_chip(self) else 0
    for j in range(len(self.shape) - 1, first - 1, -1):
        if self.shape[j] != 1 and st[j] != expect:
            return False
        expect *= self.shape[j]
    return True


def get_pattern(self):
    return [[s, n] for s, n in zip(_strides(self), self.shape)]


def is_indirect(self):
    return isinstance(self, (_dyn.DynTensor, TiTensor))


class VirtualRegisterLike:
    """Base of nki06.isa.VirtualRegister (defined there)."""


def _as_dyn_index(x, what):
    """A scalar/vector offset: an Aff (a loop register) or a tile."""
    if isinstance(x, VirtualRegisterLike):
        return x._index(what)
    if isinstance(x, NkiTensor):
        if not _on_chip(x):
            raise _err("%s must be a tile on chip (SBUF), not in HBM" % what, ValueError)
        return x
    i = as_index(x)
    if i is not None and not i.shape:
        return i.aff
    raise _err("%s must be a tile, a register or an integer, got %r" % (what, x), TypeError)


def ap(self, pattern, offset=None, scalar_offset=None, vector_offset=None, indirect_dim=0,
       dtype=None):
    """An explicit access pattern ``[[stride, count], ...]`` over the
    tensor's storage (row-major elements), from the view's first element
    plus ``offset`` elements."""
    t = self
    if dtype is not None:
        if _dt.normalize(dtype) != t.dtype:
            t = t.view(dtype)
    if is_indirect(t):
        raise _err("ap: the view is already indirect (is_indirect()); it cannot be"
                   " re-indirected", ValueError)
    pattern = [[int(s), int(n)] for s, n in pattern]
    if not pattern:
        raise _err("ap: the pattern must have at least one [stride, count] pair", ValueError)
    shape = _base_shape(t)
    rs = _row_strides(shape)
    origin = _origin(t)
    if offset is not None and not isinstance(offset, (int, np.integer)):
        # an offset of program ids or loop variables (C_per_shard *
        # program_id): each term goes to the outermost dimension whose
        # row stride divides its coefficient, the constant as an int's
        ix = as_index(offset)
        if ix is None or ix.shape:
            raise _err("ap: offset must be an integer or an index expression, got %r"
                       % (offset,), TypeError)
        for k, c in ix.aff.t.items():
            d = next((d for d in range(len(shape)) if c % rs[d] == 0), len(shape) - 1)
            origin[d] = origin[d] + Aff(0, {k: c // rs[d]})
        offset = ix.aff.c
    if offset:
        rem = int(offset)
        for d in range(len(shape)):
            q, rem = divmod(rem, rs[d])
            origin[d] = origin[d] + Aff(q)
    if vector_offset is not None and int(indirect_dim) != 0:
        raise _err("ap: vector_offset supports indirect_dim=0 only", ValueError)
    imap = [o.copy() for o in origin]
    out_shape = []
    for j, (st, n) in enumerate(pattern):
        out_shape.append(n)
        if n == 1 or st == 0:
            continue
        if vector_offset is not None and j == 0:
            continue            # the leading stride is the base tensor's (ignored)
        if st < 0:
            raise _err("ap: negative stride %d is not supported" % st, ValueError)
        d = next((d for d in range(len(shape)) if st % rs[d] == 0), None)
        imap[d] = imap[d] + Aff.axis(j, st // rs[d])
    # a pattern that carries from one dimension into the next is no view
    for d in range(1, len(shape)):
        hi = imap[d].c + sum(c * (pattern[j][1] - 1) for j, c in imap[d].t.items()
                             if isinstance(j, int) and c > 0)
        if imap[d].is_const() or all(not isinstance(k, int) for k in imap[d].t):
            continue
        if hi >= shape[d]:
            raise _err("ap: pattern %s with offset %s walks past dimension %d (size %d) of"
                       " `%s` %s into the next one; nkid takes access patterns that stay"
                       " within each dimension" % (pattern, offset, d, shape[d],
                                                    t.name or "tensor", list(shape)),
                       NotImplementedError)
    view = _new_view(t, out_shape, imap)
    dyn = []
    idim = int(indirect_dim)
    if not 0 <= idim < len(shape):
        raise _err("ap: indirect_dim %d out of range for a tensor of rank %d"
                   % (idim, len(shape)), IndexError)
    for what, x in (("scalar_offset", scalar_offset), ("vector_offset", vector_offset)):
        if x is None:
            continue
        v = _as_dyn_index(x, what)
        if isinstance(v, Aff):
            view._imap[idim] = view._imap[idim] + v
            continue
        if what == "scalar_offset":
            if v.size != 1:
                raise _err("ap: scalar_offset must hold one element, got a tile of shape %s"
                           % list(v.shape), ValueError)
            m = {j: None for j in range(len(v.shape))}
        else:
            if v.shape[0] != out_shape[0] or int(np.prod(v.shape[1:])) != 1:
                raise _err("ap: vector_offset must have shape (%d, 1), got %s"
                           % (out_shape[0], list(v.shape)), ValueError)
            m = {j: (Aff.axis(0) if j == 0 else None) for j in range(len(v.shape))}
        dyn.append((idim, v._view(tuple(out_shape), m), 1))
    if dyn:
        d = _dyn.DynTensor(view._tid, view.shape, view.dtype, view._imap, view._space,
                           view.name)
        d._dyn = dyn
        return d
    return view


#: NkiTensor.indirect: "Available on NeuronCore-v4 (Trn3) and later."
TI_ARCH = 4


class TiTensor(NkiTensor):
    """A Tensor Indirection view (``NkiTensor.indirect``): columns ``[P,
    num_elem]`` of an on-chip tensor at offsets an index tile holds.  It
    is no affine view: an instruction that supports tensor indirection
    gathers it into a tile before it runs (OP_TI_GATHER) or scatters its
    result through it after (OP_TI_SCATTER), see ``nki06/_ti.py``."""

    __slots__ = ("_ti_base", "_ti_index", "_ti_num")

    def _why(self):
        return ("the indirect view of `%s` (NkiTensor.indirect) is Tensor Indirection: pass"
                " it as an operand of an nki.isa instruction that supports it (tensor_copy,"
                " tensor_tensor, tensor_scalar, activation, nc_matmul, ...)"
                % (self.name or "tensor"))

    def _access(self, shape=None, mask=()):
        raise NKIError(self._why() + _loc())

    def __getitem__(self, key):
        raise NKIError("cannot index " + self._why() + _loc())

    def __setitem__(self, key, value):
        raise NKIError("cannot assign to " + self._why() + _loc())


def _ti_refuse(name):
    def refuse(self, *args, **kwargs):
        raise _err("%s: an indirect view cannot be viewed again (NkiTensor.is_indirect():"
                   " the indirected dimension cannot be further sliced or selected); %s"
                   % (name, self._why()), ValueError)
    refuse.__name__ = name
    return refuse


def indirect(self, index, num_elem=None):
    """Tensor Indirection (NeuronCore-v4): the view ``[P, num_elem]`` whose
    column i is the column of ``self`` at free offset i of ``index`` (an
    SBUF tile ``[P, K]``, ``P == self.shape[0]``; offset i is ``index[i %
    G, i // G]``, G the group size of the engine that takes the view)."""
    _base_shape(self)
    _lang.needs(TI_ARCH, "NkiTensor.indirect (Tensor Indirection)")
    if is_indirect(self):
        raise _err("indirect: the view is already indirect (is_indirect()); it cannot be"
                   " re-indirected", ValueError)
    if not _on_chip(self):
        raise _err("indirect: Tensor Indirection addresses SBUF and PSUM tensors, `%s` is in"
                   " HBM (an HBM gather is nisa.dma_copy with .ap(vector_offset=...))"
                   % (self.name or "tensor"), ValueError)
    if len(self.shape) < 2:
        raise _err("indirect: the tensor must have a free dimension, got shape %s"
                   % list(self.shape), ValueError)
    if not isinstance(index, NkiTensor):
        raise _err("indirect: index must be an SBUF tensor containing free-dimension"
                   " offsets, got %r" % (index,), TypeError)
    if is_indirect(index):
        raise _err("indirect: the index cannot itself be an indirect view", ValueError)
    if index._space != _ir.SPACE_SBUF:
        raise _err("indirect: index must be an SBUF tensor containing free-dimension offsets,"
                   " `%s` is in %s" % (index.name or "index",
                                       "psum" if index._space == _ir.SPACE_PSUM else "hbm"),
                   ValueError)
    if _dt.is_float(index.dtype) or index.dtype == _dt.normalize("bool"):
        raise _err("indirect: index holds free-dimension offsets and must be an integer tile,"
                   " got %s" % _dt.name_of(index.dtype), TypeError)
    if len(index.shape) != 2 or index.shape[0] != self.shape[0]:
        raise _err("indirect: index must have shape (P, K) where P == self.shape[0] (%d), got"
                   " %s" % (self.shape[0], list(index.shape)), ValueError)
    if num_elem is None:
        num_elem = index.size
    if isinstance(num_elem, bool) or not isinstance(num_elem, (int, np.integer)) \
            or not 1 <= int(num_elem) <= index.size:
        raise _err("indirect: num_elem (the number of offsets to use) must be an integer in"
                   " [1, index.size = %d], got %r" % (index.size, num_elem), ValueError)
    t = TiTensor(self._tid, (self.shape[0], int(num_elem)), self.dtype, self._imap,
                 self._space, self.name)
    t._ti_base = self
    t._ti_index = index
    t._ti_num = int(num_elem)
    return t


def _strides_prop(self):
    return tuple(_strides(self))


def _offset_prop(self):
    """The view's first element in the tensor's row-major storage (an int,
    or an index expression when it depends on loop variables)."""
    rs = _row_strides(_base_shape(self))
    total = Aff(0)
    for d, o in enumerate(_origin(self)):
        total = total + o.scale(rs[d])
    if total.is_const():
        return total.c
    return IndexExpr((), total)


def install():
    """Put the 0.6 methods on the tracer's NkiTensor (once)."""
    if getattr(NkiTensor, "_nki06", False):
        return
    NkiTensor.__getitem__ = _getitem
    NkiTensor.reshape = _reshape06
    for name, f in (("permute", permute), ("broadcast", broadcast),
                    ("expand_dim", expand_dim), ("squeeze_dim", squeeze_dim),
                    ("reshape_dim", reshape_dim), ("flatten_dims", flatten_dims),
                    ("rearrange", rearrange), ("slice", slice_), ("select", select),
                    ("vector_select", vector_select), ("is_contiguous", is_contiguous),
                    ("get_pattern", get_pattern), ("is_indirect", is_indirect),
                    ("ap", ap), ("indirect", indirect)):
        if not hasattr(NkiTensor, name):
            setattr(NkiTensor, name, f)
    if not hasattr(NkiTensor, "strides"):
        NkiTensor.strides = property(_strides_prop)
    if not hasattr(NkiTensor, "offset"):
        NkiTensor.offset = property(_offset_prop)
    for name in ("permute", "broadcast", "expand_dim", "squeeze_dim", "reshape_dim",
                 "flatten_dims", "rearrange", "slice", "select", "vector_select", "ap",
                 "indirect", "reshape", "view", "broadcast_to", "astype", "get_pattern",
                 "is_contiguous"):
        setattr(TiTensor, name, _ti_refuse(name))
    for name in ("strides", "offset"):
        setattr(TiTensor, name, property(_ti_refuse(name)))
    NkiTensor._nki06 = True
