"""nkid.nki.isa: NeuronCore instructions (``import nkid.nki.isa as nisa``).

Mirrors ``neuronxcc.nki.isa`` as NKI's API reference lists it
(aws-neuron-sdk@8a38e733, general/nki/api/nki.isa.rst): every instruction
with its documented arguments, defaults, dtypes, engines and limits.  ALU
operations and activation functions may be given as ``nl.*`` or ``np.*``
functions (``op=np.add``, ``op=nl.exp``).

The engines' accumulator registers (``reduce_cmd``, ``reduce_res``) are
modelled: one fp32 register per partition on the Vector and on the Scalar
engine, kept between instructions of a program (docs/nkir.md).
"""

from enum import IntEnum

import numpy as np

from .._proto import nkir_pb2 as _ir
from ..errors import NKIError
from ..tracer import dtypes as _dt
from ..tracer import tensor as _t
from ..tracer import dynamic as _dyn
from ..tracer.affine import Aff, IndexExpr, Predicate
from ..tracer.builder import require as _require, current as _current, loc_suffix as _loc, Op
from . import language as nl
from ._operands import _dtype, _free, _pvec, _tile, dropout


# ---------------------------------------------------------------- enums

class engine(IntEnum):
    """Neuron Device engines."""

    tensor = 1
    vector = 5
    scalar = 2
    gpsimd = 3
    sync = 6
    unknown = 0


tensor_engine = engine.tensor
vector_engine = engine.vector
scalar_engine = engine.scalar
gpsimd_engine = engine.gpsimd
unknown_engine = engine.unknown
#: The DMA engines (``dma_copy``, ``dma_transpose``); no compute engine.
dma_engine = engine.sync


class reduce_cmd(IntEnum):
    """Engine register reduce commands."""

    idle = 0            #: not using the accumulator registers
    reset = 1           #: reset the registers to their initial state
    reset_reduce = 3    #: reset, then accumulate this instruction's results
    reduce = 2          #: keep accumulating over the registers' values


class dge_mode(IntEnum):
    """Neuron Descriptor Generation Engine mode."""

    none = 0            #: not using DGE
    swdge = 1           #: software DGE
    hwdge = 2           #: hardware DGE (NeuronCore-v3+)
    unknown = 3         #: let the compiler decide


class oob_mode(IntEnum):
    """Out-of-bounds handling of an indirect DMA (``dma_copy``)."""

    error = 0
    skip = 1


class nc_version(IntEnum):
    """NeuronCore version."""

    gen2 = 2            #: Trn1/Inf2 target
    gen3 = 3            #: Trn2 target


class _FP32:
    """FP32 constants (``nisa.fp32.min``)."""

    #: the FP32 bit pattern 0xff7fffff: the minimum (most negative) FP32 value
    min = float(np.finfo(np.float32).min)

    def __repr__(self):
        return "nisa.fp32"


fp32 = _FP32()

# The enums under other names, for functions whose parameters shadow them.
_ReduceCmd, _DgeMode, _OobMode = reduce_cmd, dge_mode, oob_mode


def get_nc_version():
    """The ``nc_version`` of the current target context: gen3 for a kernel
    traced with ``platform_target='trn2'`` (or later), else gen2 (trn1/inf2,
    nkid's default target)."""
    b = _current()
    target = getattr(b, "target", "") or ""
    return nc_version.gen3 if target in ("trn2", "trn3") else nc_version.gen2


_ENGINE_IR = {engine.tensor: _ir.ENGINE_TENSOR, engine.vector: _ir.ENGINE_VECTOR,
              engine.scalar: _ir.ENGINE_SCALAR, engine.gpsimd: _ir.ENGINE_GPSIMD}
_DGE_IR = {dge_mode.none: _ir.DGE_NONE, dge_mode.swdge: _ir.DGE_SWDGE,
           dge_mode.hwdge: _ir.DGE_HWDGE, dge_mode.unknown: _ir.DGE_UNKNOWN}
_RCMD_IR = {reduce_cmd.idle: _ir.RCMD_IDLE, reduce_cmd.reset: _ir.RCMD_RESET,
            reduce_cmd.reduce: _ir.RCMD_REDUCE, reduce_cmd.reset_reduce: _ir.RCMD_RESET_REDUCE}


def _member(cls, v, what):
    try:
        return cls(v)
    except (ValueError, TypeError):
        raise NKIError("%s must be a member of nisa.%s, got %r%s"
                       % (what, cls.__name__, v, _loc())) from None


def _engine(e):
    if e is None:
        return _ir.ENGINE_DEFAULT
    return _ENGINE_IR.get(_member(engine, e, "engine"), _ir.ENGINE_DEFAULT)


# ---------------------------------------------------------------- operators

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
_reg(_ALU, _ir.ALU_MAXIMUM, nl.maximum, np.maximum, nl.max, np.max, np.amax)
_reg(_ALU, _ir.ALU_MINIMUM, nl.minimum, np.minimum, nl.min, np.min, np.amin)
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
# the unary operators of NKI's ALU table (nki.api.shared, "Supported Math
# Operators"): applied to the operator's left-hand input, the other ignored
_reg(_ALU, _ir.ALU_INVERT, nl.invert, np.invert, np.bitwise_not)
_reg(_ALU, _ir.ALU_LOGICAL_NOT, nl.logical_not, np.logical_not)
_reg(_ALU, _ir.ALU_RSQRT, nl.rsqrt)
_reg(_ALU, _ir.ALU_RECIPROCAL, nl.reciprocal, np.reciprocal)
_reg(_ALU, _ir.ALU_ABS, nl.abs, np.abs, np.absolute)
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


# ---------------------------------------------------------------- helpers

def _same_elems(x, data, arg, what):
    """``x`` has ``data``'s partitions and elements per partition."""
    if x.shape[0] != data.shape[0] or _free(x.shape) != _free(data.shape):
        raise NKIError("'%s' %s of '%s' must have the same number of partitions and"
                       " elements per partition as %s%s"
                       % (arg, list(x.shape), what, list(data.shape), _loc()))


def _view(x, shape):
    """``x`` seen in the iteration shape ``shape`` (same elements, maybe
    another shape)."""
    if tuple(x.shape) == tuple(shape) or not isinstance(x, _t.NkiTensor):
        return x
    if x.shape[0] == shape[0] and _free(x.shape) == _free(shape):
        return x.reshape(shape)
    return x


def _partial_write(b, acc):
    """Note an op that may leave elements of ``acc`` unwritten."""
    b.note_read(acc)
    b.tensors[acc.tensor].written = True


def _emit(b, kind, dst, srcs, fields, partial=False, companion=False):
    op = b.emit(Op(kind, b.loc_here(), dst, srcs, fields))
    if partial:
        _partial_write(b, dst)
    else:
        b.note_write(dst)
    if companion:
        b.companions.add(id(op))
    return op


def _reduce_res(b, res, data, eng):
    """OP_ACC_READ: ``res`` (one element per partition of ``data``) <- the
    registers of engine ``eng``."""
    if not isinstance(res, _t.NkiTensor):
        raise NKIError("reduce_res must be a tile of shape (%d, 1), got %r%s"
                       % (data.shape[0], res, _loc()))
    if res.shape[0] != data.shape[0] or _free(res.shape) != 1:
        raise NKIError("reduce_res must be a tile of shape (%d, 1), got a tile of shape %s%s"
                       % (data.shape[0], list(res.shape), _loc()))
    dst = res._access(_t.op_shape(res.shape))
    _emit(b, _ir.OP_ACC_READ, dst, [], {"engine": eng}, companion=True)


def _rcmd(cmd):
    return _RCMD_IR[_member(_ReduceCmd, cmd, "reduce_cmd")]


# ---------------------------------------------------------------- tensor engine

def nc_matmul(stationary, moving, *, is_stationary_onezero=False, is_moving_onezero=False,
              is_transpose=False, tile_position=(), tile_size=(), mask=None, **kwargs):
    """PSUM fp32 [M, N] = stationary[K, M].T @ moving[K, N] on the tensor engine.

    ``tile_position``/``tile_size`` (PE tiling) are checked as NKI documents
    them and do not change the result; ``perf_mode='double_row_gen3'``
    (trn2) contracts stationary [K, 2, M] with moving [K, 2, N]."""
    _check_pe_tiling(stationary, tile_position, tile_size)
    stationary, moving = _in_sbuf(stationary), _in_sbuf(moving)
    if is_transpose and get_nc_version() != nc_version.gen2:
        return _pe_transpose(stationary, moving, mask)
    perf = kwargs.get("perf_mode")
    if perf is not None:
        return _matmul_double_row(stationary, moving, perf, mask)
    return _t.matmul(stationary, moving, transpose_x=True, mask=mask,
                     engine=_ir.ENGINE_TENSOR)


def _check_transpose_identity(stationary, moving):
    """Transpose mode's moving is the identity of stationary's partitions
    (both NKI 2.24's and 0.6's nc_matmul)."""
    if moving.shape[0] != stationary.shape[0]:
        raise NKIError("nc_matmul with is_transpose=True: moving must be the identity of"
                       " stationary's partitions (%d), got shape %s%s"
                       % (stationary.shape[0], list(moving.shape), _loc()))


def _pe_transpose(stationary, moving, mask):
    """NeuronCore-v3's transpose mode (``is_transpose=True``, trn2 and
    later): moving is the identity of stationary's partitions and the
    result is stationary.T, bit-accurate, in stationary's dtype ("FP16/BF16
    PSUM output for FP16/BF16 transpose": aws-neuron-sdk trainium2_arch,
    "Built-in Transpose Support"). On NeuronCore-v2 the flag is only a hint
    and the product is an ordinary fp32 matmul."""
    _check_transpose_identity(stationary, moving)
    r = _t.transpose(stationary, mask=mask, engine=_ir.ENGINE_TENSOR, space=_ir.SPACE_PSUM)
    _current().pe_transposes.add(id(r._producer))
    return r


def _in_sbuf(x):
    """A matmul operand that is the PSUM result of an op the kernel did
    not place (``nisa.nc_transpose`` on the tensor engine) copied to SBUF,
    as NKI does (its reference flash attention backward passes such a
    transpose straight to nc_matmul); any other operand as it is, so a
    tile the kernel itself put in PSUM still fails the memory check."""
    if isinstance(x, _t.NkiTensor) and x._space == _ir.SPACE_PSUM and x._producer is not None:
        return _t.copy(x)
    return x


def _check_pe_tiling(stationary, position, size):
    position, size = tuple(position or ()), tuple(size or ())
    if not position and not size:
        return
    if not position or not size:
        raise NKIError("tile_position and tile_size must be both set to enable PE tiling"
                       + _loc())
    if len(position) != 2 or len(size) != 2:
        raise NKIError("tile_position and tile_size must be 2D tuples (row, column)" + _loc())
    for what, vals in (("tile_position", position), ("tile_size", size)):
        for v in vals:
            if isinstance(v, IndexExpr):
                if not v.is_const():
                    continue            # checked by range below where constant
                v = v.aff.c
            if not isinstance(v, (int, np.integer)):
                raise NKIError("values in %s must be integers or affine expressions, got %r%s"
                               % (what, v, _loc()))
            if v % 32:
                raise NKIError("values in %s must be multiples of 32, got %d%s"
                               % (what, v, _loc()))
    if all(isinstance(v, (int, np.integer)) for v in size):
        if size[0] > 128 or size[1] > 128:
            raise NKIError("tile_size %s exceeds the 128x128 PE array%s" % (list(size), _loc()))
        if size[0] == 32 and size[1] == 32 and get_nc_version() == nc_version.gen2:
            raise NKIError("both the row and column sizes in tile_size cannot be 32 for"
                           " NeuronCore-v2" + _loc())
        if len(stationary.shape) == 2 and (size[0] < stationary.shape[0]
                                           or size[1] < stationary.shape[1]):
            raise NKIError("tile_size %s must be larger than or equal to the accessed"
                           " stationary tile size %s%s"
                           % (list(size), list(stationary.shape), _loc()))
        for p, s in zip(position, size):
            if isinstance(p, (int, np.integer)) and p + s > 128:
                raise NKIError("tile_position %s with tile_size %s exceeds the 128x128 PE"
                               " array%s" % (list(position), list(size), _loc()))


def _matmul_double_row(stationary, moving, perf, mask):
    if perf != "double_row_gen3":
        raise NKIError("unsupported perf_mode %r of nc_matmul (supported: 'double_row_gen3')%s"
                       % (perf, _loc()))
    if get_nc_version() < nc_version.gen3:
        raise NKIError("perf_mode='double_row_gen3' of nc_matmul needs NeuronCore-v3"
                       " (platform_target='trn2')" + _loc())
    if (len(stationary.shape) != 3 or len(moving.shape) != 3 or stationary.shape[1] != 2
            or moving.shape[1] != 2):
        raise NKIError("perf_mode='double_row_gen3' of nc_matmul takes stationary [K, 2, M]"
                       " and moving [K, 2, N], got %s and %s%s"
                       % (list(stationary.shape), list(moving.shape), _loc()))
    acc = _t.matmul(stationary[:, 0, :], moving[:, 0, :], transpose_x=True, mask=mask,
                    engine=_ir.ENGINE_TENSOR)
    acc += _t.matmul(stationary[:, 1, :], moving[:, 1, :], transpose_x=True, mask=mask,
                     engine=_ir.ENGINE_TENSOR)
    acc._inplace = False
    return acc


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
    out = _dtype(dtype, data.dtype)
    # invert's width is its dst's dtype: the instruction's output dtype
    tmp = _t.tensor_tensor(x, y, a0, dtype=out if a0 == _ir.ALU_INVERT else _dt.float32,
                           mask=mask)
    a1 = _alu(op1, "tensor_scalar")
    x, y = (operand1, tmp) if reverse1 else (tmp, operand1)
    return _t.tensor_tensor(x, y, a1, dtype=out, mask=mask)


def tensor_reduce(op, data, axis, *, mask=None, dtype=None, negate=False, keepdims=False,
                  **kwargs):
    """Reduce ``data`` along free ``axis`` with ``op``."""
    r = _t.reduce(data, _alu(op, "tensor_reduce"), axis, dtype=dtype, mask=mask,
                  keepdims=keepdims)
    if negate:
        r = _t.activation(r, _ir.ACT_NEGATIVE)
    return r


def activation(op, data, *, bias=None, scale=1.0, reduce_op=None, reduce_res=None,
               reduce_cmd=reduce_cmd.idle, mask=None, dtype=None, **kwargs):
    """``op(data * scale + bias)`` on the scalar engine; ``scale`` a scalar or
    a [P, 1] tile, ``bias`` a [P, 1] tile.  With ``reduce_cmd`` the scalar
    engine's registers fold ``reduce_op`` over each partition's results;
    ``reduce_res`` (a [P, 1] tile) receives the registers."""
    cmd = _rcmd(reduce_cmd)
    if cmd == _ir.RCMD_IDLE and reduce_res is None:
        return _t.activation(data, _act(op), dtype=dtype, mask=mask, scale=scale, bias=bias)
    return _activation_acc(op, data, bias, scale, reduce_op, reduce_res, cmd, mask, dtype)


def _activation_acc(op, data, bias, scale, reduce_op, reduce_res, cmd, mask, dtype):
    b = _require("nisa.activation")
    data = _tile(data, "data", "activation")
    act = _act(op)
    if cmd != _ir.RCMD_IDLE and reduce_op is None:
        raise NKIError("reduce_op of 'activation' must be given with a reduce_cmd other"
                       " than idle" + _loc())
    ralu = _alu(reduce_op, "reduce_op") if reduce_op is not None else _ir.ALU_ADD
    oshape = _t.op_shape(data.shape)
    if isinstance(scale, (_t.NkiTensor, IndexExpr)):
        data = _t.tensor_tensor(data, _pvec(scale, data, "scale", "activation"),
                                _ir.ALU_MULTIPLY, mask=mask)
        scale = 1.0
    ma = _t.mask_affs(mask, oshape)
    srcs = [_t._operand(b, data, oshape, ma)]
    if bias is not None:
        srcs.append(_t._operand(b, _pvec(bias, data, "bias", "activation"), oshape, ma))
    fields = {"act": act, "scale": float(scale), "reduce_cmd": cmd, "reduce_alu": ralu,
              "engine": _ir.ENGINE_SCALAR}
    out = _t._result(b, _ir.OP_ACT_ACC, data.shape, _dtype(dtype, data.dtype), srcs, fields,
                     ma)
    if reduce_res is not None:
        _reduce_res(b, reduce_res, data, _ir.ENGINE_SCALAR)
    return out


def activation_reduce(op, data, *, reduce_op, reduce_res, bias=None, scale=1.0, mask=None,
                      dtype=None, **kwargs):
    """``nisa.activation`` with ``reduce_cmd=reset_reduce``: ``reduce_res``
    [P, 1] <- ``reduce_op`` over each partition of the activation's result
    (on NeuronCore-v2 ``reduce_op`` can only be add)."""
    return _activation_acc(op, data, bias, scale, reduce_op, reduce_res,
                           _ir.RCMD_RESET_REDUCE, mask, dtype)


def tensor_partition_reduce(op, data, *, mask=None, dtype=None, **kwargs):
    """Reduce across the partitions of ``data`` [P, ...] with ``op`` (add, max,
    bitwise_or, bitwise_and) on the GpSimd engine: a [1, ...] tile."""
    b = _require("nisa.tensor_partition_reduce")
    data = _tile(data, "data", "tensor_partition_reduce")
    oshape = _t.op_shape(data.shape)
    ma = _t.mask_affs(mask, oshape)
    src = _t._operand(b, data, oshape, ma)
    shape = (1,) + tuple(data.shape[1:])
    dmask = [a for a in ma if 0 not in a.axes()]
    return _t._result(b, _ir.OP_PARTITION_REDUCE, shape, _dtype(dtype, data.dtype), [src],
                      {"alu": _alu(op, "tensor_partition_reduce"),
                       "engine": _ir.ENGINE_GPSIMD}, dmask)


def tensor_tensor_scan(data0, data1, initial, op0, op1, reverse0=False, reverse1=False, *,
                       dtype=None, mask=None, **kwargs):
    """Per partition: ``s = op1(op0(data0[i], s), data1[i])`` from ``s =
    initial`` (a scalar or a [P, 1] tile), each result stored."""
    b = _require("nisa.tensor_tensor_scan")
    data0 = _tile(data0, "data0", "tensor_tensor_scan")
    data1 = _tile(data1, "data1", "tensor_tensor_scan")
    _same_elems(data1, data0, "data1", "tensor_tensor_scan")
    init = _pvec(initial, data0, "initial", "tensor_tensor_scan")
    oshape = _t.op_shape(data0.shape)
    ma = _t.mask_affs(mask, oshape)
    srcs = [_t._operand(b, data0, oshape, ma), _t._operand(b, _view(data1, data0.shape),
                                                           oshape, ma),
            _t._operand(b, init, oshape, ma)]
    fields = {"alu": _alu(op0, "op0"), "alu1": _alu(op1, "op1"), "reverse0": bool(reverse0),
              "reverse1": bool(reverse1)}
    return _t._result(b, _ir.OP_SCAN, data0.shape,
                      _dtype(dtype, _dt.promote(data0.dtype, data1.dtype)), srcs, fields, ma)


def scalar_tensor_tensor(*, data, op0, operand0, op1, operand1, reverse0=False,
                         reverse1=False, dtype=None, mask=None, **kwargs):
    """``(data op0 operand0) op1 operand1`` on the vector engine: operand0 a
    scalar or a [P, 1] tile, operand1 a tile of data's shape."""
    b = _require("nisa.scalar_tensor_tensor")
    data = _tile(data, "data", "scalar_tensor_tensor")
    operand0 = _pvec(operand0, data, "operand0", "scalar_tensor_tensor")
    operand1 = _tile(operand1, "operand1", "scalar_tensor_tensor")
    _same_elems(operand1, data, "operand1", "scalar_tensor_tensor")
    oshape = _t.op_shape(data.shape)
    ma = _t.mask_affs(mask, oshape)
    srcs = [_t._operand(b, data, oshape, ma), _t._operand(b, operand0, oshape, ma),
            _t._operand(b, _view(operand1, data.shape), oshape, ma)]
    fields = {"alu": _alu(op0, "op0"), "alu1": _alu(op1, "op1"), "reverse0": bool(reverse0),
              "reverse1": bool(reverse1)}
    return _t._result(b, _ir.OP_SCALAR_TENSOR_TENSOR, data.shape, _dtype(dtype, data.dtype),
                      srcs, fields, ma)


def tensor_scalar_reduce(*, data, op0, operand0, reduce_op, reduce_res, reverse0=False,
                         dtype=None, mask=None, **kwargs):
    """``data op0 operand0`` on the vector engine, and ``reduce_res`` [P, 1]
    <- ``reduce_op`` (add, subtract, multiply, max, min) over each
    partition of that result."""
    b = _require("nisa.tensor_scalar_reduce")
    data = _tile(data, "data", "tensor_scalar_reduce")
    operand0 = _pvec(operand0, data, "operand0", "tensor_scalar_reduce")
    oshape = _t.op_shape(data.shape)
    ma = _t.mask_affs(mask, oshape)
    srcs = [_t._operand(b, data, oshape, ma), _t._operand(b, operand0, oshape, ma)]
    fields = {"alu": _alu(op0, "op0"), "reverse0": bool(reverse0),
              "reduce_cmd": _ir.RCMD_RESET_REDUCE, "reduce_alu": _alu(reduce_op, "reduce_op"),
              "engine": _ir.ENGINE_VECTOR}
    out = _t._result(b, _ir.OP_TENSOR_SCALAR_ACC, data.shape, _dtype(dtype, data.dtype), srcs,
                     fields, ma)
    _reduce_res(b, reduce_res, data, _ir.ENGINE_VECTOR)
    return out


def activation_accu(*args, **kwargs):
    """Not in NKI's API reference; its docs name it beside activation."""
    raise NKIError("nisa.activation_accu is not part of NKI's API reference; use"
                   " nisa.activation with reduce_cmd" + _loc())


def reciprocal(data, *, dtype=None, mask=None, **kwargs):
    """Element-wise 1 / data."""
    return _t.activation(data, _ir.ACT_RECIPROCAL, dtype=dtype, mask=mask)


def tensor_copy(src, *, mask=None, dtype=None, engine=unknown_engine, **kwargs):
    """A copy of a tile on the chosen engine."""
    return _t.copy(src, dtype=dtype, mask=mask, engine=_engine(engine))


def _copy_dynamic(b, dst, src, mask, partial):
    """OP_COPY_DYNAMIC / OP_DMA_COPY operands (tracer.dynamic.copy_operands)."""
    return _dyn.copy_operands(b, dst, src, mask, partial)


def tensor_copy_dynamic_src(src, *, mask=None, dtype=None, engine=unknown_engine, **kwargs):
    """A copy of ``src``, a tile indexed at a run-time offset within each
    partition (``src[ix, offsets[0, i] + iy]``: the offset a scalar tile
    value in SBUF)."""
    b = _require("nisa.tensor_copy_dynamic_src")
    if not isinstance(src, _dyn.DynTensor):
        raise NKIError("the source of tensor_copy_dynamic_src must be indexed with a dynamic"
                       " offset (a value of an SBUF tile), e.g. src[ix, offsets[0, i] + iy]"
                       + _loc())
    loc = b.loc_here()
    out = _t.new_tile(src.shape, _dtype(dtype, src.dtype), _ir.SPACE_SBUF, _t._guess_name(),
                      loc=loc)
    dacc, srcs, dyn, _ = _copy_dynamic(b, out, src, mask, False)
    fields = {"dyn": dyn, "engine": _engine(engine)}
    out._producer = _emit(b, _ir.OP_COPY_DYNAMIC, dacc, srcs, fields)
    return out


def tensor_copy_dynamic_dst(*, dst, src, mask=None, dtype=None, engine=unknown_engine,
                            **kwargs):
    """Copy tile ``src`` into ``dst``, a tile indexed at a run-time offset
    within each partition."""
    b = _require("nisa.tensor_copy_dynamic_dst")
    if not isinstance(dst, _dyn.DynTensor):
        raise NKIError("the destination of tensor_copy_dynamic_dst must be indexed with a"
                       " dynamic offset (a value of an SBUF tile), e.g."
                       " dst[ix, offsets[0, i] + iy]" + _loc())
    src = _tile(src, "src", "tensor_copy_dynamic_dst")
    dacc, srcs, dyn, partial = _copy_dynamic(b, dst, src, mask, False)
    _emit(b, _ir.OP_COPY_DYNAMIC, dacc, srcs, {"dyn": dyn, "engine": _engine(engine)},
          partial=partial)


def tensor_copy_predicated(*, src, dst, predicate, reverse_pred=False, mask=None, dtype=None,
                           **kwargs):
    """``dst[x] = src[x]`` where ``predicate[x]`` is true (false with
    ``reverse_pred``); elsewhere dst is unchanged.  src may be a scalar."""
    b = _require("nisa.tensor_copy_predicated")
    dst = _tile(dst, "dst", "tensor_copy_predicated")
    predicate = _tile(predicate, "predicate", "tensor_copy_predicated")
    _same_elems(predicate, dst, "predicate", "tensor_copy_predicated")
    oshape = _t.op_shape(dst.shape)
    ma = _t.mask_affs(mask, oshape)
    if isinstance(src, _t.NkiTensor):
        _same_elems(src, dst, "src", "tensor_copy_predicated")
        src = _view(src, dst.shape)
    elif not _t.is_scalar(src):
        raise NKIError("'src' of 'tensor_copy_predicated' must be a tile or a number, got %r%s"
                       % (src, _loc()))
    srcs = [_t._operand(b, src, oshape, ma),
            _t._operand(b, _view(predicate, dst.shape), oshape, ma)]
    _emit(b, _ir.OP_COPY_PREDICATED, dst._access(oshape, ma), srcs,
          {"reverse0": bool(reverse_pred)}, partial=True)


def iota(expr, dtype, *, mask=None, **kwargs):
    """A new tile holding the values of an index expression (nl.arange/mgrid
    arithmetic)."""
    return _t.iota_tile(expr, dtype, mask=mask)


def affine_select(pred, on_true_tile, on_false_value, *, mask=None, dtype=None, **kwargs):
    """``pred ? on_true_tile : on_false_value`` element-wise on the GpSimd
    engine, ``pred`` one affine comparison of nl.arange/mgrid indices and
    loop variables (``iy < ix``: a causal mask)."""
    b = _require("nisa.affine_select")
    on_true_tile = _tile(on_true_tile, "on_true_tile", "affine_select")
    if not _t.is_scalar(on_false_value):
        raise NKIError("on_false_value of 'affine_select' must be a float32 scalar, got %r%s"
                       % (on_false_value, _loc()))
    oshape = _t.op_shape(on_true_tile.shape)
    if isinstance(pred, (bool, np.bool_)):
        expr = Aff(0 if pred else -1)
    elif isinstance(pred, Predicate):
        affs = _t.mask_affs(pred, oshape)
        if len(affs) != 1:
            raise NKIError("pred of 'affine_select' must be one affine comparison; it can't be"
                           " multiple masks combined using logical operators such as & and |"
                           " (use nl.where)" + _loc())
        expr = affs[0]
    else:
        raise NKIError("pred of 'affine_select' must be an affine comparison of nl.arange or"
                       " nl.mgrid indices (e.g. iy < ix), got %r%s" % (pred, _loc()))
    ma = _t.mask_affs(mask, oshape)
    srcs = [_t._operand(b, on_true_tile, oshape, ma)]
    return _t._result(b, _ir.OP_AFFINE_SELECT, on_true_tile.shape,
                      _dtype(dtype, on_true_tile.dtype), srcs,
                      {"expr": expr, "value": float(on_false_value),
                       "engine": _ir.ENGINE_GPSIMD}, ma)


def range_select(*, on_true_tile, comp_op0, comp_op1, bound0, bound1,
                 reduce_cmd=reduce_cmd.idle, reduce_res=None, reduce_op=np.amax, range_start=0,
                 on_false_value=fp32.min, mask=None, dtype=None, **kwargs):
    """``on_true_tile`` where ``comp_op0(i, bound0) and comp_op1(i, bound1)``
    for ``i = range_start + free index``, else ``on_false_value`` (vector
    engine, NeuronCore-v3 and later); the vector registers take the max."""
    b = _require("nisa.range_select")
    on_true_tile = _tile(on_true_tile, "on_true_tile", "range_select")
    bound0 = _tile(_pvec(bound0, on_true_tile, "bound0", "range_select"), "bound0",
                   "range_select")
    bound1 = _tile(_pvec(bound1, on_true_tile, "bound1", "range_select"), "bound1",
                   "range_select")
    if float(on_false_value) != fp32.min:
        raise NKIError("on_false_value of 'range_select' must be the FP32_MIN bit pattern"
                       " (nl.fp32.min), got %r%s" % (on_false_value, _loc()))
    if not isinstance(range_start, (int, np.integer)):
        raise NKIError("range_start of 'range_select' must be a compile-time integer, got %r%s"
                       % (range_start, _loc()))
    oshape = _t.op_shape(on_true_tile.shape)
    ma = _t.mask_affs(mask, oshape)
    srcs = [_t._operand(b, x, oshape, ma) for x in (on_true_tile, bound0, bound1)]
    fields = {"alu": _alu(comp_op0, "comp_op0"), "alu1": _alu(comp_op1, "comp_op1"),
              "value": float(on_false_value), "range_start": int(range_start),
              "reduce_cmd": _rcmd(reduce_cmd), "reduce_alu": _alu(reduce_op, "reduce_op"),
              "engine": _ir.ENGINE_VECTOR}
    out = _t._result(b, _ir.OP_RANGE_SELECT, on_true_tile.shape,
                     _dtype(dtype, on_true_tile.dtype), srcs, fields, ma)
    if reduce_res is not None:
        _reduce_res(b, reduce_res, on_true_tile, _ir.ENGINE_VECTOR)
    return out


def select_reduce(*, dst, predicate, on_true, on_false, reduce_res=None,
                  reduce_cmd=reduce_cmd.idle, reduce_op=np.amax, reverse_pred=False, mask=None,
                  dtype=None, **kwargs):
    """``dst = predicate ? on_true : on_false`` (``on_false`` a scalar or a
    [P, 1] tile; ``reverse_pred`` flips the predicate) on the vector engine;
    the vector registers take the max."""
    b = _require("nisa.select_reduce")
    dst = _tile(dst, "dst", "select_reduce")
    predicate = _tile(predicate, "predicate", "select_reduce")
    on_true = _tile(on_true, "on_true", "select_reduce")
    for x, arg in ((predicate, "predicate"), (on_true, "on_true")):
        _same_elems(x, dst, arg, "select_reduce")
    on_false = _pvec(on_false, on_true, "on_false", "select_reduce")
    oshape = _t.op_shape(dst.shape)
    ma = _t.mask_affs(mask, oshape)
    srcs = [_t._operand(b, _view(predicate, dst.shape), oshape, ma),
            _t._operand(b, _view(on_true, dst.shape), oshape, ma),
            _t._operand(b, on_false, oshape, ma)]
    fields = {"reverse0": bool(reverse_pred), "reduce_cmd": _rcmd(reduce_cmd),
              "reduce_alu": _alu(reduce_op, "reduce_op"), "engine": _ir.ENGINE_VECTOR}
    _emit(b, _ir.OP_SELECT_REDUCE, dst._access(oshape, ma), srcs, fields, partial=bool(ma))
    if reduce_res is not None:
        _reduce_res(b, reduce_res, dst, _ir.ENGINE_VECTOR)


def sequence_bounds(*, segment_ids, dtype=None):
    """[1, 2, n]: the start (first row) and end (second row) of the segment of
    each of the n segment ids of a [1, n] tile; padding (id 0) gets n and -1."""
    b = _require("nisa.sequence_bounds")
    segment_ids = _tile(segment_ids, "segment_ids", "sequence_bounds")
    if len(segment_ids.shape) != 2 or segment_ids.shape[0] != 1:
        raise NKIError("segment_ids of 'sequence_bounds' must be a [1, n] tile: the partition"
                       " dimension must always be 1, got %s%s"
                       % (list(segment_ids.shape), _loc()))
    src = _t._operand(b, segment_ids, None, ())
    n = segment_ids.shape[1]
    return _t._result(b, _ir.OP_SEQUENCE_BOUNDS, (1, 2, n),
                      _dtype(dtype, segment_ids.dtype), [src],
                      {"engine": _ir.ENGINE_GPSIMD}, ())


def memset(shape, value, dtype, *, mask=None, engine=unknown_engine, **kwargs):
    """A new SBUF tile of ``shape`` filled with ``value``."""
    t = nl.ndarray(shape, dtype, buffer=nl.sbuf)
    _t.fill(t, value, mask=mask)
    return t


def bn_stats(data, *, mask=None, dtype=None, **kwargs):
    """Mean/variance statistics of a [P, F] tile: [P, 6 * ceil(F / 512)]."""
    b = _require("bn_stats")
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


def local_gather(src_buffer, index, num_elem_per_idx=1, num_valid_indices=None, *, mask=None):
    """Gather within each 16-partition slice of SBUF (one GpSimd core): the
    slice's uint16 indices, flattened partition-first, are element offsets
    into every partition of the slice, ``num_elem_per_idx`` elements each.

    The result is [P, index free..., 16, num_elem_per_idx] when every index
    is valid (the order NKI's numpy equivalent gathers in), else [P,
    num_valid_indices, num_elem_per_idx]."""
    b = _require("nisa.local_gather")
    src_buffer = _tile(src_buffer, "src_buffer", "local_gather")
    index = _tile(index, "index", "local_gather")
    P = src_buffer.shape[0]
    per_core = 16 * _free(index.shape)
    valid = per_core if num_valid_indices is None else int(num_valid_indices)
    E = int(num_elem_per_idx)
    if valid == per_core:
        shape = (P,) + tuple(reversed(index.shape[1:])) + (16, E)
    else:
        shape = (P, valid, E)
    srcs = [_t._operand(b, src_buffer, None, ()), _t._operand(b, index, None, ())]
    fields = {"elem_per_index": E, "valid_indices": valid, "engine": _ir.ENGINE_GPSIMD}
    return _t._result(b, _ir.OP_LOCAL_GATHER, shape, src_buffer.dtype, srcs, fields,
                      _t.mask_affs(mask, shape))


# ---------------------------------------------------------------- DMA

def dma_copy(*, dst, src, mask=None, dst_rmw_op=None, oob_mode=oob_mode.error,
             dge_mode=dge_mode.unknown):
    """Copy ``src`` to ``dst`` (HBM or SBUF, with a cast) on a DMA engine.
    Either side may be indexed by a tile (``in_tensor[idx_tile, iy]``): an
    indirect gather or scatter whose out-of-bounds indices fail the run
    (``oob_mode.error``) or are skipped (``oob_mode.skip``).  ``dst_rmw_op``
    ``np.add`` adds into dst."""
    b = _require("nisa.dma_copy")
    for x, arg in ((dst, "dst"), (src, "src")):
        if not isinstance(x, _t.NkiTensor):
            raise NKIError("'%s' of 'dma_copy' must be a tensor or a tile, got %r%s"
                           % (arg, x, _loc()))
    oob = _member(_OobMode, oob_mode, "oob_mode")
    dge = _DGE_IR[_member(_DgeMode, dge_mode, "dge_mode")]
    rmw = _ir.ALU_INVALID if dst_rmw_op is None else _alu(dst_rmw_op, "dst_rmw_op")
    dacc, srcs, dyn, partial = _copy_dynamic(b, dst, src, mask, rmw != _ir.ALU_INVALID)
    fields = {"alu": rmw, "oob_skip": oob == _OobMode.skip, "dge_mode": dge, "dyn": dyn}
    partial = partial or bool(dacc.mask) or oob == _OobMode.skip
    _emit(b, _ir.OP_DMA_COPY, dacc, srcs, fields, partial=partial)


_TRANSPOSE_AXES = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}


def dma_transpose(src, *, axes=None, mask=None, dtype=None, **kwargs):
    """A new SBUF tile holding ``src`` (HBM or SBUF) transposed by a DMA:
    axes (1, 0), (2, 1, 0) or (3, 1, 2, 0) (the default for the rank)."""
    b = _require("nisa.dma_transpose")
    src = _tile(src, "src", "dma_transpose")
    rank = len(src.shape)
    if axes is None:
        if rank not in _TRANSPOSE_AXES:
            raise NKIError("'dma_transpose' supports 2-d, 3-d and 4-d tiles, got rank %d%s"
                           % (rank, _loc()))
        axes = _TRANSPOSE_AXES[rank]
    axes = tuple(int(a) for a in axes)
    if axes not in _TRANSPOSE_AXES.values() or len(axes) != rank:
        raise NKIError("unsupported axes %s of 'dma_transpose' for a rank-%d tile: supported"
                       " axes are (1, 0), (2, 1, 0), and (3, 1, 2, 0)%s"
                       % (list(axes), rank, _loc()))
    shape = tuple(src.shape[a] for a in axes)
    dge = _DGE_IR[_member(dge_mode, kwargs.get("dge_mode", dge_mode.unknown), "dge_mode")]
    srcs = [_t._operand(b, src, None, ())]
    return _t._result(b, _ir.OP_DMA_TRANSPOSE, shape, _dtype(dtype, src.dtype), srcs,
                      {"axes": list(axes), "dge_mode": dge}, _t.mask_affs(mask, shape))


# ---------------------------------------------------------------- top-8

def max8(*, src, mask=None, dtype=None, **kwargs):
    """[P, 8]: the 8 largest values of each partition of ``src`` (8 to 16384
    elements per partition), descending."""
    b = _require("nisa.max8")
    src = _tile(src, "src", "max8")
    ma = _t.mask_affs(mask, _t.op_shape(src.shape))
    s = _t._operand(b, src, _t.op_shape(src.shape), ma)
    return _t._result(b, _ir.OP_MAX8, (src.shape[0], 8), _dtype(dtype, src.dtype), [s],
                      {"engine": _ir.ENGINE_VECTOR}, ())


def _vals8(b, vals, data, what):
    vals = _tile(vals, "vals", what)
    if vals.shape[0] != data.shape[0] or _free(vals.shape) != 8:
        raise NKIError("'vals' of '%s' must have %d partitions of exactly 8 elements, got %s%s"
                       % (what, data.shape[0], list(vals.shape), _loc()))
    return _t._operand(b, vals, None, ())


def nc_find_index8(*, data, vals, mask=None, dtype=None, **kwargs):
    """[P, 8] (uint32 by default, or uint16): the index of the first
    occurrence of each of the 8 ``vals`` of a partition in its flattened
    ``data`` (0 where a value does not occur: undefined in NKI)."""
    b = _require("nisa.nc_find_index8")
    data = _tile(data, "data", "nc_find_index8")
    dt = _dtype(dtype, _dt.uint32)
    if dt not in (_dt.uint16, _dt.uint32):
        raise NKIError("dtype of 'nc_find_index8' must be uint16 or uint32, got %s%s"
                       % (_dt.name_of(dt), _loc()))
    ma = _t.mask_affs(mask, _t.op_shape(data.shape))
    srcs = [_t._operand(b, data, _t.op_shape(data.shape), ma), _vals8(b, vals, data,
                                                                     "nc_find_index8")]
    return _t._result(b, _ir.OP_FIND_INDEX8, (data.shape[0], 8), dt, srcs,
                      {"engine": _ir.ENGINE_VECTOR}, ())


def nc_match_replace8(*, data, vals, imm, dst_idx=None, mask=None, dtype=None, **kwargs):
    """``data`` with the first occurrence of each of the 8 ``vals`` of a
    partition replaced by ``imm`` (in order, each search seeing the
    replacements before it); ``dst_idx`` [P, 8] receives their indices."""
    b = _require("nisa.nc_match_replace8")
    data = _tile(data, "data", "nc_match_replace8")
    if not _t.is_scalar(imm):
        raise NKIError("imm of 'nc_match_replace8' must be a float32 constant, got %r%s"
                       % (imm, _loc()))
    oshape = _t.op_shape(data.shape)
    ma = _t.mask_affs(mask, oshape)
    if dst_idx is not None:
        dst_idx = _tile(dst_idx, "dst_idx", "nc_match_replace8")
        if dst_idx.shape[0] != data.shape[0] or _free(dst_idx.shape) != 8:
            raise NKIError("dst_idx of 'nc_match_replace8' must have %d partitions of 8"
                           " elements, got %s%s" % (data.shape[0], list(dst_idx.shape), _loc()))
        srcs = [_t._operand(b, data, oshape, ma), _vals8(b, vals, data, "nc_match_replace8")]
        _emit(b, _ir.OP_MATCH_REPLACE8, dst_idx._access(_t.op_shape(dst_idx.shape)), srcs,
              {"value": float(imm), "index_out": True, "engine": _ir.ENGINE_VECTOR})
    srcs = [_t._operand(b, data, oshape, ma), _vals8(b, vals, data, "nc_match_replace8")]
    return _t._result(b, _ir.OP_MATCH_REPLACE8, data.shape, _dtype(dtype, data.dtype), srcs,
                      {"value": float(imm), "engine": _ir.ENGINE_VECTOR}, ma)


def nc_stream_shuffle(src, dst, shuffle_mask, *, dtype=None, mask=None, **kwargs):
    """Partition i of each 32-partition quadrant of ``dst`` <- partition
    ``shuffle_mask[i]`` of the same quadrant of ``src`` (255: unchanged), on
    the vector engine; ``mask`` applies to dst."""
    b = _require("nisa.nc_stream_shuffle")
    src = _tile(src, "src", "nc_stream_shuffle")
    dst = _tile(dst, "dst", "nc_stream_shuffle")
    try:
        sm = [int(v.aff.c) if isinstance(v, IndexExpr) and v.is_const() else int(v)
              for v in shuffle_mask]
    except (TypeError, ValueError):
        raise NKIError("shuffle_mask of 'nc_stream_shuffle' must be a list of 32 integers%s"
                       % _loc()) from None
    if len(sm) != 32:
        raise NKIError("shuffle_mask of 'nc_stream_shuffle' must have 32 elements, got %d%s"
                       % (len(sm), _loc()))
    for i, v in enumerate(sm):
        if not (0 <= v < 32 or v == 255):
            raise NKIError("shuffle_mask[%d] of 'nc_stream_shuffle' is %d: it must name a"
                           " partition of the quadrant (0 to 31) or be 255%s" % (i, v, _loc()))
    oshape = _t.op_shape(dst.shape)
    ma = _t.mask_affs(mask, oshape)
    s = _t._operand(b, src, _t.op_shape(src.shape), ())
    _emit(b, _ir.OP_SHUFFLE, dst._access(oshape, ma), [s],
          {"shuffle": sm, "engine": _ir.ENGINE_VECTOR}, partial=True)


# ---------------------------------------------------------------- device only

def builtin_custom_op(function_name, lib_file_name, ulib_to_ucode_version,
                      ulib_to_isa_version, srcs, dsts, **kwargs):
    """Not available off the device (see the error)."""
    raise NKIError("nisa.builtin_custom_op runs a custom GpSimd microcode library ('%s' from"
                   " '%s') on the NeuronCore; its code exists only as device microcode, so"
                   " the cpu backend cannot run it%s" % (function_name, lib_file_name, _loc()))


__all__ = [n for n in dir() if not n.startswith("_")
           and n not in ("np", "nl", "IndexExpr", "Predicate", "IntEnum", "Op")]
