"""nkid.nki.isa: NeuronCore instructions (``import nkid.nki.isa as nisa``).

Mirrors ``neuronxcc.nki.isa``.  ALU operations and activation functions may
be given as ``nl.*`` or ``np.*`` functions (``op=np.add``, ``op=nl.exp``).
"""

import numpy as np

from .._proto import nkir_pb2 as _ir
from ..errors import NKIError
from ..tracer import dtypes as _dt
from ..tracer import tensor as _t
from ..tracer.affine import IndexExpr
from ..tracer.builder import require as _require, loc_suffix as _loc
from . import language as nl


class engine:
    """An engine of the NeuronCore (``engine=nisa.vector_engine``)."""

    def __init__(self, name, code):
        self.name = name
        self.code = code

    def __repr__(self):
        return "nisa." + self.name


tensor_engine = engine("tensor_engine", _ir.ENGINE_TENSOR)
vector_engine = engine("vector_engine", _ir.ENGINE_VECTOR)
scalar_engine = engine("scalar_engine", _ir.ENGINE_SCALAR)
gpsimd_engine = engine("gpsimd_engine", _ir.ENGINE_GPSIMD)
unknown_engine = engine("unknown_engine", _ir.ENGINE_DEFAULT)


def _engine(e):
    if e is None:
        return _ir.ENGINE_DEFAULT
    if isinstance(e, engine):
        return e.code
    return int(e)


_ALU = {}
_ACT = {}


def _reg(table, code, *fns):
    for f in fns:
        if f is not None:
            table[f] = code


_reg(_ALU, _ir.ALU_ADD, nl.add, np.add)
_reg(_ALU, _ir.ALU_SUBTRACT, nl.subtract, np.subtract)
_reg(_ALU, _ir.ALU_MULTIPLY, nl.multiply, np.multiply)
_reg(_ALU, _ir.ALU_DIVIDE, nl.divide, np.divide, np.true_divide)
_reg(_ALU, _ir.ALU_MAXIMUM, nl.maximum, np.maximum, nl.max, np.max)
_reg(_ALU, _ir.ALU_MINIMUM, nl.minimum, np.minimum, nl.min, np.min)
_reg(_ALU, _ir.ALU_POWER, nl.power, np.power)
_reg(_ALU, _ir.ALU_GREATER, nl.greater, np.greater)
_reg(_ALU, _ir.ALU_GREATER_EQUAL, nl.greater_equal, np.greater_equal)
_reg(_ALU, _ir.ALU_LESS, nl.less, np.less)
_reg(_ALU, _ir.ALU_LESS_EQUAL, nl.less_equal, np.less_equal)
_reg(_ALU, _ir.ALU_EQUAL, nl.equal, np.equal)
_reg(_ALU, _ir.ALU_NOT_EQUAL, nl.not_equal, np.not_equal)
_reg(_ALU, _ir.ALU_LOGICAL_AND, nl.logical_and, np.logical_and)
_reg(_ALU, _ir.ALU_LOGICAL_OR, nl.logical_or, np.logical_or)
_reg(_ALU, _ir.ALU_LOGICAL_XOR, nl.logical_xor, np.logical_xor)
_reg(_ALU, _ir.ALU_BITWISE_AND, nl.bitwise_and, np.bitwise_and)
_reg(_ALU, _ir.ALU_BITWISE_OR, nl.bitwise_or, np.bitwise_or)
_reg(_ALU, _ir.ALU_BITWISE_XOR, nl.bitwise_xor, np.bitwise_xor)
_reg(_ALU, _ir.ALU_MOD, nl.fmod, np.mod, np.fmod)
_reg(_ALU, _ir.ALU_LEFT_SHIFT, nl.left_shift, np.left_shift)
_reg(_ALU, _ir.ALU_RIGHT_SHIFT, nl.right_shift, np.right_shift)
_reg(_ALU, _ir.ALU_ADD, nl.sum, np.sum)
_reg(_ALU, _ir.ALU_MULTIPLY, nl.prod, np.prod)
_reg(_ALU, _ir.ALU_MEAN, nl.mean, np.mean)
_reg(_ALU, _ir.ALU_VAR, nl.var, np.var)

_reg(_ACT, _ir.ACT_IDENTITY, nl.copy, np.copy)
_reg(_ACT, _ir.ACT_EXP, nl.exp, np.exp)
_reg(_ACT, _ir.ACT_LOG, nl.log, np.log)
_reg(_ACT, _ir.ACT_SQUARE, nl.square, np.square)
_reg(_ACT, _ir.ACT_SQRT, nl.sqrt, np.sqrt)
_reg(_ACT, _ir.ACT_RSQRT, nl.rsqrt)
_reg(_ACT, _ir.ACT_RECIPROCAL, nl.reciprocal, np.reciprocal)
_reg(_ACT, _ir.ACT_TANH, nl.tanh, np.tanh)
_reg(_ACT, _ir.ACT_SIGMOID, nl.sigmoid)
_reg(_ACT, _ir.ACT_RELU, nl.relu)
_reg(_ACT, _ir.ACT_GELU, nl.gelu)
_reg(_ACT, _ir.ACT_GELU_TANH, nl.gelu_apprx_tanh)
_reg(_ACT, _ir.ACT_SILU, nl.silu)
_reg(_ACT, _ir.ACT_NEGATIVE, nl.negative, np.negative)
_reg(_ACT, _ir.ACT_ABS, nl.abs, np.abs, np.absolute)
_reg(_ACT, _ir.ACT_SIGN, nl.sign, np.sign)
_reg(_ACT, _ir.ACT_SIN, nl.sin, np.sin)
_reg(_ACT, _ir.ACT_COS, nl.cos, np.cos)
_reg(_ACT, _ir.ACT_ERF, nl.erf)
_reg(_ACT, _ir.ACT_SOFTPLUS, nl.softplus)
_reg(_ACT, _ir.ACT_CEIL, nl.ceil, np.ceil)
_reg(_ACT, _ir.ACT_FLOOR, nl.floor, np.floor)
_reg(_ACT, _ir.ACT_TRUNC, nl.trunc, np.trunc)
_reg(_ACT, _ir.ACT_LOGICAL_NOT, nl.logical_not, np.logical_not)


def _alu(op, what="op"):
    try:
        return _ALU[op]
    except (KeyError, TypeError):
        raise NKIError("unsupported ALU operation %r for %s%s" % (op, what, _loc())) from None


def _act(op):
    try:
        return _ACT[op]
    except (KeyError, TypeError):
        raise NKIError("unsupported activation function %r%s" % (op, _loc())) from None


def _dtype(dtype, default):
    return _dt.normalize(dtype) if dtype is not None else default


# ---------------------------------------------------------------- tensor engine

def nc_matmul(stationary, moving, *, is_stationary_onezero=False, is_moving_onezero=False,
              mask=None, is_transpose=False, **kwargs):
    """PSUM fp32 [M, N] = stationary[K, M].T @ moving[K, N] on the tensor engine."""
    return _t.matmul(stationary, moving, transpose_x=True, mask=mask,
                     engine=_ir.ENGINE_TENSOR)


def nc_transpose(data, *, mask=None, dtype=None, engine=unknown_engine, **kwargs):
    """Transpose a 2-D tile: on the tensor engine (<= 128x128, result in PSUM)
    or the vector engine (<= 32x32, result in SBUF)."""
    code = _engine(engine)
    if code == _ir.ENGINE_DEFAULT:
        code = (_ir.ENGINE_VECTOR if len(data.shape) == 2 and data.shape[0] <= 32
                and data.shape[1] <= 32 else _ir.ENGINE_TENSOR)
    space = _ir.SPACE_PSUM if code == _ir.ENGINE_TENSOR else _ir.SPACE_SBUF
    return _t.transpose(data, dtype=dtype, mask=mask, engine=code, space=space)


# ---------------------------------------------------------------- vector / scalar

def tensor_tensor(data1, data2, op, *, dtype=None, mask=None, engine=unknown_engine, **kwargs):
    """Element-wise ``op(data1, data2)``; the partition counts must match."""
    return _t.tensor_tensor(data1, data2, _alu(op, "tensor_tensor"), dtype=dtype, mask=mask)


def tensor_scalar(data, op0, operand0, reverse0=False, op1=None, operand1=None,
                  reverse1=False, *, dtype=None, mask=None, engine=unknown_engine, **kwargs):
    """``(data op0 operand0) op1 operand1``; each operand a scalar or a [P, 1]
    tile; ``reverse`` swaps the operands of that op."""
    a0 = _alu(op0, "tensor_scalar")
    if op1 is None:
        x, y = (operand0, data) if reverse0 else (data, operand0)
        return _t.tensor_tensor(x, y, a0, dtype=dtype, mask=mask)
    x, y = (operand0, data) if reverse0 else (data, operand0)
    tmp = _t.tensor_tensor(x, y, a0, dtype=_dt.float32, mask=mask)
    a1 = _alu(op1, "tensor_scalar")
    x, y = (operand1, tmp) if reverse1 else (tmp, operand1)
    return _t.tensor_tensor(x, y, a1, dtype=_dtype(dtype, data.dtype), mask=mask)


def tensor_reduce(op, data, axis, *, mask=None, dtype=None, negate=False, keepdims=False,
                  **kwargs):
    """Reduce ``data`` along free ``axis`` with ``op``."""
    r = _t.reduce(data, _alu(op, "tensor_reduce"), axis, dtype=dtype, mask=mask,
                  keepdims=keepdims)
    if negate:
        r = _t.activation(r, _ir.ACT_NEGATIVE)
    return r


def activation(op, data, *, bias=None, scale=1.0, mask=None, dtype=None, **kwargs):
    """``op(data * scale + bias)`` on the scalar engine; ``scale`` a scalar or
    a [P, 1] tile, ``bias`` a [P, 1] tile."""
    return _t.activation(data, _act(op), dtype=dtype, mask=mask, scale=scale, bias=bias)


def reciprocal(data, *, dtype=None, mask=None, **kwargs):
    """Element-wise 1 / data."""
    return _t.activation(data, _ir.ACT_RECIPROCAL, dtype=dtype, mask=mask)


def tensor_copy(src, *, mask=None, dtype=None, engine=unknown_engine, **kwargs):
    """A copy of a tile on the chosen engine."""
    return _t.copy(src, dtype=dtype, mask=mask, engine=_engine(engine))


def memset(shape, value, dtype, *, mask=None, engine=unknown_engine, **kwargs):
    """A new SBUF tile of ``shape`` filled with ``value``."""
    t = nl.ndarray(shape, dtype, buffer=nl.sbuf)
    _t.fill(t, value, mask=mask)
    return t


def iota(expr, dtype, *, mask=None, **kwargs):
    """A new tile holding the values of an index expression (nl.arange/mgrid
    arithmetic)."""
    return _t.iota_tile(expr, dtype, mask=mask)


def bn_stats(data, *, mask=None, dtype=None, **kwargs):
    """Mean/variance statistics of a [P, F] tile: [P, 6 * ceil(F / 512)]."""
    b = _require("bn_stats")
    from ..tracer.builder import Op
    if len(data.shape) != 2:
        raise NKIError("bn_stats needs a 2-D tile" + _loc())
    chunks = -(-data.shape[1] // nl.tile_size.bn_stats_fmax)
    shape = (data.shape[0], 6 * chunks)
    ma = _t.mask_affs(mask, data.shape)
    src = _t._operand(b, data, None, ma)
    return _t._result(b, _ir.OP_BN_STATS, shape, _dtype(dtype, _dt.float32), [src], {}, [])


def bn_aggr(data, *, mask=None, dtype=None, **kwargs):
    """(mean, variance) [P, 2] from bn_stats results [P, 6 * n]."""
    b = _require("bn_aggr")
    shape = (data.shape[0], 2)
    ma = _t.mask_affs(mask, data.shape)
    src = _t._operand(b, data, None, ma)
    return _t._result(b, _ir.OP_BN_AGGR, shape, _dtype(dtype, _dt.float32), [src], {}, [])


__all__ = [n for n in dir() if not n.startswith("_") and n not in ("np", "nl", "IndexExpr")]
