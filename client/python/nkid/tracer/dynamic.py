"""Views of a tensor indexed by the values of a tile (indirect access).

``in_tensor[idx_tile, iy]`` or ``src[ix, offsets[0, i] + iy]`` index a
dimension with values only known while the kernel runs.  Such a key makes
a :class:`DynTensor`: the static view (the tile dimensions indexed at 0)
plus, per run-time indexed physical dimension, the index tile seen in the
view's own shape (broadcast as numpy broadcasts index arrays) and the
coefficient the dimension's index takes it with.

Only the instructions that NKI documents for run-time indices take a
DynTensor (``nisa.dma_copy``, ``nisa.tensor_copy_dynamic_src/dst``); they
emit NKIR ``DynIndex`` entries (proto/nkir.proto).  Anything else that
receives one raises an error naming the tensor.
"""

from .._proto import nkir_pb2 as ir
from ..errors import NKIError
from .affine import Aff, IndexExpr, broadcast_shapes
from .builder import loc_suffix
from . import tensor as _t

__all__ = ["DynTensor", "has_tile", "getitem", "split", "copy_operands"]


def has_tile(key):
    """True if an index key uses a tile's values."""
    if isinstance(key, _t.NkiTensor):
        return True
    return isinstance(key, tuple) and any(isinstance(k, _t.NkiTensor) for k in key)


class DynTensor(_t.NkiTensor):
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


def getitem(t, key):
    """``t[key]`` where some key items are tiles: a DynTensor."""
    if not isinstance(key, tuple):
        key = (key,)
    if any(k is None or k is Ellipsis for k in key):
        raise NKIError("an index tile cannot be combined with None or '...' in one index"
                       + loc_suffix())
    tiles = {}
    plain = []
    for i, k in enumerate(key):
        if isinstance(k, _t.NkiTensor):
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
    shape, logical = _t._index(t.shape, tuple(plain))
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


def split(x, shape, mask=()):
    """Operand ``x`` (NkiTensor or DynTensor) of an op whose iteration
    space is ``shape``: its static Access and its run-time indices as
    (tensor dimension, index tile view of ``shape``, coefficient)."""
    acc = _t.NkiTensor._access(x, shape, mask)
    return acc, list(getattr(x, "_dyn", ()))


def copy_operands(b, dst, src, mask, partial):
    """The operands of a copy with run-time indices on either side
    (OP_COPY_DYNAMIC, OP_DMA_COPY): dst's and src's static Accesses, the
    index tiles as sources 1.., the DynIndex fields, and whether the op
    may leave elements of dst unwritten (partial, or dst indexed)."""
    oshape = _t.op_shape(dst.shape)
    ma = _t.mask_affs(mask, oshape)
    if tuple(src.shape) != tuple(dst.shape):
        free_s = free_d = 1
        for n in src.shape[1:]:
            free_s *= n
        for n in dst.shape[1:]:
            free_d *= n
        if src.shape[0] != dst.shape[0] or free_s != free_d:
            raise NKIError("shape mismatch in parameters (dst%s, src%s)%s"
                           % (list(dst.shape), list(src.shape), loc_suffix()))
        if not isinstance(src, DynTensor):
            src = src.reshape(dst.shape)
    dacc, ddyn = split(dst, oshape, ma)
    sacc, sdyn = split(src, oshape, ma)
    b.note_read(sacc)
    srcs, dyn = [sacc], []
    for operand, parts in ((0, ddyn), (1, sdyn)):
        for dim, idx, coef in parts:
            srcs.append(_t._operand(b, idx, oshape, ()))
            dyn.append({"operand": operand, "dim": dim, "src": len(srcs) - 1, "coef": coef})
    return dacc, srcs, dyn, partial or bool(ddyn)
