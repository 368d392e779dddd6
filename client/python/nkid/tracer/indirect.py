"""Indirect (dynamic) indexing: a tensor indexed by the values of a tile.

``data[idx_tile, i_f]`` (``idx_tile`` an integer SBUF tile of shape [P, 1])
selects, for partition ``p`` of the access, row ``idx_tile[p, 0]`` of
``data``.  Indexing a tensor with a tile makes a view that remembers the
indexed dimension and the index tile (:class:`Indirect`); ``nl.load``,
``nl.store``, ``nl.atomic_rmw`` and assignments turn it into the NKIR ops
``OP_LOAD_INDIRECT``, ``OP_STORE_INDIRECT`` and ``OP_ATOMIC_RMW``, whose
indexed dimension the executor checks at run time (the op's out-of-bounds
mode: by default the run fails naming the index and the tensor).  Every
other use of such a view is NKI's
``err_indirect_indices_are_not_supported_with_nki_api``.

:func:`copy` is the general form (``nisa.dma_copy`` with its ``oob_mode``
and ``dst_rmw_op``).
"""

from .._proto import nkir_pb2 as ir
from ..errors import NKIError, NKISyntaxError
from . import dtypes as _dt
from .affine import Aff, IndexExpr
from .builder import Op, require, loc_suffix

__all__ = ["Indirect", "view", "load", "store", "assign", "atomic_rmw", "copy",
           "not_supported", "OOB_ERROR", "OOB_SKIP"]

OOB_ERROR = ir.OOB_ERROR
OOB_SKIP = ir.OOB_SKIP
_HBM = (ir.SPACE_HBM, ir.SPACE_SHARED_HBM)
_ON_CHIP = (ir.SPACE_SBUF, ir.SPACE_PSUM)


class Indirect:
    """The dimension (of the tensor) a view indexes at run time, and the
    index tile (broadcast over the view's shape)."""

    __slots__ = ("dim", "index")

    def __init__(self, dim, index):
        self.dim = dim
        self.index = index

    def __repr__(self):
        return "Indirect(dim=%d, index=%r)" % (self.dim, self.index)


def _err(msg, cls=NKIError):
    return cls(msg + loc_suffix())


def not_supported():
    return _err("The API does not allow using tiles / tensors with indirect indices."
                " (err_indirect_indices_are_not_supported_with_nki_api)", NKISyntaxError)


def _not_native():
    return _err("If indices are dynamic (i.e. known only at runtime), copying indirect"
                " memory references is not natively supported; use"
                " nisa.tensor_copy_dynamic_src or nisa.tensor_copy_dynamic_dst."
                " (err_copy_dynamic_indirect_indices_not_natively_supported)",
                NKISyntaxError)


def _free_dim():
    return _err("Dynamic indexing for load/store only supports the indirect indexing to"
                " be on the partition or block dimension."
                " (err_indirect_indices_free_dim)", NKISyntaxError)


def _tensor_dim(key, pos, rank):
    """The tensor dimension that key[pos] indexes (ellipsis and None aware)."""
    before = key[:pos]
    if any(k is Ellipsis for k in before):
        after = [k for k in key[pos + 1:] if k is not None]
        return rank - len(after) - 1
    return sum(1 for k in before if k is not None)


def view(t, key):
    """``t[key]`` where key holds one integer tile: a view of ``t`` with
    that dimension indexed at run time."""
    from .tensor import NkiTensor, _index
    if not isinstance(key, tuple):
        key = (key,)
    tiles = [i for i, k in enumerate(key) if isinstance(k, NkiTensor)]
    if len(tiles) != 1:
        raise _err("only one dimension of a tensor can be indexed by a tile, got %d"
                   % len(tiles), IndexError)
    pos = tiles[0]
    tile = key[pos]
    if tile._indirect is not None:
        raise not_supported()
    if tile._space not in _ON_CHIP:
        raise _err("indirect indices must be a tile on chip (load `%s` into SBUF first)"
                   % (tile.name or "indices"), TypeError)
    if not (tile.dtype != _dt.bool_ and not _dt.is_float(tile.dtype)):
        raise _err("indirect indices must be an integer tile, got %s `%s`"
                   % (_dt.name_of(tile.dtype), tile.name or "indices"), TypeError)
    tshape = tuple(tile.shape) if len(tile.shape) > 1 else (tile.shape[0], 1)
    if any(s != 1 for s in tshape[1:]):
        raise _free_dim()
    others = [k for i, k in enumerate(key)
              if i != pos and isinstance(k, IndexExpr) and k.shape]
    # alone, the tile indexes by partition: [P] (numpy would make [P, 1])
    placeholder = IndexExpr(tshape if others else (tshape[0],), Aff(0))
    shape, logical = _index(t.shape, key[:pos] + (placeholder,) + key[pos + 1:])
    d = _tensor_dim(key, pos, len(t.shape))
    phys = [p for p, a in enumerate(t._imap) if d in a.t]
    if len(phys) != 1 or t._imap[phys[0]].t[d] != 1:
        raise _err("indirect indexing of a reshaped or broadcast view of `%s` is not"
                   " supported" % (t.name or "tensor"), IndexError)
    v = t._view(shape, dict(enumerate(logical)))
    v._indirect = Indirect(phys[0], tile)
    return v


def _plain(v):
    """The view without its indirect dimension (for its static access)."""
    from .tensor import NkiTensor
    return NkiTensor(v._tid, v.shape, v.dtype, v._imap, v._space, v.name)


def _index_access(b, v, oshape, mask):
    acc = v._indirect.index._access(oshape, mask)
    b.note_read(acc)
    return acc


def load(src, dtype=None, mask=None, oob=OOB_ERROR):
    """``nl.load(data[idx_tile, ...])``: a new SBUF tile gathered from HBM."""
    from .tensor import _result, mask_affs, op_shape
    b = require("nl.load")
    if src._space not in _HBM:
        raise _not_native()
    oshape = op_shape(src.shape)
    ma = mask_affs(mask, oshape)
    s = _plain(src)._access(oshape, ma)
    b.note_read(s)
    idx = _index_access(b, src, oshape, ma)
    return _result(b, ir.OP_LOAD_INDIRECT, src.shape,
                   _dt.normalize(dtype) if dtype else src.dtype, [s, idx],
                   {"indirect": (src._indirect.dim, oob)}, ma)


def _scatter(kind, dst, value, mask, oob, what):
    from .tensor import _operand, mask_affs, op_shape
    b = require(what)
    if dst._space not in _HBM:
        raise _not_native()
    oshape = op_shape(dst.shape)
    ma = mask_affs(mask, oshape)
    d = _plain(dst)._access(oshape, ma)
    src = _operand(b, value, oshape, ma)
    idx = _index_access(b, dst, oshape, ma)
    fields = {"indirect": (dst._indirect.dim, oob)}
    if kind == ir.OP_ATOMIC_RMW:
        fields["alu"] = ir.ALU_ADD
        b.note_read(d)
    b.emit(Op(kind, b.loc_here(), d, [src, idx], fields))
    b.note_write(d)


def store(dst, value, mask=None, oob=OOB_ERROR):
    """``nl.store(data[idx_tile, ...], value)``: scatter a tile into HBM."""
    _scatter(ir.OP_STORE_INDIRECT, dst, value, mask, oob, "nl.store")


def atomic_rmw(dst, value, mask=None):
    """``dst = dst + value`` on HBM, dst indexed by a tile."""
    if getattr(dst, "_indirect", None) is None:
        raise _err("atomic_rmw only supports indirect dynamic indexing of its"
                   " destination (index an HBM tensor with an integer tile)", NKIError)
    _scatter(ir.OP_ATOMIC_RMW, dst, value, mask, OOB_ERROR, "nl.atomic_rmw")


def assign(view_, value, mask=None):
    """``tile[...] = data[idx_tile, ...]`` (a load) or ``data[idx_tile, ...]
    = tile`` (a store)."""
    if value._indirect is not None and view_._indirect is None:
        return copy(view_, value, mask=mask)
    if view_._indirect is not None and value._indirect is None:
        return copy(view_, value, mask=mask)
    raise _not_native()


def copy(dst, src, mask=None, oob=OOB_ERROR, rmw=False):
    """A DMA between ``src`` and ``dst`` where one side is indexed by a tile
    (``nisa.dma_copy``): a gather into an SBUF ``dst`` or a scatter (or an
    add, ``rmw``) into an HBM ``dst``, each with its out-of-bounds mode."""
    from .tensor import mask_affs, op_shape, NkiTensor
    b = require("indirect copy")
    if getattr(dst, "_indirect", None) is not None:
        if rmw and oob != OOB_ERROR:
            raise _err("If dst_rmw_op is specified, only oob_mode=oob_mode.error is"
                       " allowed", ValueError)
        if isinstance(src, NkiTensor) and src._indirect is not None:
            raise _not_native()
        return _scatter(ir.OP_ATOMIC_RMW if rmw else ir.OP_STORE_INDIRECT, dst, src,
                        mask, oob, "dma_copy")
    if not isinstance(src, NkiTensor) or src._indirect is None:
        raise _err("neither side of the copy is indexed by a tile", ValueError)
    if rmw:
        raise _err("dst_rmw_op needs an indirectly indexed destination in HBM", ValueError)
    if src._space not in _HBM or dst._space not in (ir.SPACE_SBUF,):
        raise _not_native()
    oshape = op_shape(dst.shape)
    if op_shape(src.shape) != oshape:
        raise _err("shape mismatch in parameters (dst%s, src%s) of 'load'"
                   % (list(dst.shape), list(src.shape)), ValueError)
    ma = mask_affs(mask, oshape)
    s = _plain(src)._access(oshape, ma)
    b.note_read(s)
    idx = _index_access(b, src, oshape, ma)
    d = dst._access(oshape, ma)
    if oob == OOB_SKIP:
        b.note_read(d)          # what it skips keeps its values
    b.emit(Op(ir.OP_LOAD_INDIRECT, b.loc_here(), d, [s, idx],
              {"indirect": (src._indirect.dim, oob)}))
    b.note_write(d)
