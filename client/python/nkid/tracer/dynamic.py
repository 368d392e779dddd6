"""The operands of ops whose views are indexed by the values of a tile
(indirect access).

``in_tensor[idx_tile, iy]`` or ``src[ix, offsets[0, i] + iy]`` index a
dimension with values only known while the kernel runs.  Such a key makes
a :class:`DynTensor` (nkitensor.py): the static view (the tile dimensions
indexed at 0) plus, per run-time indexed physical dimension, the index tile
seen in the view's own shape (broadcast as numpy broadcasts index arrays)
and the coefficient the dimension's index takes it with.  This module
splits such a view into an op's static Access and its run-time indices.

Only the instructions that NKI documents for run-time indices take a
DynTensor (``nisa.dma_copy``, ``nisa.tensor_copy_dynamic_src/dst``); they
emit NKIR ``DynIndex`` entries (proto/nkir.proto).  Anything else that
receives one raises an error naming the tensor.
"""

from ..errors import NKIError
from .builder import loc_suffix
from .emit import _operand
from .index import mask_affs, op_shape
from .nkitensor import NkiTensor, DynTensor, has_tile

__all__ = ["DynTensor", "has_tile", "split", "copy_operands"]


def split(x, shape, mask=()):
    """Operand ``x`` (NkiTensor or DynTensor) of an op whose iteration
    space is ``shape``: its static Access and its run-time indices as
    (tensor dimension, index tile view of ``shape``, coefficient)."""
    acc = NkiTensor._access(x, shape, mask)
    return acc, list(getattr(x, "_dyn", ()))


def copy_operands(b, dst, src, mask, partial):
    """The operands of a copy with run-time indices on either side
    (OP_COPY_DYNAMIC, OP_DMA_COPY): dst's and src's static Accesses, the
    index tiles as sources 1.., the DynIndex fields, and whether the op
    may leave elements of dst unwritten (partial, or dst indexed)."""
    oshape = op_shape(dst.shape)
    ma = mask_affs(mask, oshape)
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
            srcs.append(_operand(b, idx, oshape, ()))
            dyn.append({"operand": operand, "dim": dim, "src": len(srcs) - 1, "coef": coef})
    return dacc, srcs, dyn, partial or bool(ddyn)
