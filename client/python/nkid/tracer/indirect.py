"""nl.load, nl.store, assignments and nl.atomic_rmw of a tensor indexed by
the values of a tile (``data[idx_tile, i_f]``, a
:class:`~nkid.tracer.dynamic.DynTensor`): one NKIR ``OP_DMA_COPY`` with
run-time indices (``Op.dyn``), the op ``nisa.dma_copy`` makes too.  An
index out of bounds fails the run with NKI's IndexError naming the index
and the tensor (``nisa.dma_copy``'s ``oob_mode.skip`` skips it instead).

NKI's rules for these (``nl.load`` and ``nl.store`` docs, nki.errors):
the indices are an integer tile on chip whose values do not vary along
the free axes of the access (``err_indirect_indices_free_dim``), the HBM
side is the indexed one (an indexed SBUF tile needs
``nisa.tensor_copy_dynamic_src/dst``:
``err_copy_dynamic_indirect_indices_not_natively_supported``), and
atomic_rmw adds (``np.add``) into an indexed HBM tensor.
"""

from .._proto import nkir_pb2 as ir
from ..errors import NKIError, NKISyntaxError
from . import dtypes as _dt
from . import dynamic as _dyn
from .builder import Op, require, loc_suffix
from .emit import fill
from .nkitensor import NkiTensor, _guess_name, is_scalar, new_tile

__all__ = ["load", "store", "assign", "atomic_rmw"]

_HBM = (ir.SPACE_HBM, ir.SPACE_SHARED_HBM)


def _err(msg, cls=NKIError):
    return cls(msg + loc_suffix())


def _not_native():
    return _err("If indices are dynamic (i.e. known only at runtime), copying indirect"
                " memory references is not natively supported; use"
                " nisa.tensor_copy_dynamic_src or nisa.tensor_copy_dynamic_dst."
                " (err_copy_dynamic_indirect_indices_not_natively_supported)",
                NKISyntaxError)


def _check(v):
    """v (a DynTensor) may be loaded or stored: HBM, integer indices that
    vary along the partitions only."""
    if v._space not in _HBM:
        raise _not_native()
    for _, idx, _ in v._dyn:
        if _dt.is_float(idx.dtype) or idx.dtype == _dt.bool_:
            raise _err("indirect indices must be an integer tile, got %s `%s`"
                       % (_dt.name_of(idx.dtype), idx.name or "indices"), TypeError)
        if any(k for a in idx._imap for k in a.axes() if k != 0):
            raise _err("Dynamic indexing for load/store only supports the indirect"
                       " indexing to be on the partition or block dimension."
                       " (err_indirect_indices_free_dim)", NKISyntaxError)


def _dma(b, dst, src, mask, rmw=False):
    dacc, srcs, dyn, partial = _dyn.copy_operands(b, dst, src, mask, rmw)
    fields = {"alu": ir.ALU_ADD if rmw else ir.ALU_INVALID, "dyn": dyn}
    op = b.emit(Op(ir.OP_DMA_COPY, b.loc_here(), dacc, srcs, fields))
    if partial or dacc.mask:
        b.note_read(dacc)               # what it does not reach keeps its values
        b.tensors[dacc.tensor].written = True
    else:
        b.note_write(dacc)
    return op


def load(src, dtype=None, mask=None):
    """``nl.load(data[idx_tile, ...])``: a new SBUF tile gathered from HBM."""
    b = require("nl.load")
    _check(src)
    loc = b.loc_here()
    out = new_tile(src.shape, _dt.normalize(dtype) if dtype else src.dtype, ir.SPACE_SBUF,
                   _guess_name(), loc=loc)
    out._producer = _dma(b, out, src, mask)     # `t[...] = nl.load(...)` writes t
    return out


def store(dst, value, mask=None):
    """``nl.store(data[idx_tile, ...], value)``: a tile scattered into HBM."""
    b = require("nl.store")
    _check(dst)
    _dma(b, dst, _tile(b, value, dst), mask)


def atomic_rmw(dst, value, mask=None):
    """``dst = dst + value`` in HBM, dst indexed by a tile."""
    b = require("nl.atomic_rmw")
    if not isinstance(dst, _dyn.DynTensor):
        raise _err("atomic_rmw only supports indirect dynamic indexing of its destination"
                   " (index an HBM tensor with an integer tile)")
    _check(dst)
    _dma(b, dst, _tile(b, value, dst), mask, rmw=True)


def assign(view, value, mask=None):
    """``tile[...] = data[idx_tile, ...]`` (a load) or ``data[idx_tile, ...]
    = tile`` (a store)."""
    b = require("tensor assignment")
    for v in (view, value):
        if isinstance(v, _dyn.DynTensor):
            _check(v)
    if isinstance(view, _dyn.DynTensor) and isinstance(value, _dyn.DynTensor):
        raise _not_native()
    _dma(b, view, _tile(b, value, view), mask)


def _tile(b, value, like):
    """value as a tile (a scalar filled into one of like's shape)."""
    if isinstance(value, NkiTensor):
        return value
    if is_scalar(value):
        t = new_tile(like.shape, like.dtype, ir.SPACE_SBUF)
        fill(t, value)
        return t
    raise _err("cannot store %r through an indirect index" % (value,), TypeError)
