"""nkid.nki.language: the NKI language (``import nkid.nki.language as nl``).

Mirrors ``neuronxcc.nki.language``.  Every function here is traced: called
from a kernel it records NKIR ops (see ``nkid.tracer``); called outside a
kernel it raises.  Tiles returned by these functions are
:class:`nkid.tracer.tensor.NkiTensor` objects.

Loops: ``affine_range``, ``sequential_range`` and ``static_range`` are traced
once, with a symbolic loop variable, into one NKIR loop.  A Python ``range``
inside a kernel is ordinary Python and unrolls.
"""

import numpy as np

from .._proto import nkir_pb2 as _ir
from ..errors import NKIError
from ..tracer import dtypes as _dt
from ..tracer import tensor as _t
from ..tracer.affine import (IndexExpr, Predicate, arange as _arange, mgrid,
                             loop_var as _loop_var, program_var as _program_var,
                             as_index as _as_index)
from ..tracer.builder import require as _require, current as _current, loc_suffix as _loc
from ..tracer.tensor import NkiTensor, ParDim, sbuf, psum, hbm, shared_hbm, private_hbm

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
    if isinstance(buffer, _t.Buffer):
        return buffer
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
        t = _t.new_tile(shape, dtype, buf.space, name, par, loc=loc)
        b.alloc(t._tid, fill, value, loc=loc)
        return t
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
        if len(args) == 1:
            start, stop, step = 0, args[0], 1
        elif len(args) == 2:
            (start, stop), step = args, 1
        elif len(args) == 3:
            start, stop, step = args
        else:
            raise TypeError("%s expects 1 to 3 arguments" % self._label)
        vals = []
        for v in (start, stop, step):
            i = _as_index(v)
            if i is None or not i.is_const() or i.shape:
                raise NKIError("nl.%s bounds must be compile-time integers, got %r%s"
                               % (self._label, v, _loc()))
            vals.append(i.aff.c)
        self.start, self.stop, self.step = vals
        if self.step == 0:
            raise ValueError("nl.%s step must not be zero" % self._label)

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
    """Loop unrolled by NKI's compiler (kept as a loop in NKIR)."""

    _kind = _ir.LOOP_STATIC
    _label = "static_range"


# ---------------------------------------------------------------- SPMD

class nc:
    """``nl.nc(n)``: a launch-grid dimension spread over n NeuronCores.

    nkid's cpu backend runs every program of the grid; ``nl.nc(2)`` only
    multiplies the grid dimension it appears in."""

    def __init__(self, n):
        self.n = int(n)

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
        n = 1
        for d in dims:
            n *= int(d)
        self.n = n

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
    if len(src.shape) != 2:
        raise NKIError("load_transpose2d needs a 2-D tensor" + _loc())
    from ..tracer.affine import Aff
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
    from ..tracer.builder import Op
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
invert = logical_not


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


__all__ = [n for n in dir() if not n.startswith("_") and n not in ("np",)]
