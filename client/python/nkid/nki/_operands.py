"""What an instruction of nki.isa does with its operands, in NKI's words
(a tile, a scalar or a tile of one value per partition, the result's
dtype), and nisa.dropout, which nl.dropout is too: nki.isa and
nki.language both take them from here.
"""

from .._proto import nkir_pb2 as _ir
from ..errors import NKIError
from ..tracer import dtypes as _dt
from ..tracer import tensor as _t
from ..tracer.affine import IndexExpr
from ..tracer.builder import require as _require, loc_suffix as _loc

__all__ = ["dropout"]


def _dtype(dtype, default):
    return _dt.normalize(dtype) if dtype is not None else default


def _tile(x, arg, what):
    """``x`` as a tile operand (an NkiTensor; an nl.arange expression
    becomes an iota tile)."""
    if isinstance(x, IndexExpr) and x.shape:
        return _t.iota_tile(x, _dt.int32)
    if not isinstance(x, _t.NkiTensor):
        raise NKIError("'%s' of '%s' must be a tile, got %r%s" % (arg, what, x, _loc()))
    return x


def _free(shape):
    n = 1
    for s in shape[1:]:
        n *= s
    return n


def _pvec(x, data, arg, what):
    """A scalar or a [P, 1] tile (one element per partition of ``data``):
    the value or the tile."""
    if _t.is_scalar(x):
        return float(x)
    if isinstance(x, IndexExpr) and x.is_const() and not x.shape:
        return float(x.aff.c)
    if not isinstance(x, _t.NkiTensor):
        raise NKIError("'%s' of '%s' must be a scalar or a tile of shape (%d, 1), got %r%s"
                       % (arg, what, data.shape[0], x, _loc()))
    if x.shape[0] != data.shape[0] or _free(x.shape) != 1:
        raise NKIError("'%s' of '%s' must be a scalar or a tile of shape (%d, 1), got a tile"
                       " of shape %s%s" % (arg, what, data.shape[0], list(x.shape), _loc()))
    return x


def dropout(data, prob, *, mask=None, dtype=None, **kwargs):
    """Replace each element of ``data`` by 0 with probability ``prob`` (a
    scalar or a [P, 1] tile) on the vector engine; kept elements keep their
    value.  The random stream is the run's (docs/nkir.md)."""
    b = _require("nisa.dropout")
    data = _tile(data, "data", "dropout")
    prob = _pvec(prob, data, "prob", "dropout")
    if isinstance(prob, float) and not 0.0 <= prob <= 1.0:
        raise NKIError("prob of 'dropout' must be between 0.0 and 1.0, got %g%s"
                       % (prob, _loc()))
    oshape = _t.op_shape(data.shape)
    ma = _t.mask_affs(mask, oshape)
    srcs = [_t._operand(b, data, oshape, ma), _t._operand(b, prob, oshape, ma)]
    return _t._result(b, _ir.OP_ISA_DROPOUT, data.shape, _dtype(dtype, data.dtype), srcs,
                      {"engine": _ir.ENGINE_VECTOR}, ma)
