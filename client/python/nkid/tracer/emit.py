"""The primitives of emitting an op: an operand's Access (read noted) or
scalar, the iteration shape of a result, a fresh result tile with its
producing op, an index expression as an iota tile, and a fill.
"""

import math

from .._proto import nkir_pb2 as ir
from . import dtypes as _dt
from .affine import Aff, IndexExpr
from .builder import Op, require
from .index import mask_affs, op_shape
from .nkitensor import NkiTensor, _err, _guess_name, is_scalar, new_tile

__all__ = ["iota_tile", "fill"]


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


def _result(b, kind, shape, dtype, srcs, fields, mask, space=ir.SPACE_SBUF, loc=None):
    loc = loc or b.loc_here()
    t = new_tile(shape, dtype, space, _guess_name(), loc=loc)
    dst = t._access(op_shape(shape), mask)
    op = b.emit(Op(kind, loc, dst, srcs, fields))
    t._producer = op
    return t


def _as_tile(x):
    if isinstance(x, IndexExpr):
        return iota_tile(x, _dt.int32)
    raise _err("expected a tile, got %r" % (x,), TypeError)


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
