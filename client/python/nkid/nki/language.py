"""nkid.nki.language: the NKI language (``import nkid.nki.language as nl``).

Mirrors ``neuronxcc.nki.language``.  Every function here is traced: called
from a kernel it records NKIR ops (see ``nkid.tracer``); called outside a
kernel it raises.  Tiles returned by these functions are
:class:`nkid.tracer.tensor.NkiTensor` objects.

Loops: ``affine_range`` and ``sequential_range`` are traced once, with a
symbolic loop variable, into one NKIR loop.  ``static_range`` and a Python
``range`` inside a kernel unroll while tracing (NKI's ``static_range`` is
"fully unrolled during NKI kernel tracing").
"""

import os

import ml_dtypes
import numpy as np

from .._proto import nkir_pb2 as _ir
from ..errors import NKIError, NKISyntaxError
from ..tracer import dtypes as _dt
from ..tracer import tensor as _t
from ..tracer.affine import (IndexExpr, Predicate, arange as _arange, mgrid,
                             loop_var as _loop_var, program_var as _program_var,
                             as_index as _as_index, range_args as _range_args)
from ..tracer import alloc as _alloc
from ..tracer.affine import Aff
from ..tracer import dynamic as _dyn
from ..tracer import indirect as _indirect
from ..tracer.builder import require as _require, current as _current, loc_suffix as _loc, Op
from ..tracer.tensor import NkiTensor, ParDim, sbuf, psum, hbm, shared_hbm, private_hbm
from ._operands import dropout as _isa_dropout
from .compiler import is_directive

# nkid.nki.language.constants, which NKI's reference kernels import (nkid.nki._internal)
__path__ = [os.path.join(os.path.dirname(__file__), "_internal", "language")]

# ---------------------------------------------------------------- data types

float32 = _dt.float32
float16 = _dt.float16
bfloat16 = _dt.bfloat16
tfloat32 = _dt.tfloat32
float8_e4m3 = _dt.float8_e4m3
float8_e4m3fn = _dt.float8_e4m3
float8_e5m2 = _dt.float8_e5m2
int8, int16, int32 = _dt.int8, _dt.int16, _dt.int32
uint8, uint16, uint32 = _dt.uint8, _dt.uint16, _dt.uint32
bool_ = _dt.bool_

tile = NkiTensor


class tile_size:
    """Hardware tile size constants."""

    pmax = 128                   #: maximum partition dimension of a tile
    psum_fmax = 512              #: maximum free size of a PSUM tile (fp32)
    gemm_stationary_fmax = 128   #: maximum free size of a matmul stationary operand
    gemm_moving_fmax = 512       #: maximum free size of a matmul moving operand
    bn_stats_fmax = 512          #: maximum free size of bn_stats' input
    psum_max = 2 * 1024 * 8      #: bytes of PSUM per partition (8 banks x 2 KiB)
    total_available_sbuf_size = 192 * 1024


def par_dim(n):
    """Mark the partition dimension in a tile shape: ``(4, nl.par_dim(128), 512)``."""
    return ParDim(int(n))


# ---------------------------------------------------------------- creation

def _buffer(buffer, default=sbuf):
    if buffer is None:
        return default
    if isinstance(buffer, (_t.Buffer, _alloc.AllocBuffer)):
        return buffer
    space = getattr(buffer, "auto_alloc", None)
    if callable(space):                 # ncc.sbuf / ncc.psum themselves
        return space()
    raise TypeError("unsupported buffer %r (use nl.sbuf, nl.psum, nl.hbm or nl.shared_hbm)"
                    % (buffer,))


def _shape_par(shape):
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    shape = tuple(shape)
    pars = [i for i, s in enumerate(shape) if isinstance(s, ParDim)]
    if len(pars) > 1:
        raise NKIError("a tile shape can have only one nl.par_dim" + _loc())
    return tuple(int(s) for s in shape), (pars[0] if pars else 0)


def _create(shape, dtype, buffer, name, fill, value=0.0):
    b = _require("nl.ndarray")
    buf = _buffer(buffer)
    shape, par = _shape_par(shape)
    name = name or _t._guess_name()
    if buf.space in (_ir.SPACE_SBUF, _ir.SPACE_PSUM):
        loc = b.loc_here()
        placement = None
        if isinstance(buf, _alloc.AllocBuffer) and not b.force_auto_alloc:
            if fill != _ir.FILL_UNINIT:
                raise NKIError("Creating SBUF/PSUM tensor with init value is not supported"
                               " in allocated NKI kernels. (err_tensor_creation_on_scratchpad"
                               "_with_init_value_not_supported)" + _loc())
            placement = _alloc.place(buf, shape, par, _dt.normalize(dtype).itemsize,
                                     name or "tensor", b.target)
        t = _t.new_tile(shape, dtype, buf.space, name, par, loc=loc)
        b.tensors[t._tid].alloc = placement
        b.alloc(t._tid, fill, value, loc=loc)
        return t
    if isinstance(buf, _alloc.AllocBuffer):
        raise NKIError("%r places SBUF or PSUM tiles, not %s tensors" % (buf, buf.name)
                       + _loc())
    if fill == _ir.FILL_VALUE:
        raise NKIError("nl.full/nl.ones in HBM is not supported by nkid; fill a tile"
                       " and store it" + _loc())
    return _t.new_hbm(shape, dtype, buf.space, name, fill)


def ndarray(shape, dtype, *, buffer=None, name="", **kwargs):
    """A new tensor of ``shape`` and ``dtype``, uninitialized, in ``buffer``
    (default ``nl.sbuf``; ``nl.hbm``/``nl.shared_hbm`` make kernel outputs)."""
    return _create(shape, dtype, buffer, name, _ir.FILL_UNINIT)


def empty_like(a, dtype=None, *, buffer=None, name="", **kwargs):
    """An uninitialized tensor with the shape (and dtype) of ``a``."""
    return ndarray(a.shape, dtype or a.dtype, buffer=buffer, name=name)


def zeros(shape, dtype, *, buffer=None, name="", **kwargs):
    """A new tensor filled with zeros."""
    return _create(shape, dtype, buffer, name, _ir.FILL_ZERO)


def zeros_like(a, dtype=None, *, buffer=None, name="", **kwargs):
    return zeros(a.shape, dtype or a.dtype, buffer=buffer, name=name)


def full(shape, fill_value, dtype, *, buffer=None, name="", **kwargs):
    """A new tensor filled with ``fill_value``."""
    v = float(fill_value)
    return _create(shape, dtype, buffer, name, _ir.FILL_ZERO if v == 0.0 else _ir.FILL_VALUE, v)


def ones(shape, dtype, *, buffer=None, name="", **kwargs):
    return full(shape, 1.0, dtype, buffer=buffer, name=name)


def ones_like(a, dtype=None, *, buffer=None, name="", **kwargs):
    return ones(a.shape, dtype or a.dtype, buffer=buffer, name=name)


def full_like(a, fill_value, dtype=None, *, buffer=None, name="", **kwargs):
    return full(a.shape, fill_value, dtype or a.dtype, buffer=buffer, name=name)


# ---------------------------------------------------------------- indexing

def arange(*args):
    """A 1-D index tile; shape it with ``[:, None]`` / ``[None, :]``."""
    return _arange(*args)


def ds(start, size):
    """A dynamic slice ``start:start+size`` (start may use loop variables)."""
    return slice(start, start + size)


# ---------------------------------------------------------------- loops

class _Range:
    """A NKI loop: traced once with a symbolic variable into one NKIR loop."""

    _kind = _ir.LOOP_AFFINE
    _label = "affine_range"

    def __init__(self, *args, **kwargs):
        vals = []
        for v in _range_args(args, self._label):
            i = _as_index(v)
            if i is None or not i.is_const() or i.shape:
                raise NKIError("nl.%s bounds must be compile-time integers, got %r%s"
                               % (self._label, v, _loc()))
            vals.append(i.aff.c)
        self.start, self.stop, self.step = vals
        if self.step == 0:
            raise ValueError("nl.%s step must not be zero" % self._label)
        d = kwargs.get("directives")
        if d is not None:
            if not is_directive(d):
                raise TypeError("nl.%s directives must be nki.compiler directives"
                                " (no_reorder(), multi_buffer(), allocation_scope()), got %r"
                                % (self._label, d))
        self.directives = d

    def __len__(self):
        return len(range(self.start, self.stop, self.step))

    def __iter__(self):
        b = _current()
        if b is None:               # outside a trace: an ordinary range
            yield from range(self.start, self.stop, self.step)
            return
        var = b.begin_loop(self._kind, self.start, self.stop, self.step)
        try:
            yield _loop_var(var)
        finally:
            b.end_loop(var)

    def __repr__(self):
        return "nl.%s(%d, %d, %d)" % (self._label, self.start, self.stop, self.step)


class affine_range(_Range):
    """Loop whose iterations are independent (may run in parallel on hardware;
    nkid runs them in order)."""


class sequential_range(_Range):
    """Loop with a dependency carried across iterations."""

    _kind = _ir.LOOP_SEQUENTIAL
    _label = "sequential_range"


class static_range(_Range):
    """A loop NKI unrolls while it traces the kernel: the body runs once per
    value with a Python int as the index (so it may index host arrays and
    drive Python control flow), and the IR holds every copy."""

    _kind = _ir.LOOP_STATIC
    _label = "static_range"

    def __iter__(self):
        yield from range(self.start, self.stop, self.step)


# ---------------------------------------------------------------- SPMD

class nc:
    """``nl.nc(n)``: a launch-grid dimension spread over n NeuronCores.

    nkid's cpu backend runs every program of the grid; ``nl.nc(2)``
    multiplies the grid dimension it appears in, and the performance model
    spreads the programs over ``cores`` NeuronCores (docs/model.md)."""

    def __init__(self, n):
        self.n = int(n)
        self.cores = self.n

    def __int__(self):
        return self.n

    __index__ = __int__

    def __mul__(self, o):
        return spmd_dim(self, o)

    def __rmul__(self, o):
        return spmd_dim(o, self)

    def __repr__(self):
        return "nl.nc(%d)" % self.n


class spmd_dim:
    """``nl.spmd_dim(g, nl.nc(2))``: a grid dimension of g * 2 programs."""

    def __init__(self, *dims):
        self.dims = dims
        n = cores = 1
        for d in dims:
            n *= int(d)
            cores *= getattr(d, "cores", 1)
        self.n = n
        self.cores = cores

    def __int__(self):
        return self.n

    __index__ = __int__

    def __mul__(self, o):
        return spmd_dim(self, o)

    __rmul__ = __mul__

    def __repr__(self):
        return "nl.spmd_dim(%s)" % ", ".join(map(repr, self.dims))


def program_id(axis):
    """The index of this program along a launch-grid axis."""
    b = _require("nl.program_id")
    axis = int(axis)
    if axis < 0 or axis >= (len(b.grid) or 1):
        raise NKIError("nl.program_id(%d) on a launch grid of %d dimension(s)%s"
                       % (axis, len(b.grid), _loc()))
    if not b.grid:
        return 0
    return _program_var(axis)


def num_programs(axes=None):
    """The number of programs along ``axes`` (all of them when None)."""
    b = _require("nl.num_programs")
    grid = b.grid or (1,)
    if axes is None:
        axes = range(len(grid))
    elif isinstance(axes, int):
        axes = [axes]
    n = 1
    for a in axes:
        n *= grid[a]
    return n


def program_ndim():
    """The number of dimensions of the launch grid."""
    return len(_require("nl.program_ndim").grid)


# ---------------------------------------------------------------- memory

def load(src, *, mask=None, dtype=None, **kwargs):
    """Load a tensor from HBM into a new SBUF tile."""
    return _t.load(src, dtype=dtype, mask=mask)


def store(dst, value, *, mask=None, **kwargs):
    """Store a tile (SBUF or PSUM) into an HBM tensor."""
    return _t.store(dst, value, mask=mask)


def load_transpose2d(src, *, mask=None, dtype=None, **kwargs):
    """Load a 2-D HBM tensor [P, F] transposed into a tile [F, P]."""
    if isinstance(src, _dyn.DynTensor):
        raise NKISyntaxError("The API does not allow using tiles / tensors with indirect"
                             " indices. (err_indirect_indices_are_not_supported_with_nki_api)"
                             + _loc())
    if len(src.shape) != 2:
        raise NKIError("load_transpose2d needs a 2-D tensor" + _loc())
    tv = src._view((src.shape[1], src.shape[0]), {0: Aff.axis(1), 1: Aff.axis(0)})
    return _t.load(tv, dtype=dtype, mask=mask)


def copy(src, *, mask=None, dtype=None, **kwargs):
    """A copy of a tile (cast to ``dtype`` if given)."""
    return _t.copy(src, dtype=dtype, mask=mask)


def static_cast(x, dtype):
    """Cast to ``dtype``: a host numpy array (outside a kernel) or a tile."""
    if isinstance(x, np.ndarray) or np.isscalar(x):
        return np.asarray(x).astype(_dt.host_dtype(_dt.normalize(dtype)))
    return _t.copy(x, dtype=dtype)


def broadcast_to(src, shape, **kwargs):
    """``src`` broadcast to ``shape`` (size-1 dims, including the partition dim)."""
    return src.broadcast_to(shape)


def device_print(prefix, x, *, mask=None, **kwargs):
    """Print ``prefix`` and the values of ``x`` when the kernel runs (simulation)."""
    b = _require("nl.device_print")
    if not isinstance(x, NkiTensor):
        raise NKIError("nl.device_print expects a tensor or tile" + _loc())
    ma = _t.mask_affs(mask, x.shape)
    src = _t._operand(b, x, None, ma)
    b.emit(Op(_ir.OP_PRINT, b.loc_here(), None, [src], {"text": str(prefix)}))


# ---------------------------------------------------------------- math

def _binary(alu, doc):
    def f(x, y, *, dtype=None, mask=None, **kwargs):
        return _t.tensor_tensor(x, y, alu, dtype=dtype, mask=mask)
    f.__doc__ = doc
    return f


add = _binary(_ir.ALU_ADD, "Element-wise x + y.")
subtract = _binary(_ir.ALU_SUBTRACT, "Element-wise x - y.")
multiply = _binary(_ir.ALU_MULTIPLY, "Element-wise x * y.")
divide = _binary(_ir.ALU_DIVIDE, "Element-wise x / y.")
maximum = _binary(_ir.ALU_MAXIMUM, "Element-wise maximum.")
minimum = _binary(_ir.ALU_MINIMUM, "Element-wise minimum.")
power = _binary(_ir.ALU_POWER, "Element-wise x ** y.")
fmod = _binary(_ir.ALU_MOD, "Element-wise remainder.")
mod = fmod
equal = _binary(_ir.ALU_EQUAL, "Element-wise x == y (1 or 0).")
not_equal = _binary(_ir.ALU_NOT_EQUAL, "Element-wise x != y (1 or 0).")
greater = _binary(_ir.ALU_GREATER, "Element-wise x > y (1 or 0).")
greater_equal = _binary(_ir.ALU_GREATER_EQUAL, "Element-wise x >= y (1 or 0).")
less = _binary(_ir.ALU_LESS, "Element-wise x < y (1 or 0).")
less_equal = _binary(_ir.ALU_LESS_EQUAL, "Element-wise x <= y (1 or 0).")
logical_and = _binary(_ir.ALU_LOGICAL_AND, "Element-wise logical and.")
logical_or = _binary(_ir.ALU_LOGICAL_OR, "Element-wise logical or.")
logical_xor = _binary(_ir.ALU_LOGICAL_XOR, "Element-wise logical xor.")
bitwise_and = _binary(_ir.ALU_BITWISE_AND, "Element-wise bitwise and.")
bitwise_or = _binary(_ir.ALU_BITWISE_OR, "Element-wise bitwise or.")
bitwise_xor = _binary(_ir.ALU_BITWISE_XOR, "Element-wise bitwise xor.")
left_shift = _binary(_ir.ALU_LEFT_SHIFT, "Element-wise x << y.")
right_shift = _binary(_ir.ALU_RIGHT_SHIFT, "Element-wise x >> y.")


def _unary(act, doc):
    def f(x, *, dtype=None, mask=None, **kwargs):
        return _t.activation(x, act, dtype=dtype, mask=mask)
    f.__doc__ = doc
    f.act = act
    return f


exp = _unary(_ir.ACT_EXP, "Element-wise e ** x.")
log = _unary(_ir.ACT_LOG, "Element-wise natural logarithm.")
square = _unary(_ir.ACT_SQUARE, "Element-wise x * x.")
sqrt = _unary(_ir.ACT_SQRT, "Element-wise square root.")
rsqrt = _unary(_ir.ACT_RSQRT, "Element-wise 1 / sqrt(x).")
reciprocal = _unary(_ir.ACT_RECIPROCAL, "Element-wise 1 / x.")
tanh = _unary(_ir.ACT_TANH, "Element-wise tanh.")
sigmoid = _unary(_ir.ACT_SIGMOID, "Element-wise logistic sigmoid.")
relu = _unary(_ir.ACT_RELU, "Element-wise max(x, 0).")
gelu = _unary(_ir.ACT_GELU, "GELU (erf form).")
gelu_apprx_tanh = _unary(_ir.ACT_GELU_TANH, "GELU (tanh approximation).")
silu = _unary(_ir.ACT_SILU, "x * sigmoid(x).")
negative = _unary(_ir.ACT_NEGATIVE, "Element-wise -x.")
abs = _unary(_ir.ACT_ABS, "Element-wise |x|.")  # noqa: A001
sign = _unary(_ir.ACT_SIGN, "Element-wise sign (-1, 0, 1).")
sin = _unary(_ir.ACT_SIN, "Element-wise sine.")
cos = _unary(_ir.ACT_COS, "Element-wise cosine.")
erf = _unary(_ir.ACT_ERF, "Element-wise error function.")
softplus = _unary(_ir.ACT_SOFTPLUS, "log(1 + e ** x).")
ceil = _unary(_ir.ACT_CEIL, "Element-wise ceiling.")
floor = _unary(_ir.ACT_FLOOR, "Element-wise floor.")
trunc = _unary(_ir.ACT_TRUNC, "Element-wise truncation toward zero.")
logical_not = _unary(_ir.ACT_LOGICAL_NOT, "Element-wise logical not.")


def invert(x, *, dtype=None, mask=None, **kwargs):
    """Element-wise bitwise not (numpy.invert), in the bits of the result's
    dtype (unsigned: 2**bits - 1 - x; signed: -x - 1; bool: not x)."""
    return _t.tensor_tensor(x, 0, _ir.ALU_INVERT, dtype=dtype, mask=mask)


def _reduction(alu, doc):
    def f(x, axis, *, dtype=None, mask=None, keepdims=False, **kwargs):
        return _t.reduce(x, alu, axis, dtype=dtype, mask=mask, keepdims=keepdims)
    f.__doc__ = doc
    return f


sum = _reduction(_ir.ALU_ADD, "Sum along the given free axes.")  # noqa: A001
prod = _reduction(_ir.ALU_MULTIPLY, "Product along the given free axes.")
max = _reduction(_ir.ALU_MAXIMUM, "Maximum along the given free axes.")  # noqa: A001
min = _reduction(_ir.ALU_MINIMUM, "Minimum along the given free axes.")  # noqa: A001
mean = _reduction(_ir.ALU_MEAN, "Mean along the given free axes.")
var = _reduction(_ir.ALU_VAR, "Population variance along the given free axes.")
all = _reduction(_ir.ALU_LOGICAL_AND, "Logical and along the given free axes.")  # noqa: A001
any = _reduction(_ir.ALU_LOGICAL_OR, "Logical or along the given free axes.")  # noqa: A001


def matmul(x, y, *, transpose_x=False, mask=None, **kwargs):
    """x @ y into a new PSUM fp32 tile.  With ``transpose_x=True`` x is given
    transposed ([K, M], as the PE array takes it)."""
    return _t.matmul(x, y, transpose_x=transpose_x, mask=mask)


def transpose(x, *, dtype=None, mask=None, **kwargs):
    """A 2-D tile [P, F] transposed to [F, P]."""
    return _t.transpose(x, dtype=dtype, mask=mask)


def where(condition, x, y, *, dtype=None, mask=None, **kwargs):
    """``x`` where ``condition`` is non-zero, else ``y``."""
    return _t.select(condition, x, y, dtype=dtype, mask=mask)


def expand_dims(data, axis):
    """A view of ``data`` with a size-1 dimension inserted at ``axis``."""
    shape = list(data.shape)
    shape.insert(axis if axis >= 0 else len(shape) + 1 + axis, 1)
    return data.reshape(tuple(shape))



# ---------------------------------------------------------------- more math

tan = _unary(_ir.ACT_TAN, "Element-wise tangent.")
arctan = _unary(_ir.ACT_ARCTAN, "Element-wise inverse tangent.")
gelu_dx = _unary(_ir.ACT_GELU_DX,
                 "Derivative of gelu (erf form): Phi(x) + x * phi(x).")
gelu_apprx_sigmoid = _unary(_ir.ACT_GELU_SIGMOID,
                            "GELU with the sigmoid approximation: x * sigmoid(1.702 * x).")
silu_dx = _unary(_ir.ACT_SILU_DX,
                 "Derivative of silu: sigmoid(x) * (1 + x * (1 - sigmoid(x))).")
erf_dx = _unary(_ir.ACT_ERF_DX, "Derivative of erf: 2 / sqrt(pi) * exp(-x ** 2).")
mish = _unary(_ir.ACT_MISH, "Mish: x * tanh(softplus(x)).")


def softmax(x, axis, *, dtype=None, compute_dtype=None, mask=None, **kwargs):
    """Softmax along the free ``axis`` (or axes): ``exp(x - max) / sum``,
    computed in ``compute_dtype`` (as NKI: the same as ``dtype``; float32
    when neither is given) and returned in ``dtype`` (default: x's)."""
    _require("nl.softmax")
    cd = _dt.normalize(compute_dtype or dtype or _dt.float32)
    m = _t.reduce(x, _ir.ALU_MAXIMUM, axis, dtype=cd, mask=mask, keepdims=True)
    e = _t.activation(_t.tensor_tensor(x, m, _ir.ALU_SUBTRACT, dtype=cd, mask=mask),
                      _ir.ACT_EXP, dtype=cd, mask=mask)
    s = _t.reduce(e, _ir.ALU_ADD, axis, dtype=cd, mask=mask, keepdims=True)
    return _t.tensor_tensor(e, s, _ir.ALU_DIVIDE, dtype=_dt.normalize(dtype or x.dtype),
                            mask=mask)


def rms_norm(x, w, axis, n, epsilon=1e-06, *, dtype=None, compute_dtype=None, mask=None,
             **kwargs):
    """Root mean square normalization: ``x / sqrt(sum(x * x, axis) / n +
    epsilon) * w`` (``w`` broadcast to x's shape)."""
    _require("nl.rms_norm")
    cd = _dt.normalize(compute_dtype or dtype or _dt.float32)
    sq = _t.tensor_tensor(x, x, _ir.ALU_MULTIPLY, dtype=cd, mask=mask)
    ss = _t.reduce(sq, _ir.ALU_ADD, axis, dtype=cd, mask=mask, keepdims=True)
    ms = _t.tensor_tensor(ss, 1.0 / float(n), _ir.ALU_MULTIPLY, dtype=cd, mask=mask)
    r = _t.activation(_t.tensor_tensor(ms, float(epsilon), _ir.ALU_ADD, dtype=cd, mask=mask),
                      _ir.ACT_RSQRT, dtype=cd, mask=mask)
    y = _t.tensor_tensor(x, r, _ir.ALU_MULTIPLY, dtype=cd, mask=mask)
    return _t.tensor_tensor(y, w, _ir.ALU_MULTIPLY, dtype=_dt.normalize(dtype or x.dtype),
                            mask=mask)


# ---------------------------------------------------------------- random

def rand(shape, dtype=_dt.float32, **kwargs):
    """A new SBUF tile of uniform random values in [0, 1).

    nkid's generator is counter based: each program starts as if it called
    ``nl.random_seed(p)`` (p its index in the launch grid); the same seed
    gives the same numbers on every run."""
    b = _require("nl.rand")
    shape, par = _shape_par(shape)
    if par:
        raise NKIError("nl.rand makes a tile: its partition dimension comes first" + _loc())
    return _t._result(b, _ir.OP_RAND, shape, _dt.normalize(dtype), [], {},
                      [])


def random_seed(seed, *, mask=None, **kwargs):
    """Seed the random number generator (nl.rand, nl.dropout): ``seed`` a
    32-bit integer or a tile whose first element is used.  The same seed
    gives the same sequence."""
    b = _require("nl.random_seed")
    if isinstance(seed, NkiTensor):
        ma = _t.mask_affs(mask, _t.op_shape(seed.shape))
        src = _t._operand(b, seed, None, ma)
    else:
        i = _as_index(seed)
        if i is None or not i.is_const() or i.shape:
            raise NKIError("nl.random_seed expects an integer or a tile, got %r%s"
                           % (seed, _loc()))
        src = float(i.aff.c)
    b.emit(Op(_ir.OP_RANDOM_SEED, b.loc_here(), None, [src]))


def dropout(x, rate, *, dtype=None, mask=None, **kwargs):
    """Zero each element of ``x`` with probability ``rate`` (a scalar, or a
    tile with one value per partition); the others are kept unscaled.  The
    same instruction as ``nisa.dropout``, drawing from the program's random
    stream (nl.random_seed)."""
    _require("nl.dropout")
    return _isa_dropout(x, prob=rate, dtype=dtype, mask=mask)


# ---------------------------------------------------------------- gather, atomics

def gather_flattened(data, indices, *, mask=None, dtype=None, **kwargs):
    """``result[p, ...] = data[p].flatten()[indices[p, ...]]``: up to 128
    parallel gathers over the flattened free dimensions of ``data``
    (``indices`` an integer tile with data's partitions).  An index out of
    bounds gives garbage: nkid returns the dtype's uninitialized value
    (NaN for floats)."""
    b = _require("nl.gather_flattened")
    for what, v in (("data", data), ("indices", indices)):
        if not isinstance(v, NkiTensor):
            raise NKIError("nl.gather_flattened expects %s to be a tile, got %r%s"
                           % (what, v, _loc()))
    if _dt.is_float(indices.dtype):
        raise NKIError("indices of nl.gather_flattened must be uint32, got %s%s"
                       % (_dt.name_of(indices.dtype), _loc()))
    ma = _t.mask_affs(mask, indices.shape)
    srcs = [_t._operand(b, data, None, ()), _t._operand(b, indices, None, ma)]
    return _t._result(b, _ir.OP_GATHER_FLAT, indices.shape,
                      _dt.normalize(dtype or data.dtype), srcs, {}, ma)


def atomic_rmw(dst, value, op, *, mask=None, **kwargs):
    """``dst = op(dst, value)`` as one atomic read-modify-write on HBM;
    ``dst`` indexed by a tile (indirect dynamic indexing), ``op`` np.add."""
    _require("nl.atomic_rmw")
    if op not in (np.add, add):
        raise NKIError("nl.atomic_rmw only supports np.add, got %r%s" % (op, _loc()))
    _indirect.atomic_rmw(dst, value, mask=mask)


# ---------------------------------------------------------------- constants

def shared_constant(constant, dtype=None, **kwargs):
    """A new HBM tensor holding ``constant`` (a numpy array, or the path of
    a ``.npy`` file as NKI 0.6 takes), converted to ``dtype``; nkid puts
    the values in the kernel's IR."""
    b = _require("nl.shared_constant")
    if isinstance(constant, (str, os.PathLike)):
        b.files_read.append(os.fspath(constant))
        try:
            constant = np.load(constant, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise NKIError("nl.shared_constant cannot read '%s': %s%s"
                           % (os.fspath(constant), e, _loc())) from None
    a = np.asarray(constant)
    if a.ndim < 1:
        a = a.reshape(1)
    dt = _dt.normalize(dtype if dtype is not None else a.dtype)
    host = _dt.host_dtype(dt)
    data = np.ascontiguousarray(a.astype(host)).tobytes()   # little-endian hosts
    t = _t.new_hbm(a.shape, dt, _ir.SPACE_SHARED_HBM, _t._guess_name() or "constant",
                   _ir.FILL_DATA)
    b.tensors[t._tid].data = data
    return t


def shared_identity_matrix(n, dtype=_dt.uint8, **kwargs):
    """A new HBM n x n identity matrix of ``dtype``."""
    return shared_constant(np.identity(int(n)), dtype=dtype)


class fp32:
    """FP32 constants: ``min`` is the most negative float32 (bit pattern
    0xff7fffff)."""

    min = float(np.finfo(np.float32).min)


class bfp16:
    """BFLOAT16 constants: ``min`` is the most negative bfloat16 (0xff7f)."""

    min = float(_dt.bfloat16.type(-3.3895313892515355e38))


def finfo(dtype):
    """Machine limits of a float dtype (``numpy.finfo``; ml_dtypes' for
    bfloat16 and fp8)."""
    dt = _dt.normalize(dtype)
    return ml_dtypes.finfo(_dt.host_dtype(dt))


# ---------------------------------------------------------------- reductions

def _alu_of(op, what):
    table = {np.add: _ir.ALU_ADD, add: _ir.ALU_ADD, np.multiply: _ir.ALU_MULTIPLY,
             multiply: _ir.ALU_MULTIPLY, np.maximum: _ir.ALU_MAXIMUM,
             maximum: _ir.ALU_MAXIMUM, np.max: _ir.ALU_MAXIMUM, max: _ir.ALU_MAXIMUM,
             np.amax: _ir.ALU_MAXIMUM, np.minimum: _ir.ALU_MINIMUM,
             minimum: _ir.ALU_MINIMUM, np.min: _ir.ALU_MINIMUM, min: _ir.ALU_MINIMUM,
             np.amin: _ir.ALU_MINIMUM}
    try:
        return table[op]
    except (KeyError, TypeError):
        raise NKIError("unsupported reduce operation %r for %s (np.add, np.multiply,"
                       " np.maximum or np.minimum)%s" % (op, what, _loc())) from None


_IDENTITY = {_ir.ALU_ADD: 0.0, _ir.ALU_MULTIPLY: 1.0,
             _ir.ALU_MAXIMUM: float("-inf"), _ir.ALU_MINIMUM: float("inf")}


def loop_reduce(x, op, loop_indices, *, dtype=None, mask=None, **kwargs):
    """Reduce ``x`` with ``op`` over the iterations of the loops of
    ``loop_indices``: the destination is also the rhs input of ``op``.

    Assigned into a tile (``acc[...] = nl.loop_reduce(x, np.add, [k])``) it
    is ``acc[...] = op(acc[...], x)``.  Bound to a name, the result is an
    accumulator that starts at op's identity before the outermost of those
    loops and holds the reduction after it."""
    b = _require("nl.loop_reduce")
    alu = _alu_of(op, "nl.loop_reduce")
    if not isinstance(x, NkiTensor):
        raise NKIError("nl.loop_reduce expects a tile, got %r%s" % (x, _loc()))
    if not isinstance(loop_indices, (tuple, list)):
        loop_indices = [loop_indices]
    outer = None
    for i in loop_indices:
        e = _as_index(i)
        if e is None:
            raise NKIError("loop_indices of nl.loop_reduce must be loop indices or"
                           " numbers, got %r%s" % (i, _loc()))
        keys = [k for k in e.aff.t if not isinstance(k, int) and k[0] == "l"]
        for k in keys:
            if outer is None or k[1] < outer:
                outer = k[1]        # loop variables are numbered outside in
    loc = b.loc_here()
    dtype = _dt.normalize(dtype or x.dtype)
    acc = b.loop_reduce.get((loc, outer))
    if acc is None or acc.shape != x.shape or acc.dtype != dtype:
        acc = _t.new_tile(x.shape, dtype, _ir.SPACE_SBUF, _t._guess_name(), loc=loc)
        body = b.loop_body(outer) if outer is not None else None
        init = Op(_ir.OP_ALLOC, loc, acc._access(_t.op_shape(acc.shape)), (),
                  {"fill": _ir.FILL_VALUE, "value": _IDENTITY[alu]})
        body = body if body is not None else b.cur_body
        body.append(init)
        b.tensors[acc._tid].written = True
        b.loop_reduce[(loc, outer)] = acc

        def undo(body=body, init=init, key=(loc, outer)):
            # assigned into a tile: that tile accumulates, not this one
            b.loop_reduce.pop(key, None)
            for j in range(len(body) - 1, -1, -1):
                if body[j] is init:
                    del body[j]
                    break
    else:
        undo = None
    oshape = _t.op_shape(x.shape)
    ma = _t.mask_affs(mask, oshape)
    out = NkiTensor(acc._tid, acc.shape, acc.dtype, acc._imap, acc._space, acc.name)
    d = acc._access(oshape, ma)
    srcs = [acc._access(oshape, ma), _t._operand(b, x, oshape, ma)]
    b.note_read(srcs[0])
    fields = {"alu": alu, "_dst_srcs": (0,)}
    if undo is not None:
        fields["_undo"] = undo
    out._producer = b.emit(Op(_ir.OP_TENSOR_TENSOR, loc, d, srcs, fields))
    b.note_write(d)
    return out


def all_reduce(x, op, program_axes, *, dtype=None, mask=None, parallel_reduce=True,
               asynchronous=False, **kwargs):
    """Reduce ``x`` with ``op`` over the programs of the launch grid that
    differ only along ``program_axes``; every one of them gets the result.
    nkid runs such a kernel's programs side by side (one thread each, at
    most 64 programs)."""
    b = _require("nl.all_reduce")
    alu = _alu_of(op, "nl.all_reduce")
    if not isinstance(x, NkiTensor):
        raise NKIError("nl.all_reduce expects a tile, got %r%s" % (x, _loc()))
    axes = program_axes if isinstance(program_axes, (tuple, list)) else [program_axes]
    axes = sorted(set(int(a) for a in axes))
    for a in axes:
        if not 0 <= a < len(b.grid):
            raise NKIError("program axis %d of nl.all_reduce is outside the launch grid of"
                           " %d dimension(s)%s" % (a, len(b.grid), _loc()))
    oshape = _t.op_shape(x.shape)
    ma = _t.mask_affs(mask, oshape)
    return _t._result(b, _ir.OP_ALL_REDUCE, x.shape, _dt.normalize(dtype or x.dtype),
                      [_t._operand(b, x, oshape, ma)], {"alu": alu, "axes": axes}, ma)


__all__ = [n for n in dir() if not n.startswith("_") and n not in ("np",)]
