"""nkid.nki06.language: NKI 0.6's ``nki.language`` (``import nki.language as nl``).

The 0.6 language keeps most of the legacy one's functions with the same
meaning (``nl.add(x, y, dtype=None)`` returns a new tile, ``nl.load``,
``nl.store``, ``nl.matmul``, the reductions, ...): those are the legacy
implementations themselves (``nkid.nki.language``), so both languages
emit the same NKIR.  What 0.6 changed is here: creation functions take
``buffer`` positionally and default to ``nl.sbuf``; ``program_id(axis=0)``
and ``num_programs(axes=0)``; the loops ``fori_loop`` / ``while_loop`` /
``dynamic_range``; ``abs_max`` / ``abs_min``; the memory-space predicates;
the operator constants ``average``, ``prelu``, ``bypass``; ``tile_size``
with 0.6's names; and masks are gone (NKI 0.6 has no ``mask=``).
"""

import contextlib
import functools

import numpy as np

from .._proto import nkir_pb2 as _ir
from ..errors import NKIError
from ..nki import isa as _I
from ..nki import language as _L
from ..tracer import dtypes as _dt
from ..tracer import tensor as _t
from ..tracer.affine import Aff, as_index as _as_index
from ..tracer.builder import loc_suffix as _loc, current as _current
from . import _lang, _tensor

_tensor.install()

# ---------------------------------------------------------------- shared with the legacy language

from ..nki.language import (  # noqa: E402,F401
    float32, float16, bfloat16, tfloat32, float8_e4m3, float8_e4m3fn, float8_e5m2,
    int8, int16, int32, uint8, uint16, uint32, bool_,
    sbuf, psum, hbm, shared_hbm, private_hbm,
    add, subtract, multiply, divide, maximum, minimum, power, fmod, mod,
    equal, not_equal, greater, greater_equal, less, less_equal,
    logical_and, logical_or, logical_xor, logical_not,
    bitwise_and, bitwise_or, bitwise_xor, invert, left_shift, right_shift,
    exp, log, square, sqrt, rsqrt, reciprocal, tanh, sigmoid, relu, gelu, gelu_apprx_tanh,
    silu, negative, abs, sign, sin, cos, erf, softplus, ceil, floor, trunc,
    tan, arctan, gelu_dx, gelu_apprx_sigmoid, silu_dx, erf_dx, mish,
    sum, prod, max, min, mean, var, all,
    matmul, transpose, where, expand_dims, ds, static_range,
    load, store, load_transpose2d, copy, program_ndim, device_print as _device_print,
    random_seed, gather_flattened, shared_constant,
)

NkiTensor = _t.NkiTensor
tile = NkiTensor


def _positional(f, names):
    """f with NKI 0.6's signature: the parameters after the legacy
    function's positional ones (``dtype``, ``keepdims``, ``transpose_x``)
    may be given positionally too.  Registered in the instruction tables
    as f is, so ``op=nl.add`` still names the ALU operation."""
    fixed = _npos[f]

    @functools.wraps(f)
    def call(*args, **kwargs):
        extra = args[fixed:]
        if len(extra) > len(names):
            raise TypeError("%s() takes at most %d positional arguments (%d given)"
                            % (f.__name__, fixed + len(names), len(args)))
        for n, v in zip(names, extra):
            if n in kwargs:
                raise TypeError("%s() got multiple values for argument '%s'"
                                % (f.__name__, n))
            kwargs[n] = v
        return f(*args[:fixed], **kwargs)
    for table in (_I._ALU, _I._ACT):
        if f in table:
            table.setdefault(call, table[f])
    if hasattr(f, "act"):
        call.act = f.act
    return call


_npos = {}

#: NKI 0.6's MX scale dtype (8-bit exponent, bias 127, 0xff NaN) and
#: packed MX dtypes (four float8/float4 values an element; host arrays of
#: them are uint32 / uint16 holding their bytes: nkid.tracer.dtypes).
float8_e8m0fnu = _dt.float8_e8m0fnu
float8_e5m2_x4 = _dt.float8_e5m2_x4
float8_e4m3fn_x4 = _dt.float8_e4m3fn_x4
float4_e2m1fn_x4 = _dt.float4_e2m1fn_x4

DType = object

for _n in ("add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "fmod", "mod",
           "equal", "not_equal", "greater", "greater_equal", "less", "less_equal",
           "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
           "bitwise_xor", "left_shift", "right_shift"):
    _npos[globals()[_n]] = 2
    globals()[_n] = _positional(globals()[_n], ("dtype",))
for _n in ("exp", "log", "square", "sqrt", "rsqrt", "reciprocal", "tanh", "sigmoid", "relu",
           "gelu", "gelu_apprx_tanh", "silu", "negative", "abs", "sign", "sin", "cos", "erf",
           "softplus", "ceil", "floor", "trunc", "tan", "arctan", "gelu_dx",
           "gelu_apprx_sigmoid", "silu_dx", "erf_dx", "mish", "logical_not", "invert", "copy",
           "transpose", "load", "load_transpose2d"):
    _npos[globals()[_n]] = 1
    globals()[_n] = _positional(globals()[_n], ("dtype",))
for _n in ("sum", "prod", "max", "min", "mean", "var"):
    _npos[globals()[_n]] = 2
    globals()[_n] = _positional(globals()[_n], ("dtype", "keepdims"))
_npos[all] = 2
all = _positional(all, ("dtype",))  # noqa: A001
_npos[where] = 3
where = _positional(where, ("dtype",))
_npos[matmul] = 2
matmul = _positional(matmul, ("transpose_x",))
del _n


class MemoryRegion:
    """The type of ``nl.sbuf``, ``nl.psum``, ``nl.hbm``, ... (their class)."""


class NKIObject:
    """Base class of objects a NKI kernel may create (NKI 0.6)."""

    def __init__(self, *args, **kwargs):
        pass


def is_psum(buffer):
    """True if ``buffer`` is PSUM."""
    return getattr(buffer, "space", None) == _ir.SPACE_PSUM


def is_sbuf(buffer):
    """True if ``buffer`` is SBUF."""
    return getattr(buffer, "space", None) == _ir.SPACE_SBUF


def is_hbm(buffer):
    """True if ``buffer`` is device memory (hbm, private_hbm, shared_hbm)."""
    return getattr(buffer, "space", None) in (_ir.SPACE_HBM, _ir.SPACE_SHARED_HBM)


def is_on_chip(buffer):
    """True if ``buffer`` is SBUF or PSUM."""
    return is_psum(buffer) or is_sbuf(buffer)


# ---------------------------------------------------------------- operator constants

def _not_callable(name, what):
    class _Op:
        __slots__ = ()

        def __repr__(self):
            return "nl.%s" % name

        def __call__(self, *a, **k):
            raise NKIError("nl.%s is an operator constant (%s) for nki.isa instructions,"
                           " not a function%s" % (name, what, _loc()))
    return _Op()


#: the average reduction (nisa.tensor_reduce(op=nl.average))
average = _not_callable("average", "average of the reduced elements")
#: the parametric relu activation (nisa.activation(op=nl.prelu) / activate2)
prelu = _not_callable("prelu", "x if x > 0 else alpha * x")
#: the pass-through ALU operator (the operand ignored)
bypass = _not_callable("bypass", "returns its first input")


class _TileSize:
    """Hardware tile size constants (NKI 0.6's ``nl.tile_size``)."""

    pmax = 128
    psum_fmax = 512
    psum_bank_fmax = 512
    psum_bank_fmax_bytes = 2048
    gemm_stationary_fmax = 128
    gemm_moving_fmax = 512
    bn_stats_fmax = 512
    psum_min_align = 4
    sbuf_min_align = 1
    psum_max = 2 * 1024 * 8

    @property
    def psum_num_banks(self):
        return 8

    @property
    def sbuf_fmax_bytes(self):
        t = getattr(_current(), "target", "") or ""
        return {"trn2": 192 * 1024, "trn3": 224 * 1024}.get(t, 176 * 1024)

    @property
    def sbuf_fmax(self):
        return self.sbuf_fmax_bytes // 4

    @property
    def sbuf_size_bytes(self):
        return self.sbuf_fmax_bytes * self.pmax

    @property
    def total_available_sbuf_size(self):
        return self.sbuf_fmax_bytes


tile_size = _TileSize()


# ---------------------------------------------------------------- creation

def _mx(dtype):
    return dtype


def _buf(buffer):
    if isinstance(buffer, str):
        raise NKIError("buffer must be nl.sbuf, nl.psum, nl.hbm, nl.private_hbm or"
                       " nl.shared_hbm, not the string %r (NKI 0.3+ takes buffer objects)%s"
                       % (buffer, _loc()))
    return buffer


def _flat(make, shape, buffer, *args, **kwargs):
    """An on-chip tensor of rank > 2 is one [P, F...] block of storage in
    NKI 0.6 (no block dimensions): made as a [P, prod(F)] tile and handed
    back as a view of ``shape``, so views that merge its free dimensions
    again stay affine."""
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(int(s) for s in shape)
    buf = _buf(buffer)
    if len(shape) > 2 and is_psum(buf):
        t = _psum_banks(make, shape, buf, *args, **kwargs)
        if t is not None:
            return t
    if len(shape) > 2 and is_on_chip(buf):
        t = make((shape[0], int(np.prod(shape[1:]))), *args, buffer=buf, **kwargs)
        return t.reshape(shape)
    return make(shape, *args, buffer=buf, **kwargs)


def _psum_banks(make, shape, buf, dtype, **kwargs):
    """A PSUM tensor larger than a bank (2 KiB per partition) whose inner
    free dimensions fill exactly one bank, ``(P, 4, 512)`` float32: one
    logical tile per bank (NKIR block dimensions, so each bank keeps the
    2 KiB limit), viewed with ``shape``. None when it is not such a tensor."""
    esize = _dt.itemsize(_dt.normalize(dtype))
    bank = 2048 // esize
    if int(np.prod(shape[1:])) * esize <= 2048:
        return None
    for k in range(len(shape) - 1, 1, -1):
        if int(np.prod(shape[k:])) == bank:
            break
    else:
        return None
    nblk = int(np.prod(shape[1:k]))
    t = make((nblk, _L.par_dim(shape[0]), bank), dtype, buffer=buf, **kwargs)
    blk, col = Aff(0), Aff(0)
    st = 1
    for j in range(k - 1, 0, -1):
        blk = blk + Aff.axis(j, st)
        st *= shape[j]
    st = 1
    for j in range(len(shape) - 1, k - 1, -1):
        col = col + Aff.axis(j, st)
        st *= shape[j]
    return NkiTensor(t._tid, shape, t.dtype, [Aff.axis(0), blk, col], t._space, t.name)


def ndarray(shape, dtype, buffer=sbuf, name="", address=None):
    """A new uninitialized tensor of ``shape``/``dtype`` in ``buffer``
    (default SBUF); ``address`` (a placement) does not change results."""
    _lang.require("nl.ndarray")
    return _flat(_L.ndarray, shape, buffer, _mx(dtype), name=name)


def zeros(shape, dtype, buffer=sbuf, name=""):
    """A new tensor filled with zeros."""
    _lang.require("nl.zeros")
    return _flat(_L.zeros, shape, buffer, _mx(dtype), name=name)


def ones(shape, dtype, buffer=sbuf, name=""):
    """A new tensor filled with ones."""
    _lang.require("nl.ones")
    return _flat(_L.ones, shape, buffer, _mx(dtype), name=name)


def full(shape, fill_value, dtype, buffer=sbuf, name=""):
    """A new tensor filled with ``fill_value``."""
    _lang.require("nl.full")
    return _flat(lambda s, *a, **k: _L.full(s, fill_value, *a, **k), shape, buffer,
                 _mx(dtype), name=name)


def zeros_like(x, dtype=None, buffer=None, name=""):
    """Zeros with ``x``'s shape (and dtype and buffer unless given)."""
    _lang.require("nl.zeros_like")
    return _flat(_L.zeros, x.shape, buffer or x.buffer, dtype or x.dtype, name=name)


def empty_like(x, dtype=None, buffer=None, name=""):
    """An uninitialized tensor with ``x``'s shape (dtype, buffer)."""
    _lang.require("nl.empty_like")
    return _flat(_L.ndarray, x.shape, buffer or x.buffer, dtype or x.dtype, name=name)


def rand(shape, dtype, buffer=sbuf, name=""):
    """A new SBUF tile of uniform random values in [0, 1)."""
    _lang.require("nl.rand")
    if buffer is not None and not is_sbuf(buffer):
        raise NKIError("nl.rand makes an SBUF tile, got buffer %r%s" % (buffer, _loc()))
    return _L.rand(shape, dtype)


def shared_identity_matrix(n, dtype=uint8, dst=None):
    """An n x n identity matrix of ``dtype`` in SBUF, as 0.6 documents it
    (``dst`` when given); n above 128 partitions stays the HBM constant."""
    _lang.require("nl.shared_identity_matrix")
    m = _L.shared_identity_matrix(n, dtype=dtype)
    if dst is None:
        if n > 128:
            return m
        dst = ndarray((n, n), dtype=dtype, buffer=sbuf)
    _I.dma_copy(dst=dst, src=m)
    return dst


def broadcast_to(x, shape, dtype=None):
    """``x`` broadcast to ``shape`` (size-1 dims, the partition dim too)."""
    v = x.broadcast_to(shape)
    return v if dtype is None else copy(v, dtype=dtype)


# ---------------------------------------------------------------- math 0.6 adds

def abs_max(x, y, dtype=None):
    """Element-wise: ``x`` if ``|x| > |y|`` else ``y`` (the signed value)."""
    _lang.require("nl.abs_max")
    _lang.needs(4, "nl.abs_max")
    gt = greater(abs(x, dtype=float32), abs(y, dtype=float32), dtype=float32)
    return where(gt, x, y, dtype=dtype or _promoted(x, y))


def abs_min(x, y, dtype=None):
    """Element-wise: ``x`` if ``|x| < |y|`` else ``y`` (the signed value)."""
    _lang.require("nl.abs_min")
    _lang.needs(4, "nl.abs_min")
    lt = less(abs(x, dtype=float32), abs(y, dtype=float32), dtype=float32)
    return where(lt, x, y, dtype=dtype or _promoted(x, y))


def _promoted(x, y):
    dx = getattr(x, "dtype", None)
    dy = getattr(y, "dtype", None)
    if dx is None:
        return dy
    if dy is None:
        return dx
    return _dt.promote(dx, dy)


def gelu_apprx_sigmoid_dx(x, dtype=None):
    """Derivative of ``x * sigmoid(1.702 x)``:
    ``s + 1.702 x s (1 - s)``, s = sigmoid(1.702 x)."""
    _lang.require("nl.gelu_apprx_sigmoid_dx")
    s = _t.activation(x, _ir.ACT_SIGMOID, dtype=float32, scale=1.702)
    one_minus = _t.tensor_tensor(1.0, s, _ir.ALU_SUBTRACT, dtype=float32)
    xs = _t.tensor_tensor(x, s, _ir.ALU_MULTIPLY, dtype=float32)
    t = _t.tensor_tensor(xs, one_minus, _ir.ALU_MULTIPLY, dtype=float32)
    t = _t.tensor_tensor(t, 1.702, _ir.ALU_MULTIPLY, dtype=float32)
    return _t.tensor_tensor(s, t, _ir.ALU_ADD, dtype=dtype or x.dtype)


def softmax(x, axis=-1, dtype=None):
    """Softmax along the free ``axis`` (default the last)."""
    if isinstance(axis, int) and axis < 0:
        axis = len(x.shape) + axis
    return _L.softmax(x, axis, dtype=dtype)


def rms_norm(x, w, axis, n, epsilon=1e-06, dtype=None, compute_dtype=None):
    """``x / sqrt(sum(x * x, axis) / n + epsilon) * w``."""
    return _L.rms_norm(x, w, axis, n, epsilon, dtype=dtype, compute_dtype=compute_dtype)


def dropout(x, rate, dtype=None):
    """Zero each element of ``x`` with probability ``rate``."""
    return _L.dropout(x, rate, dtype=dtype)


def device_print(print_prefix, tensor):
    """Print ``print_prefix`` and ``tensor``'s values when the kernel runs
    in simulation."""
    return _device_print(print_prefix, tensor)


# ---------------------------------------------------------------- SPMD

def program_id(axis=0):
    """The index of this program along launch-grid ``axis`` (default 0):
    the Python int 0 on an axis of one program (``kernel[1]``), as without
    a grid, so that Python arithmetic on it (min(), if) works there."""
    pid = _L.program_id(axis)
    b = _current()
    if b is not None and b.grid and b.grid[int(axis)] == 1:
        return 0
    return pid


def num_programs(axes=0):
    """The number of programs along ``axes`` (default axis 0; None: all)."""
    return _L.num_programs(axes)


# ---------------------------------------------------------------- loops

def _traced_loop(rng):
    """The legacy tracer's loop, then the 0.6 bookkeeping at its end (an
    accumulation group's zero moved out: _lang.hoist_fills)."""
    b = _current()
    yield from _L._Range.__iter__(rng)
    if b is not None:
        _lang.hoist_fills(b)


class affine_range(_L.affine_range):
    """Loop whose iterations are independent: traced once into one NKIR
    loop (``nl.affine_range(start, stop=None, step=1)``), or unrolled when
    the kernel needs Python values of its index (see nkid.nki06)."""

    def __iter__(self):
        if _lang.unrolling():
            r = range(self.start, self.stop, self.step)
            _lang.unrolled_trips(len(r))
            return iter(r)
        return _traced_loop(self)


class sequential_range(_L.sequential_range):
    """Loop with a dependency carried across iterations (traced as
    ``affine_range`` is)."""

    def __init__(self, start, stop=None, step=1, **kwargs):
        args = (start,) if stop is None else (start, stop, step)
        super().__init__(*args, **kwargs)

    def __iter__(self):
        if _lang.unrolling():
            r = range(self.start, self.stop, self.step)
            _lang.unrolled_trips(len(r))
            return iter(r)
        return _traced_loop(self)


def dynamic_range(start, stop=None, step=1):
    """A device loop (deprecated in 0.6 for ``nl.fori_loop``): constant
    bounds trace as ``sequential_range``; a register bound makes the for's
    body one OP_DYN_LOOP, ``i`` its read-only counter register."""
    b = _lang.require("nl.dynamic_range")
    reg = _lang.registers
    if stop is None:
        start, stop = 0, start
    st = _step(step)
    if isinstance(start, reg.VirtualRegister) or isinstance(stop, reg.VirtualRegister):
        if _no_reorder_depth():
            raise NKIError("nl.dynamic_range cannot sit inside an nl.no_reorder() block"
                           + _loc())
        return reg.dyn_range(b, start, stop, st)
    return sequential_range(start, stop, st)


def _step(step):
    i = _as_index(step)
    if i is None or not i.is_const() or i.shape or i.aff.c <= 0:
        raise NKIError("The loop step must be a positive compile-time integer, got %r%s"
                       % (step, _loc()))
    return i.aff.c


def fori_loop(lower, upper, body_fun, step=1):
    """``for i in range(lower, upper, step): body_fun(i)``; ``i`` is a
    read-only register (use it as ``.ap(scalar_offset=i)``).  Bounds that
    are integers trace one NKIR loop; a register bound runs the loop with
    the bound read when the loop starts (NKIR ``OP_DYN_LOOP``)."""
    b = _lang.require("nl.fori_loop")
    reg = _lang.registers
    st = _step(step)
    if _no_reorder_depth():
        raise NKIError("nl.fori_loop cannot sit inside an nl.no_reorder() block" + _loc())
    if isinstance(lower, reg.VirtualRegister) or isinstance(upper, reg.VirtualRegister):
        return reg.dyn_loop(b, lower, upper, st, body_fun)
    lo, hi = _as_index(lower), _as_index(upper)
    if lo is None or hi is None or lo.shape or hi.shape:
        raise NKIError("nl.fori_loop bounds must be integers or registers, got %r, %r%s"
                       % (lower, upper, _loc()))
    if _lang.unrolling():
        _lang.unrolled_trips(len(range(lo.aff.c, hi.aff.c, st)))
        for i in range(lo.aff.c, hi.aff.c, st):
            if body_fun(reg.VirtualRegister(_aff=_as_index(i).aff, frozen=True)) is not None:
                raise NKIError("The fori_loop body function cannot return a value" + _loc())
        return None
    var = b.begin_loop(_ir.LOOP_SEQUENTIAL, lo.aff.c, hi.aff.c, st)
    try:
        ret = body_fun(reg.loop_register(var))
    finally:
        b.end_loop(var)
    _lang.hoist_fills(b)
    if ret is not None:
        raise NKIError("The fori_loop body function cannot return a value" + _loc())


def while_loop(init, body_fun):
    """``r = init; while r != 0: r = body_fun(r)`` on a register condition
    (checked before each iteration)."""
    b = _lang.require("nl.while_loop")
    if _no_reorder_depth():
        raise NKIError("nl.while_loop cannot sit inside an nl.no_reorder() block" + _loc())
    return _lang.registers.while_loop(b, init, body_fun)


_reorder = {"depth": 0}


def _no_reorder_depth():
    return _reorder["depth"]


@contextlib.contextmanager
def no_reorder():
    """Keep the ops of the block in program order (nkid always does)."""
    _reorder["depth"] += 1
    try:
        yield
    finally:
        _reorder["depth"] -= 1


__all__ = [n for n in dir() if not n.startswith("_") and n not in ("np", "contextlib")]
