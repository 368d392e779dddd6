"""nkid.nki06.isa: NKI 0.6's ``nki.isa`` (``import nki.isa as nisa``).

Every instruction takes its destination first (``nisa.nc_matmul(dst,
stationary, moving)``, ``nisa.dma_copy(dst=..., src=...)``) and returns
nothing.  Each is the legacy instruction's NKIR (``nkid.nki.isa``: the
same op kinds, checks and words) made to write ``dst``: the op's result is
retargeted to the destination view when shapes allow (no copy), else
copied into it.  ``nc_matmul``'s ``accumulate=None`` is NKI's auto mode:
the first write of a PSUM location in an accumulation group overwrites,
later ones add (a group is a run of matmuls into the same view with no
access between but matmuls into other regions, or the trips of the loops
opened after the tile was declared whose variables its view does not use).

Registers (``register_alloc`` ...) are [1, 1] int32 SBUF tiles; a loop
register of ``nl.fori_loop`` with integer bounds is the loop variable.
"""

import functools
import sys as _sys
import types as _types
from enum import Enum, IntEnum

import numpy as np

from .._proto import nkir_pb2 as _ir
from ..errors import NKIError
from ..nki import isa as _I
from ..tracer import dtypes as _dt
from ..tracer import tensor as _t
from ..tracer import dynamic as _dyn
from ..tracer.affine import Aff, IndexExpr, loop_var as _loop_var
from ..tracer.builder import Op, loc_suffix as _loc, Access
from ..tracer.loc import caller_loc
from . import _lang, _tensor, _ti
from ._lang import (get_nc_version, hoist_fills as _hoist_fills, nc_version,  # noqa: F401
                    needs as _needs, next_loop_body as _next_loop_body,
                    touches as _touches)
from . import language as nl

_tensor.install()
NkiTensor = _t.NkiTensor
# 0.6's operator constants in the legacy instruction tables
_I._ALU.setdefault(nl.bypass, _ir.ALU_BYPASS)
_I._ALU.setdefault(nl.average, _ir.ALU_MEAN)


# ---------------------------------------------------------------- enums (0.6 values)

class engine(IntEnum):
    """Neuron Device engines."""

    tensor = 1
    vector = 5
    scalar = 2
    gpsimd = 3
    dma = 4
    sync = 6
    unknown = 0


# 0.6's module-level engine constants (documented as deprecated aliases of
# engine.<name>; nki-library still passes engine=nisa.scalar_engine)
tensor_engine = engine.tensor
vector_engine = engine.vector
scalar_engine = engine.scalar
gpsimd_engine = engine.gpsimd
unknown_engine = engine.unknown


class reduce_cmd(IntEnum):
    """Engine accumulator register commands."""

    idle = 0
    reset = 1
    reduce = 2
    reset_reduce = 3
    load_reduce = 4


class dge_mode(IntEnum):
    """Descriptor generation mode of a DMA."""

    unknown = 0
    swdge = 1
    hwdge = 2
    none = 3


class oob_mode(IntEnum):
    """Out-of-bounds handling of an indirect DMA."""

    error = 0
    skip = 1


class matmul_perf_mode(str, Enum):
    """Tensor Engine performance mode."""

    none = "none"
    double_row = "double_row"


class dma_engine(IntEnum):
    """The DMA engine of a transfer."""

    dma = 1
    gpsimd_dma = 2


class NkiValidationError(NKIError):
    """An instruction's documented limit broken."""


class NkiInstruction:
    """The handle an instruction call returns (scheduling: ``depends_on``)."""

    def __init__(self, handle=None):
        self.handle = handle

    def depends_on(self, *producers):
        """nkid runs instructions in program order: a no-op."""
        return self


def get_nc_sub_version():
    """The NeuronCore sub-version (0 for every target nkid models)."""
    return 0


_ENGINE = {engine.tensor: _I.engine.tensor, engine.vector: _I.engine.vector,
           engine.scalar: _I.engine.scalar, engine.gpsimd: _I.engine.gpsimd,
           engine.unknown: _I.engine.unknown, engine.dma: _I.engine.unknown,
           engine.sync: _I.engine.unknown}
_DGE = {dge_mode.unknown: _I.dge_mode.unknown, dge_mode.swdge: _I.dge_mode.swdge,
        dge_mode.hwdge: _I.dge_mode.hwdge, dge_mode.none: _I.dge_mode.none}
_RCMD = {reduce_cmd.idle: _I.reduce_cmd.idle, reduce_cmd.reset: _I.reduce_cmd.reset,
         reduce_cmd.reduce: _I.reduce_cmd.reduce,
         reduce_cmd.reset_reduce: _I.reduce_cmd.reset_reduce}


def _enum(cls, v, what):
    if isinstance(v, bool) or (isinstance(v, int) and not isinstance(v, cls)
                               and not isinstance(v, IntEnum)):
        raise NKIError("%s must be a member of nisa.%s, not the integer %r (NKI 0.3+ takes"
                       " the named enum members)%s" % (what, cls.__name__, v, _loc()))
    try:
        return cls(v)
    except (ValueError, TypeError):
        raise NKIError("%s must be a member of nisa.%s, got %r%s"
                       % (what, cls.__name__, v, _loc())) from None


def _rcmd06(v):
    """A 0.6 reduce_cmd as the legacy instruction's."""
    c = _enum(reduce_cmd, v, "reduce_cmd")
    if c == reduce_cmd.load_reduce:
        raise NKIError("reduce_cmd=load_reduce (the accumulators loaded from an operand) is"
                       " taken by tensor_scalar_cumulative and exponential only in nkid" + _loc())
    return _RCMD[c]


def _eng(e):
    return _ENGINE[_enum(engine, e, "engine")]


# ---------------------------------------------------------------- helpers

def _req(name):
    b = _lang.require("nisa.%s" % name)
    gen = _ARCH.get(name)
    if gen is not None:
        _needs(gen, "nisa." + name)
    return b


#: The instructions NKI documents for newer NeuronCores only (their version).
_ARCH = {"activate2": 4, "exponential": 4, "rand2": 4, "nc_matmul_mx": 4, "quantize_mx": 4,
         "rand_set_state": 3, "rand_get_state": 3, "core_barrier": 3, "range_select": 3,
         "sendrecv": 3, "nonzero_with_count": 3}


def _tile(x, arg, what):
    if not isinstance(x, NkiTensor):
        raise NKIError("'%s' of '%s' must be a tile, got %r%s" % (arg, what, x, _loc()))
    return x


_SPACE_NAME = {_ir.SPACE_SBUF: "sbuf", _ir.SPACE_PSUM: "psum", _ir.SPACE_HBM: "hbm",
               _ir.SPACE_SHARED_HBM: "hbm"}


def _space(x, arg, what, allowed):
    """NKI's memory-space check, in its words."""
    if x._space not in allowed:
        names = " or ".join("'%s'" % _SPACE_NAME[s] for s in allowed
                            if s != _ir.SPACE_SHARED_HBM)
        raise NKIError("Expected operand '%s' of '%s' to be in address space %s, but got a"
                       " tile in '%s' instead%s" % (arg, what, names, _SPACE_NAME[x._space],
                                                    _loc()))


_CHIP = (_ir.SPACE_SBUF, _ir.SPACE_PSUM)
_SB = (_ir.SPACE_SBUF,)
_ANY = (_ir.SPACE_SBUF, _ir.SPACE_PSUM, _ir.SPACE_HBM, _ir.SPACE_SHARED_HBM)


def _free(shape):
    n = 1
    for s in shape[1:]:
        n *= s
    return n


def _check_part(dst, x, arg, what):
    if isinstance(x, NkiTensor) and x.shape[0] != dst.shape[0] and x.shape[0] != 1:
        raise NKIError("number of partitions (dimension 0 size of a tile) mismatch in"
                       " parameters (dst%s, %s%s) of '%s'%s"
                       % (list(dst.shape), arg, list(x.shape), what, _loc()))


def _pmax(x, arg, what):
    if isinstance(x, NkiTensor) and x._space in _CHIP and x.shape and x.shape[0] > 128:
        raise NKIError("Size of partition dimension %d exceeds architecture limitation of 128"
                       " (operand '%s' of '%s')%s" % (x.shape[0], arg, what, _loc()))


def _same_shape_view(dst, shape):
    """``dst`` seen in ``shape`` (same partitions and elements per partition)."""
    if tuple(dst.shape) == tuple(shape):
        return dst
    if dst.shape[0] == shape[0] and _free(dst.shape) == _free(shape):
        try:
            return dst.reshape(tuple(shape))
        except Exception:
            return None
    return None


def _view_as(x, shape):
    """``x`` in ``shape`` when it has shape's partitions and elements, else ``x``."""
    v = _same_shape_view(x, shape) if isinstance(x, NkiTensor) else None
    return x if v is None else v


def _into(dst, value, what):
    """Write the fresh result ``value`` into ``dst`` (retargeting the op
    that made it when it can)."""
    if value is None:
        return
    if tuple(value.shape) != tuple(dst.shape):
        v = _same_shape_view(dst, value.shape)
        if v is None:
            if value.shape[0] == dst.shape[0] and _free(value.shape) == _free(dst.shape):
                value = value.reshape(tuple(dst.shape))
                v = dst
            else:
                raise NKIError("shape mismatch in '%s': dst has shape %s but the result has"
                               " shape %s%s" % (what, list(dst.shape), list(value.shape),
                                                _loc()))
        dst = v
    _t.assign(dst, value)


def _scalar_or_tile(x):
    return x if isinstance(x, NkiTensor) else float(x)


# ---------------------------------------------------------------- registers

class VirtualRegister(_tensor.VirtualRegisterLike):
    """A register: a [1, 1] int32 SBUF tile, or a loop's variable (static
    fori_loop)."""

    def __init__(self, state=None, frozen=False, _tile=None, _aff=None):
        self._tile = _tile
        self._aff = _aff
        self.frozen = frozen
        if _tile is None and _aff is None:
            _req("register_alloc")
            self._tile = nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf, name="register")
            _t.fill(self._tile, int(state or 0))

    def _index(self, what):
        if self._aff is not None:
            return self._aff.copy()
        return self._tile

    def _value_tile(self):
        """The register as a [1, 1] tile (a loop variable made an iota)."""
        if self._tile is not None:
            return self._tile
        return _t.iota_tile(IndexExpr((1, 1), self._aff.copy()), nl.int32)

    def __bool__(self):
        """``while reg:`` (NKI 0.2-0.5's dynamic while, deprecated in 0.6
        for nl.while_loop): the first test begins an OP_DYN_LOOP on the
        register and enters the body; the test at the end of the body (the
        same ``while`` line) ends the loop, so the body is traced once."""
        b = _req("while on a register")
        where = caller_loc()
        open_ = getattr(self, "_while", None)
        if open_ is not None and open_[0] == where:
            self._while = None
            _end_while(b, open_[1])
            return False
        if open_ is not None or self._tile is None or self.frozen:
            raise NKIError("a register's value is only known while the kernel runs: test it"
                           " only as a loop condition (while reg: / nl.while_loop(reg, body))"
                           + _loc())
        self._while = (where, _begin_while(b, self._tile))
        return True

    def __repr__(self):
        return "<VirtualRegister %s>" % ("loop %r" % self._aff if self._aff is not None
                                        else "tile")


def _loop_register(var):
    return VirtualRegister(_aff=_loop_var(var).aff, frozen=True)


def register_alloc(x=None):
    """A new register, holding ``x`` (an int, default 0)."""
    _req("register_alloc")
    if x is not None and not isinstance(x, (int, np.integer)):
        raise NKIError("register_alloc takes a compile-time integer, got %r%s" % (x, _loc()))
    return VirtualRegister(int(x or 0))


def _reg(r, arg, what):
    if not isinstance(r, VirtualRegister):
        raise NKIError("'%s' of '%s' must be a register (nisa.register_alloc()), got %r%s"
                       % (arg, what, r, _loc()))
    return r


def _writable(r, what):
    if r.frozen or r._tile is None:
        raise NKIError("the loop register of nl.fori_loop is read-only ('%s' writes it)%s"
                       % (what, _loc()))


def register_move(dst, src):
    """dst register <- src register."""
    _req("register_move")
    _reg(dst, "dst", "register_move")
    _reg(src, "src", "register_move")
    _writable(dst, "register_move")
    _t.assign(dst._tile, _t.copy(src._value_tile(), dtype=nl.int32))


def register_load(dst, src):
    """dst register <- the one element of tile ``src`` (as an int32)."""
    _req("register_load")
    _reg(dst, "dst", "register_load")
    _writable(dst, "register_load")
    src = _tile(src, "src", "register_load")
    if src.size != 1:
        raise NKIError("'src' of 'register_load' must hold exactly one element, got shape %s%s"
                       % (list(src.shape), _loc()))
    _space(src, "src", "register_load", _SB)
    _t.assign(dst._tile, _t.copy(src.reshape((1, 1)), dtype=nl.int32))


def register_store(dst, src):
    """Tile ``dst`` (one element) <- the register's value."""
    _req("register_store")
    dst = _tile(dst, "dst", "register_store")
    _reg(src, "src", "register_store")
    if dst.size != 1:
        raise NKIError("'dst' of 'register_store' must hold exactly one element, got shape %s%s"
                       % (list(dst.shape), _loc()))
    _into(dst.reshape((1, 1)), _t.copy(src._value_tile(), dtype=dst.dtype), "register_store")


# ---------------------------------------------------------------- dynamic loops

#: Most trips nkid runs of a loop bounded at run time (nl.fori_loop on a
#: register, nl.while_loop) before failing the run: every request bounded.
MAX_DYN_TRIPS = 1 << 20


def _dyn_range(b, lower, upper, step):
    """``for i in nl.dynamic_range(lower, upper, step)`` with a register
    bound: the fori_loop OP_DYN_LOOP, the body being the for's (traced
    once, ``i`` the read-only counter register)."""
    lo = lower if isinstance(lower, VirtualRegister) else VirtualRegister(int(lower))
    hi = upper if isinstance(upper, VirtualRegister) else VirtualRegister(int(upper))
    counter = VirtualRegister(0)
    _t.assign(counter._tile, _t.copy(lo._value_tile(), dtype=nl.int32))
    cond = nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf, name="dyn_cond")
    _into(cond, _t.tensor_tensor(counter._tile, hi._value_tile(), _ir.ALU_LESS,
                                 dtype=nl.int32), "dynamic_range")
    op = _begin_while(b, cond)
    try:
        yield VirtualRegister(_tile=counter._tile, frozen=True)
        _t.assign(counter._tile, _t.tensor_tensor(counter._tile, float(step), _ir.ALU_ADD,
                                                  dtype=nl.int32))
        _into(cond, _t.tensor_tensor(counter._tile, hi._value_tile(), _ir.ALU_LESS,
                                     dtype=nl.int32), "dynamic_range")
    finally:
        _end_while(b, op)


def _dyn_loop(b, lower, upper, step, body_fun):
    """nl.fori_loop with a register bound: OP_DYN_LOOP whose trip count is
    read from registers when the loop starts."""
    lo = lower if isinstance(lower, VirtualRegister) else VirtualRegister(int(lower))
    hi = upper if isinstance(upper, VirtualRegister) else VirtualRegister(int(upper))
    counter = VirtualRegister(0)
    _t.assign(counter._tile, _t.copy(lo._value_tile(), dtype=nl.int32))
    cond = nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf, name="fori_cond")
    _into(cond, _t.tensor_tensor(counter._tile, hi._value_tile(), _ir.ALU_LESS,
                                 dtype=nl.int32), "fori_loop")
    op = _begin_while(b, cond)
    try:
        ret = body_fun(VirtualRegister(_tile=counter._tile, frozen=True))
        if ret is not None:
            raise NKIError("The fori_loop body function cannot return a value" + _loc())
        _t.assign(counter._tile, _t.tensor_tensor(counter._tile, float(step), _ir.ALU_ADD,
                                                  dtype=nl.int32))
        _into(cond, _t.tensor_tensor(counter._tile, hi._value_tile(), _ir.ALU_LESS,
                                     dtype=nl.int32), "fori_loop")
    finally:
        _end_while(b, op)


def _while_loop(b, init, body_fun):
    """nl.while_loop: OP_DYN_LOOP on the register's tile, the body's
    returned register copied into it at the end of each trip."""
    init = _reg(init, "init", "while_loop")
    cond = nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf, name="while_cond")
    _t.assign(cond, _t.copy(init._value_tile(), dtype=nl.int32))
    op = _begin_while(b, cond)
    try:
        r = body_fun(VirtualRegister(_tile=cond, frozen=False))
        if not isinstance(r, VirtualRegister):
            raise NKIError("The while_loop body function must return the register of the next"
                           " condition, got %r%s" % (r, _loc()))
        if r._tile is not cond:
            _t.assign(cond, _t.copy(r._value_tile(), dtype=nl.int32))
    finally:
        _end_while(b, op)


def _begin_while(b, cond):
    op = Op(_ir.OP_DYN_LOOP, b.loc_here(), None,
            [cond._access((1, 1))], {})
    b.note_read(op.src[0])
    body = []
    op.loop = None
    op.fields["_body"] = body
    b._bodies.append(body)
    return op


def _end_while(b, op):
    body = op.fields["_body"]
    if b._bodies and b._bodies[-1] is body:
        b._bodies.pop()
        # the body travels as Op.loop.body (var 0, one trip): the executor
        # runs it while src0 != 0
        op.loop = (0, _ir.LOOP_SEQUENTIAL, 0, 1, 1, body)
        b.emit(op)


# ---------------------------------------------------------------- data movement

def dma_copy(dst, src, priority=None, oob_mode=oob_mode.error, dge_mode=dge_mode.unknown,
             engine=engine.unknown, name=None):
    """``dst = src`` on a DMA engine (HBM or SBUF each side, with a cast;
    indirect views from ``.ap(scalar_offset=/vector_offset=)`` gather or
    scatter)."""
    _req("dma_copy")
    for x, arg in ((dst, "dst"), (src, "src")):
        _tile(x, arg, "dma_copy")
    if src._space == _ir.SPACE_PSUM:
        raise NKIError("Expected operand 'src' of 'dma_copy' to be in address space 'hbm' or"
                       " 'sbuf', but got a tile in 'psum' instead (copy it to SBUF with"
                       " nisa.tensor_copy first)" + _loc())
    _space(dst, "dst", "dma_copy", (_ir.SPACE_SBUF, _ir.SPACE_HBM, _ir.SPACE_SHARED_HBM))
    dge = _enum(globals()["dge_mode"], dge_mode, "dge_mode")
    oob = _enum(globals()["oob_mode"], oob_mode, "oob_mode")
    if dge == globals()["dge_mode"].hwdge and dst.dtype != src.dtype:
        raise NKIError("dma_copy with dge_mode=hwdge requires src and dst of the same dtype,"
                       " got %s and %s (use .view() to reinterpret)%s"
                       % (_dt.name_of(src.dtype), _dt.name_of(dst.dtype), _loc()))
    if dst.size != src.size:
        raise NKIError("The total number of data elements in src (%d) must match that of dst"
                       " (%d) in 'dma_copy'%s" % (src.size, dst.size, _loc()))
    if tuple(src.shape) != tuple(dst.shape) and not isinstance(src, _dyn.DynTensor) \
            and not isinstance(dst, _dyn.DynTensor):
        if src.shape[0] != dst.shape[0] or _free(src.shape) != _free(dst.shape):
            # the same elements in another layout: the HBM side seen in the
            # other side's shape (row-major, as a DMA walks them)
            fine = _refine(src.shape, dst.shape)
            if fine is not None:        # splits only: the tracer's own reshape
                src = _tensor._legacy_reshape(src, fine)
                dst = _tensor._legacy_reshape(dst, fine)
            elif src._space not in _CHIP:
                src = src.reshape(tuple(dst.shape))
            elif dst._space not in _CHIP:
                dst = dst.reshape(tuple(src.shape))
            else:
                raise NKIError("dma_copy between tiles of shapes %s and %s: the partitions and"
                               " elements per partition must match%s"
                               % (list(src.shape), list(dst.shape), _loc()))
    _I.dma_copy(dst=dst, src=src, oob_mode=_I.oob_mode(int(oob)), dge_mode=_DGE[dge])


def _refine(a, b):
    """The coarsest shape both row-major shapes a and b split into (so
    both views reach it by splitting dimensions, which stays affine), or
    None when their dimension boundaries do not nest."""
    def bounds(shape):
        out, p = set(), 1
        for n in reversed(shape):
            p *= int(n)
            out.add(p)
        return out
    cuts = sorted(bounds(a) | bounds(b))
    for lo, hi in zip(cuts, cuts[1:]):
        if hi % lo:
            return None
    fine = [cuts[0]] + [hi // lo for lo, hi in zip(cuts, cuts[1:])]
    return tuple(reversed(fine))


def tensor_copy(dst, src, engine=engine.unknown, name=None, dtype=None):
    """``dst = src`` on chip (Vector, Scalar or GpSimd engine)."""
    _req("tensor_copy")
    _tile(dst, "dst", "tensor_copy")
    _tile(src, "src", "tensor_copy")
    _space(src, "src", "tensor_copy", _CHIP)
    _space(dst, "dst", "tensor_copy", _CHIP)
    e = _eng(engine)
    if e == _I.engine.gpsimd and (_ir.SPACE_PSUM in (src._space, dst._space)):
        raise NKIError("GpSimd Engine cannot access PSUM: 'tensor_copy' with a PSUM operand"
                       " must run on the Vector or Scalar engine" + _loc())
    if isinstance(src, _dyn.DynTensor) or isinstance(dst, _dyn.DynTensor):
        if isinstance(dst, _dyn.DynTensor):
            return _I.tensor_copy_dynamic_dst(dst=dst, src=src, engine=e)
        return _into(dst, _I.tensor_copy_dynamic_src(src, dtype=dst.dtype, engine=e),
                     "tensor_copy")
    _check_part(dst, src, "src", "tensor_copy")
    _pmax(dst, "dst", "tensor_copy")
    _into(dst, _I.tensor_copy(src, dtype=dst.dtype, engine=e), "tensor_copy")


def memset(dst, value, engine=engine.unknown, name=None):
    """Fill ``dst`` with the constant ``value`` (of dst's type)."""
    _req("memset")
    _tile(dst, "dst", "memset")
    _space(dst, "dst", "memset", _CHIP)
    if not _dt.is_float(dst.dtype) and isinstance(value, float) and not float(value).is_integer():
        raise NKIError("nisa.memset value %r does not match dst's dtype %s: pass an integer"
                       " for an integer tile%s" % (value, _dt.name_of(dst.dtype), _loc()))
    if not _dt.is_float(dst.dtype) and isinstance(value, float):
        raise NKIError("nisa.memset value %r must match dst's dtype %s (pass the integer %d)%s"
                       % (value, _dt.name_of(dst.dtype), int(value), _loc()))
    _t.fill(dst, float(value))


def tensor_copy_predicated(dst, src, predicate, reverse_pred=False, name=None):
    """``dst = src`` where ``predicate`` is nonzero (zero with reverse_pred)."""
    _req("tensor_copy_predicated")
    _I.tensor_copy_predicated(src=src, dst=dst, predicate=predicate, reverse_pred=reverse_pred)


def dma_transpose(dst, src, axes=None, priority=None, dge_mode=dge_mode.unknown,
                  oob_mode=oob_mode.error, name=None):
    """``dst = src`` transposed by a DMA (``axes`` as NKI documents)."""
    _req("dma_transpose")
    _tile(dst, "dst", "dma_transpose")
    res = _I.dma_transpose(src, axes=axes, dtype=dst.dtype)
    if len(dst.shape) != len(res.shape) or tuple(dst.shape) != tuple(res.shape):
        raise NKIError("dma_transpose: dst.shape %s must match the transposed src.shape %s,"
                       " including rank%s" % (list(dst.shape), list(res.shape), _loc()))
    _into(dst, res, "dma_transpose")


def dma_compute(dst, srcs, reduce_op, scales=None, unique_indices=True,
                oob_mode=oob_mode.error, name=None):
    """``dst = reduce_op(srcs[0] * scales[0], srcs[1] * scales[1], ...)``
    element-wise on a DMA engine."""
    _req("dma_compute")
    _tile(dst, "dst", "dma_compute")
    srcs = list(srcs)
    if not srcs:
        raise NKIError("dma_compute needs at least one source" + _loc())
    alu = _I._alu(reduce_op, "reduce_op")
    tiles = []
    for i, s in enumerate(srcs):
        _tile(s, "srcs[%d]" % i, "dma_compute")
        if s._space not in _CHIP:
            s = _t.load(s, dtype=nl.float32)
        if scales is not None and float(scales[i]) != 1.0:
            s = _t.tensor_tensor(s, float(scales[i]), _ir.ALU_MULTIPLY, dtype=nl.float32)
        tiles.append(s)
    acc = tiles[0]
    for s in tiles[1:]:
        acc = _t.tensor_tensor(acc, s, alu, dtype=nl.float32)
    if dst._space in _CHIP:
        _into(dst, _t.copy(acc, dtype=dst.dtype) if acc is tiles[0] else
              _t.tensor_tensor(acc, 0.0, _ir.ALU_ADD, dtype=dst.dtype), "dma_compute")
    else:
        _t.store(dst, acc)


# ---------------------------------------------------------------- tensor engine

def _loops_after(b, tid):
    """The open loops entered after tensor ``tid`` was declared, outermost
    first: (var, parent body)."""
    scope = set(b.tensors[tid].scope)
    return [(lp[0], lp[7]) for lp in b._loops if lp[0] not in scope]


def _uses_loop(view, var):
    return any(("l", var) in a.t for a in view._imap)


def _mm_state(b):
    s = getattr(b, "_nki06_mm", None)
    if s is None:
        s = b._nki06_mm = {}
    return s


def _mm_into(op, tid):
    """op is a matmul writing tensor tid (another region's group) and
    reading nothing of it."""
    return (op.kind in (_ir.OP_MATMUL, _ir.OP_MATMUL_MX) and isinstance(op.dst, Access)
            and op.dst.tensor == tid
            and not any(isinstance(a, Access) and a.tensor == tid for a in op.src))


def _accumulate_auto(b, dst):
    """NKI's accumulate=None: True to add into dst (emitting the zero the
    group starts from before its loops), False to overwrite.

    The zero goes first before the innermost loop opened after dst's tile
    was declared whose variable dst's view does not use; each time such a
    loop around it ends without any other op touching the tile, it moves
    out before that loop too (``_hoist_fills``)."""
    tid = dst._tid
    key = (tid, tuple(repr(a) for a in dst._imap))
    prev = _mm_state(b).get(key)
    body = b.cur_body
    if prev is not None and prev[0] is body:
        # the ops since the group's last matmul (found by identity: the
        # tracer may have dropped allocations before it since)
        i = len(body) - 1
        while i >= 0 and body[i] is not prev[1]:
            i -= 1
        if i >= 0 and not _touches([op for op in body[i + 1:] if not _mm_into(op, tid)], tid):
            return True                 # the group's next matmul (others may interleave)
    loops = _loops_after(b, tid)
    if not loops or _uses_loop(dst, loops[-1][0]):
        return False
    var, parent = loops[-1]
    t = b.tensors[tid]
    if t.pending_alloc is not None and t.pending_alloc[1] is parent:
        return True                 # the allocation right before starts at zero
    acc = dst._access(_t.op_shape(dst.shape))
    fill = Op(_ir.OP_ALLOC, b.loc_here(), acc, (), {"fill": _ir.FILL_ZERO})
    parent.append(fill)
    pend = getattr(b, "_nki06_fills", None)
    if pend is None:
        pend = b._nki06_fills = []
    pend.append({"tid": tid, "view": dst, "fill": fill, "body": parent, "var": var})
    return True


def nc_matmul(dst, stationary, moving, is_stationary_onezero=False, is_moving_onezero=False,
              is_transpose=False, accumulate=None, tile_position=(), tile_size=(),
              perf_mode=matmul_perf_mode.none, name=None):
    """``dst (PSUM) = stationary.T @ moving`` on the Tensor Engine;
    ``accumulate`` True adds, False overwrites, None decides as NKI does."""
    b = _req("nc_matmul")
    for x, arg in ((dst, "dst"), (stationary, "stationary"), (moving, "moving")):
        _tile(x, arg, "nc_matmul")
    _space(stationary, "stationary", "nc_matmul", _SB)
    _space(moving, "moving", "nc_matmul", _SB)
    _space(dst, "dst", "nc_matmul", (_ir.SPACE_PSUM,))
    if is_transpose:
        # transpose mode: stationary loaded, the identity as moving; the
        # bit-accurate result is stationary.T (NaN and Inf kept)
        _I._check_transpose_identity(stationary, moving)
        _into(dst, _I.nc_transpose(stationary, dtype=dst.dtype, engine=_I.engine.tensor),
              "nc_matmul")
        return
    kw = {}
    pm = perf_mode.value if isinstance(perf_mode, matmul_perf_mode) else perf_mode
    if pm not in (None, "none"):
        if pm != "double_row":
            raise NKIError("perf_mode of 'nc_matmul' must be nisa.matmul_perf_mode.none or"
                           " double_row, got %r%s" % (perf_mode, _loc()))
        if get_nc_version() < nc_version.gen3:
            raise NKIError("On NeuronCore-v2, performance mode is not supported"
                           " ('nc_matmul' perf_mode=double_row needs trn2 or later)" + _loc())
        kw["perf_mode"] = "double_row_gen3"
    res = _I.nc_matmul(stationary, moving, tile_position=tile_position, tile_size=tile_size,
                       **kw)
    M, N = res.shape[0], _free(res.shape)
    if dst.shape[0] != M or _free(dst.shape) != N:
        raise NKIError("nc_matmul: dst has shape %s but stationary.T @ moving is [%d, %d]%s"
                       % (list(dst.shape), M, N, _loc()))
    view = _same_shape_view(dst, res.shape)
    if accumulate is None:
        acc = _accumulate_auto(b, view)
    else:
        acc = bool(accumulate)
    _t._retarget(b, res, view, accumulate=acc)
    body = b.cur_body
    _mm_state(b)[(dst._tid, tuple(repr(a) for a in view._imap))] = (body, body[-1])


def _mx_tiling(k, m, tile_position, tile_size):
    """nc_matmul_mx's row tiling mode, as its API page states it."""
    if tile_position is None and tile_size is None:
        return
    if tile_position is None or tile_size is None:
        raise NKIError("nc_matmul_mx: tile_position and tile_size must both be set to enable"
                       " tiling mode" + _loc())
    try:
        row, col = (int(v) for v in tile_position)
        rsz, csz = (int(v) for v in tile_size)
    except (TypeError, ValueError):
        raise NKIError("nc_matmul_mx: tile_position and tile_size must be 2D tuples"
                       " (start_row, start_column) and (row_size, column_size), got %r and %r%s"
                       % (tile_position, tile_size, _loc())) from None
    if csz != 128:
        raise NKIError("nc_matmul_mx supports only row tiling mode: the column_size of"
                       " tile_size must be 128, got %d%s" % (csz, _loc()))
    if rsz not in (32, 64, 128):
        raise NKIError("nc_matmul_mx: row tiling slices the 128 PE rows into 2x 64 row tiles"
                       " or 4x 32 row tiles: the row_size of tile_size must be 32, 64 or 128,"
                       " got %d%s" % (rsz, _loc()))
    if col != 0:
        raise NKIError("nc_matmul_mx: the start_column of tile_position must be 0, got %d%s"
                       % (col, _loc()))
    if row < 0 or row % rsz or row + rsz > 128:
        raise NKIError("nc_matmul_mx: the start_row of tile_position must be a multiple of"
                       " row_size (%d) and must not exceed 128, got %d%s" % (rsz, row, _loc()))
    if k > rsz or m > csz:
        raise NKIError("nc_matmul_mx: the stationary tile size [%d, %d] must not exceed the"
                       " chosen tile_size (%d, %d)%s" % (k, m, rsz, csz, _loc()))


def _mx_operand(x, arg, what, spaces):
    _tile(x, arg, what)
    _space(x, arg, what, spaces)
    return x._access()


def nc_matmul_mx(dst, stationary, moving, stationary_scale, moving_scale, tile_position=None,
                 tile_size=None, accumulate=None, name=None):
    """``dst (PSUM) = dequant(stationary).T @ dequant(moving)`` of MXFP8/MXFP4
    x4 tiles with their float8_e8m0fnu (or uint8) block scales, on the
    Tensor Engine (NeuronCore-v4); ``accumulate`` as ``nc_matmul``'s.
    Row tiling (``tile_position``, ``tile_size``) is checked as documented;
    the result does not depend on it."""
    b = _req("nc_matmul_mx")
    what = "nc_matmul_mx"
    srcs = [_mx_operand(x, arg, what, _SB)
            for x, arg in ((stationary, "stationary"), (moving, "moving"),
                           (stationary_scale, "stationary_scale"),
                           (moving_scale, "moving_scale"))]
    _mx_operand(dst, "dst", what, (_ir.SPACE_PSUM,))
    _mx_tiling(stationary.shape[0], _free(stationary.shape), tile_position, tile_size)
    if accumulate is None:
        acc = _accumulate_auto(b, dst)
    else:
        acc = bool(accumulate)
    d = dst._access()
    t = b.tensors[d.tensor]
    if acc and t.pending_alloc is not None:
        # the group's first matmul overwrites: the tile starts at zero
        t.pending_alloc[0].fields["fill"] = _ir.FILL_ZERO
    op = Op(_ir.OP_MATMUL_MX, b.loc_here(), d, srcs, {"accumulate": acc} if acc else {})
    for s in srcs:
        b.note_read(s)
    if acc:
        b.note_read(d)
    b.note_write(d)
    b.emit(op)
    body = b.cur_body
    _mm_state(b)[(dst._tid, tuple(repr(a) for a in dst._imap))] = (body, body[-1])


def nc_transpose(dst, data, engine=engine.unknown, name=None):
    """``dst = data.T`` (Tensor Engine <= 128x128 into PSUM, Vector Engine
    <= 32x32 into SBUF)."""
    _req("nc_transpose")
    _tile(dst, "dst", "nc_transpose")
    _tile(data, "data", "nc_transpose")
    e = _eng(engine)
    if e == _I.engine.unknown:
        e = _I.engine.tensor if dst._space == _ir.SPACE_PSUM else _I.engine.vector
    _into(dst, _I.nc_transpose(data, dtype=dst.dtype, engine=e), "nc_transpose")


# ---------------------------------------------------------------- vector / scalar

def tensor_tensor(dst, data1, data2, op, engine=engine.unknown, name=None):
    """``dst = op(data1, data2)`` element-wise."""
    _req("tensor_tensor")
    _tile(dst, "dst", "tensor_tensor")
    for x, arg in ((data1, "data1"), (data2, "data2")):
        _tile(x, arg, "tensor_tensor")
        _space(x, arg, "tensor_tensor", _CHIP)
    if data1.shape[0] != data2.shape[0]:
        raise NKIError("number of partitions (dimension 0 size of a tile) mismatch in"
                       " parameters (data1%s, data2%s) of 'tensor_tensor'%s"
                       % (list(data1.shape), list(data2.shape), _loc()))
    if data1._space == _ir.SPACE_PSUM and data2._space == _ir.SPACE_PSUM:
        raise NKIError("'tensor_tensor' cannot read both data1 and data2 from PSUM" + _loc())
    _pmax(dst, "dst", "tensor_tensor")
    d1 = _view_as(data1, dst.shape)
    d2 = _view_as(data2, dst.shape)
    _into(dst, _I.tensor_tensor(d1, d2, op, dtype=dst.dtype, engine=_eng(engine)),
          "tensor_tensor")


def tensor_scalar(dst, data, op0, operand0, reverse0=False, op1=None, operand1=None,
                  reverse1=False, engine=engine.unknown, name=None):
    """``dst = (data op0 operand0) op1 operand1``; operands scalars or
    [P, 1] tiles."""
    _req("tensor_scalar")
    _tile(dst, "dst", "tensor_scalar")
    _tile(data, "data", "tensor_scalar")
    _check_part(dst, data, "data", "tensor_scalar")
    d = _view_as(data, dst.shape)
    _into(dst, _I.tensor_scalar(d, op0, _scalar_or_tile(operand0), reverse0, op1,
                                None if operand1 is None else _scalar_or_tile(operand1),
                                reverse1, dtype=dst.dtype, engine=_eng(engine)),
          "tensor_scalar")


def _reduce_alu(op):
    if op is nl.average:
        return nl.mean
    return op


def tensor_reduce(dst, op, data, axis, negate=False, keepdims=False, name=None):
    """``dst = op`` over the free ``axis`` (the last contiguous free axes)."""
    _req("tensor_reduce")
    _tile(dst, "dst", "tensor_reduce")
    _tile(data, "data", "tensor_reduce")
    _space(data, "data", "tensor_reduce", _CHIP)
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    axes = [int(a) % len(data.shape) for a in axes]
    if 0 in axes:
        raise NKIError("tensor_reduce: axis 0 is the partition axis and cannot be reduced"
                       " (transpose first, or use nisa.tensor_partition_reduce)" + _loc())
    n = len(data.shape)
    if sorted(axes) != list(range(n - len(axes), n)):
        raise NKIError("tensor_reduce: the reduction axes must be the last contiguous free"
                       " dimension(s) of the tile, got %s for rank %d%s" % (axes, n, _loc()))
    res = _I.tensor_reduce(_reduce_alu(op), data, tuple(axes), dtype=dst.dtype, negate=negate,
                           keepdims=True)
    _into(dst, res, "tensor_reduce")


def tensor_partition_reduce(dst, op, data, name=None):
    """``dst [1, ...] = op`` across the partitions of ``data``."""
    _req("tensor_partition_reduce")
    _tile(dst, "dst", "tensor_partition_reduce")
    _into(dst, _I.tensor_partition_reduce(op, data, dtype=dst.dtype), "tensor_partition_reduce")


def tensor_scalar_cumulative(dst, src, op0, op1, imm0, imm1=None,
                             reduce_cmd=reduce_cmd.reset_reduce, name=None):
    """Per partition, along the free elements: ``reg = op1(op0(src[i],
    imm0), reg); dst[i] = reg``, reg starting at op1's identity
    (reset_reduce) or ``imm1`` (load_reduce)."""
    _req("tensor_scalar_cumulative")
    _tile(dst, "dst", "tensor_scalar_cumulative")
    _tile(src, "src", "tensor_scalar_cumulative")
    for x, arg in ((dst, "dst"), (src, "src")):
        if x.dtype in (nl.int32, nl.uint32):
            raise NKIError("'%s' of 'tensor_scalar_cumulative' cannot be %s: INT32/UINT32 are"
                           " not supported as input/output dtypes%s"
                           % (arg, _dt.name_of(x.dtype), _loc()))
    cmd = _enum(globals()["reduce_cmd"], reduce_cmd, "reduce_cmd")
    R = globals()["reduce_cmd"]
    alu1 = _I._alu(op1, "op1")
    ident = {_ir.ALU_ADD: 0.0, _ir.ALU_SUBTRACT: 0.0, _ir.ALU_MULTIPLY: 1.0,
             _ir.ALU_MAXIMUM: float("-inf"), _ir.ALU_MINIMUM: float("inf")}
    if alu1 not in ident:
        raise NKIError("op1 of 'tensor_scalar_cumulative' must be add, subtract, multiply,"
                       " maximum or minimum%s" % _loc())
    if cmd == R.reset_reduce:
        init = ident[alu1]
    elif cmd == R.load_reduce:
        if imm1 is None:
            raise NKIError("tensor_scalar_cumulative with reduce_cmd=load_reduce needs imm1"
                           + _loc())
        init = _scalar_or_tile(imm1)
    else:
        raise NKIError("tensor_scalar_cumulative with reduce_cmd=%s continues the Vector"
                       " Engine's accumulators from an earlier instruction, which nkid does not"
                       " carry into this instruction; use reset_reduce or load_reduce%s"
                       % (cmd.name, _loc()))
    s = _view_as(src, dst.shape)
    if len(s.shape) != 2:
        s = s.reshape((s.shape[0], _free(s.shape)))
    x = _I.tensor_scalar(s, op0, _scalar_or_tile(imm0), dtype=nl.float32)
    zeros = nl.zeros(x.shape, nl.float32)
    # the scan's step op0(data0[i], t) op1 data1[i]: op1(x[i], reg) + 0
    res = _I.tensor_tensor_scan(x, zeros, init, op1, nl.add, dtype=dst.dtype)
    _into(dst, res, "tensor_scalar_cumulative")


def activation(dst, op, data, bias=None, scale=1.0, reduce_op=None, reduce_res=None,
               reduce_cmd=reduce_cmd.idle, name=None):
    """``dst = op(data * scale + bias)`` on the Scalar Engine; with
    ``reduce_res`` the per-partition ``reduce_op`` of the results."""
    _req("activation")
    _tile(dst, "dst", "activation")
    _tile(data, "data", "activation")
    _space(data, "data", "activation", _CHIP)
    _check_part(dst, data, "data", "activation")
    _pmax(data, "data", "activation")
    cmd = _rcmd06(reduce_cmd)
    if reduce_res is not None and cmd == _I.reduce_cmd.idle:
        cmd = _I.reduce_cmd.reset_reduce
        if reduce_op is None:
            reduce_op = nl.add
    d = _view_as(data, dst.shape)
    _into(dst, _I.activation(op, d, bias=bias, scale=_scalar_or_tile(scale),
                             reduce_op=reduce_op, reduce_res=reduce_res, reduce_cmd=cmd,
                             dtype=dst.dtype), "activation")


def activation_reduce(dst, op, data, reduce_op, reduce_res, bias=None, scale=1.0, name=None):
    """``activation`` whose results are also reduced per partition into
    ``reduce_res``."""
    _req("activation_reduce")
    _tile(dst, "dst", "activation_reduce")
    d = _view_as(data, dst.shape)
    _into(dst, _I.activation_reduce(op, d, reduce_op=reduce_op, reduce_res=reduce_res,
                                    bias=bias, scale=_scalar_or_tile(scale), dtype=dst.dtype),
          "activation_reduce")


def activate2(dst, op, data, imm0, imm1, op0, op1, relu_param=0.0, reverse0=False,
              reverse1=False, reduce_op=None, reduce_res=None, reduce_cmd=reduce_cmd.idle,
              name=None):
    """``dst = op(op1(op0(data, imm0), imm1))`` (trn3's two-ALU activation;
    ``nl.prelu`` with ``relu_param`` as the negative slope)."""
    _req("activate2")
    _tile(dst, "dst", "activate2")
    _tile(data, "data", "activate2")
    d = _view_as(data, dst.shape)
    x = _I.tensor_scalar(d, op0, _scalar_or_tile(imm0), reverse0, op1, _scalar_or_tile(imm1),
                         reverse1, dtype=nl.float32)
    if op is nl.prelu:
        pos = _t.activation(x, _ir.ACT_RELU, dtype=nl.float32)
        neg = _t.tensor_tensor(x, 0.0, _ir.ALU_MINIMUM, dtype=nl.float32)
        neg = _t.tensor_tensor(neg, _scalar_or_tile(relu_param), _ir.ALU_MULTIPLY,
                               dtype=nl.float32)
        res = _t.tensor_tensor(pos, neg, _ir.ALU_ADD, dtype=dst.dtype)
    elif op is None or op is nl.bypass or op is nl.copy:
        res = _t.copy(x, dtype=dst.dtype)
    else:
        res = _I.activation(op, x, dtype=dst.dtype)
    _into(dst, res, "activate2")
    if reduce_res is not None:
        _into(reduce_res, _I.tensor_reduce(reduce_op or nl.add, dst, 1, dtype=reduce_res.dtype,
                                           keepdims=True), "activate2")


def exponential(dst, src, max_value=0.0, reduce_res=None, reduce_cmd=reduce_cmd.idle,
                reduce_init=0.0, name=None):
    """``dst = exp(src - max_value)``; with ``reduce_res`` the per-partition
    sum of the results (plus ``reduce_init``)."""
    _req("exponential")
    _tile(dst, "dst", "exponential")
    _tile(src, "src", "exponential")
    cmd = _enum(globals()["reduce_cmd"], reduce_cmd, "reduce_cmd")
    if cmd != globals()["reduce_cmd"].load_reduce and not (
            isinstance(reduce_init, (int, float)) and float(reduce_init) == 0.0):
        raise NKIError("reduce_init of 'exponential' should be unset or set to 0.0 when"
                       " reduce_cmd is not load_reduce%s" % _loc())
    s = _view_as(src, dst.shape)
    mv = _scalar_or_tile(max_value)
    x = _t.tensor_tensor(s, mv, _ir.ALU_SUBTRACT, dtype=nl.float32)
    e = _t.activation(x, _ir.ACT_EXP, dtype=nl.float32)
    _into(dst, _t.copy(e, dtype=dst.dtype), "exponential")
    if reduce_res is not None:
        r = _t.reduce(e, _ir.ALU_ADD, tuple(range(1, len(e.shape))), dtype=nl.float32,
                      keepdims=True)
        if not (isinstance(reduce_init, (int, float)) and float(reduce_init) == 0.0):
            r = _t.tensor_tensor(r, _scalar_or_tile(reduce_init), _ir.ALU_ADD,
                                 dtype=nl.float32)
        _into(reduce_res, _t.copy(r, dtype=reduce_res.dtype), "exponential")


def reciprocal(dst, data, name=None):
    """``dst = 1 / data``."""
    _req("reciprocal")
    _tile(dst, "dst", "reciprocal")
    d = _view_as(data, dst.shape)
    _into(dst, _I.reciprocal(d, dtype=dst.dtype), "reciprocal")


def tensor_tensor_scan(dst, data0, data1, initial, op0, op1, reverse0=False, reverse1=False,
                       name=None):
    """``dst[:, i] = op1(op0(data0[:, i], dst[:, i-1]), data1[:, i])`` from
    ``initial``."""
    _req("tensor_tensor_scan")
    _tile(dst, "dst", "tensor_tensor_scan")
    _into(dst, _I.tensor_tensor_scan(data0, data1, _scalar_or_tile(initial), op0, op1,
                                     reverse0, reverse1, dtype=dst.dtype),
          "tensor_tensor_scan")


def scalar_tensor_tensor(dst, data, op0, operand0, op1, operand1, reverse0=False,
                         reverse1=False, name=None):
    """``dst = op1(op0(data, operand0), operand1)``, operand1 a tile."""
    _req("scalar_tensor_tensor")
    _tile(dst, "dst", "scalar_tensor_tensor")
    _into(dst, _I.scalar_tensor_tensor(data=data, op0=op0, operand0=_scalar_or_tile(operand0),
                                       op1=op1, operand1=operand1, reverse0=reverse0,
                                       reverse1=reverse1, dtype=dst.dtype),
          "scalar_tensor_tensor")


def tensor_scalar_reduce(dst, data, op0, operand0, reduce_op, reduce_res=None, reverse0=False,
                         reduce_cmd=reduce_cmd.reset_reduce, reduce_init=None,
                         reduce_res_negate=False, name=None):
    """``dst = op0(data, operand0)`` with the per-partition ``reduce_op`` of
    the results in ``reduce_res``."""
    _req("tensor_scalar_reduce")
    _tile(dst, "dst", "tensor_scalar_reduce")
    d = _view_as(data, dst.shape)
    if reduce_res is None:
        return tensor_scalar(dst, d, op0, operand0, reverse0)
    res = _I.tensor_scalar_reduce(data=d, op0=op0, operand0=_scalar_or_tile(operand0),
                                  reduce_op=reduce_op, reduce_res=reduce_res,
                                  reverse0=reverse0, dtype=dst.dtype)
    _into(dst, res, "tensor_scalar_reduce")
    if reduce_res_negate:
        _t.assign(reduce_res, _t.activation(reduce_res, _ir.ACT_NEGATIVE,
                                            dtype=reduce_res.dtype))


def iota(dst, pattern, offset=0, channel_multiplier=0, name=None):
    """``dst[p, i...] = offset + p * channel_multiplier + sum(step * i)``."""
    _req("iota")
    _tile(dst, "dst", "iota")
    _space(dst, "dst", "iota", _SB)
    _into(dst, _t.iota_tile(_pattern_expr(dst, pattern, offset, channel_multiplier, "iota"),
                            dst.dtype), "iota")


def _pattern_expr(dst, pattern, offset, cm, what):
    pattern = [[int(s), int(n)] for s, n in pattern]
    if len(pattern) > 4:
        raise NKIError("'%s' takes a pattern of up to 4 [step, num] pairs, got %d%s"
                       % (what, len(pattern), _loc()))
    count = 1
    for _, n in pattern:
        count *= n
    if count != _free(dst.shape):
        raise NKIError("The total number of elements in pattern (%d) must match the number of"
                       " elements per partition in the dst tile (%d) of '%s'%s"
                       % (count, _free(dst.shape), what, _loc()))
    shape = (dst.shape[0],) + tuple(n for _, n in pattern)
    aff = Aff(int(offset), {0: int(cm)} if cm else {})
    for j, (s, n) in enumerate(pattern):
        if s and n > 1:
            aff = aff + Aff.axis(j + 1, s)
    return IndexExpr(shape, aff)


def affine_select(dst, pattern, channel_multiplier, on_true_tile, on_false_value,
                  cmp_op=nl.equal, offset=0, name=None):
    """``dst = on_true_tile where cmp_op(affine value, 0) else
    on_false_value`` (the affine value as in ``iota``)."""
    _req("affine_select")
    _tile(dst, "dst", "affine_select")
    _tile(on_true_tile, "on_true_tile", "affine_select")
    _space(dst, "dst", "affine_select", _SB)
    _space(on_true_tile, "on_true_tile", "affine_select", _SB)
    expr = _pattern_expr(dst, pattern, offset, channel_multiplier, "affine_select")
    v = _t.iota_tile(expr, nl.float32)
    pred = _t.tensor_tensor(v, 0.0, _I._alu(cmp_op, "cmp_op"), dtype=nl.float32)
    tt = on_true_tile.reshape(v.shape) if tuple(on_true_tile.shape) != tuple(v.shape) \
        else on_true_tile
    res = _t.select(pred, tt, float(on_false_value), dtype=dst.dtype)
    _into(dst, res, "affine_select")


def range_select(dst, on_true_tile, comp_op0, comp_op1, bound0, bound1,
                 reduce_cmd=reduce_cmd.reset_reduce, reduce_res=None, reduce_op=nl.maximum,
                 range_start=0, on_false_value=_I.fp32.min, name=None):
    """``dst = on_true_tile`` where ``comp_op0(i, bound0) and comp_op1(i,
    bound1)`` (i = range_start + free index), else ``on_false_value``."""
    _req("range_select")
    _tile(dst, "dst", "range_select")
    cmd = _rcmd06(reduce_cmd)
    _into(dst, _I.range_select(on_true_tile=on_true_tile, comp_op0=comp_op0,
                               comp_op1=comp_op1, bound0=bound0, bound1=bound1,
                               reduce_cmd=cmd, reduce_res=reduce_res, reduce_op=reduce_op,
                               range_start=range_start, on_false_value=on_false_value,
                               dtype=dst.dtype), "range_select")


def select_reduce(dst, predicate, on_true, on_false, reduce_res=None,
                  reduce_cmd=reduce_cmd.idle, reduce_op=nl.maximum, reverse_pred=False,
                  name=None):
    """``dst = predicate ? on_true : on_false`` with an optional
    per-partition reduction into ``reduce_res``."""
    _req("select_reduce")
    cmd = _rcmd06(reduce_cmd)
    if reduce_res is not None and cmd == _I.reduce_cmd.idle:
        cmd = _I.reduce_cmd.reset_reduce
    _I.select_reduce(dst=dst, predicate=predicate, on_true=on_true,
                     on_false=_scalar_or_tile(on_false), reduce_res=reduce_res,
                     reduce_cmd=cmd, reduce_op=reduce_op, reverse_pred=reverse_pred)


def sequence_bounds(dst, segment_ids, name=None):
    """Per segment id of a [1, n] tile, its segment's start and end."""
    _req("sequence_bounds")
    _into(dst, _I.sequence_bounds(segment_ids=segment_ids, dtype=dst.dtype), "sequence_bounds")


def bn_stats(dst, data, name=None):
    """Mean/variance statistics of each 512-element chunk of ``data``."""
    _req("bn_stats")
    _tile(dst, "dst", "bn_stats")
    _tile(data, "data", "bn_stats")
    d = data if len(data.shape) == 2 else data.reshape((data.shape[0], _free(data.shape)))
    if d.shape[1] > nl.tile_size.bn_stats_fmax:
        raise NKIError("bn_stats: the free size of data (%d) exceeds bn_stats_fmax (%d)%s"
                       % (d.shape[1], nl.tile_size.bn_stats_fmax, _loc()))
    _into(dst, _I.bn_stats(d, dtype=dst.dtype), "bn_stats")


def bn_aggr(dst, data, name=None):
    """(mean, variance) per partition from bn_stats results."""
    _req("bn_aggr")
    _tile(dst, "dst", "bn_aggr")
    d = data if len(data.shape) == 2 else data.reshape((data.shape[0], _free(data.shape)))
    _into(dst, _I.bn_aggr(d, dtype=dst.dtype), "bn_aggr")


def local_gather(dst, src_buffer, index, num_elem_per_idx=1, num_valid_indices=None,
                 name=None):
    """Gather within each group of 16 partitions (GpSimd)."""
    _req("local_gather")
    _tile(dst, "dst", "local_gather")
    res = _I.local_gather(src_buffer, index, num_elem_per_idx, num_valid_indices)
    _into(dst, _t.copy(res, dtype=dst.dtype) if res.dtype != dst.dtype else res,
          "local_gather")


def nc_n_gather(dst, data, indices, name=None):
    """``dst[p, i] = data[p].flatten()[indices[p, i]]`` per partition."""
    _req("nc_n_gather")
    _tile(dst, "dst", "nc_n_gather")
    _into(dst, nl.gather_flattened(data, indices, dtype=dst.dtype), "nc_n_gather")


def dropout(dst, data, prob, name=None):
    """``dst = data`` with each element zeroed with probability ``prob``."""
    _req("dropout")
    _tile(dst, "dst", "dropout")
    _into(dst, _I.dropout(data, _scalar_or_tile(prob), dtype=dst.dtype), "dropout")


def max8(dst, src, name=None):
    """The 8 largest values of each partition, descending."""
    _req("max8")
    _into(dst, _I.max8(src=src, dtype=dst.dtype), "max8")


def nc_find_index8(dst, data, vals, name=None):
    """The index of the first occurrence of each of 8 values per partition."""
    _req("nc_find_index8")
    _into(dst, _I.nc_find_index8(data=data, vals=vals, dtype=dst.dtype), "nc_find_index8")


def nc_match_replace8(dst, data, vals, imm, dst_idx=None, name=None):
    """``data`` with the first occurrence of each of 8 values replaced by ``imm``."""
    _req("nc_match_replace8")
    _into(dst, _I.nc_match_replace8(data=data, vals=vals, imm=imm, dst_idx=dst_idx,
                                    dtype=dst.dtype), "nc_match_replace8")


def nc_stream_shuffle(dst, src, shuffle_mask, name=None):
    """Shuffle partitions within each 32-partition quadrant."""
    _req("nc_stream_shuffle")
    _I.nc_stream_shuffle(src, dst, shuffle_mask)


# ---------------------------------------------------------------- random numbers

def rng(dst, engine=engine.vector, name=None):
    """Random bits in an integer dst: each element the low bits of a random
    32-bit value (the dtype's width), from nkid's counter-based stream."""
    _req("rng")
    _tile(dst, "dst", "rng")
    if _dt.is_float(dst.dtype) or dst.dtype == nl.bool_:
        raise NKIError("The output dst tile of 'rng' must be an integer type: int8, int16,"
                       " int32, uint8, uint16, or uint32, got %s%s"
                       % (_dt.name_of(dst.dtype), _loc()))
    bits = 8 * _dt.itemsize(dst.dtype)
    r = nl.rand(dst.shape, nl.float32)
    r = _t.activation(_t.tensor_tensor(r, float(2 ** bits), _ir.ALU_MULTIPLY,
                                       dtype=nl.float32), _ir.ACT_FLOOR, dtype=nl.float32)
    if dst.dtype in (nl.int8, nl.int16, nl.int32):
        r = _t.tensor_tensor(r, float(2 ** (bits - 1)), _ir.ALU_SUBTRACT, dtype=nl.float32)
    _into(dst, _t.copy(r, dtype=dst.dtype), "rng")


def rand2(dst, min, max, name=None):  # noqa: A002
    """Uniform random values in [min, max)."""
    _req("rand2")
    _tile(dst, "dst", "rand2")
    r = nl.rand(dst.shape, nl.float32)
    lo, hi = _scalar_or_tile(min), _scalar_or_tile(max)
    if isinstance(lo, float) and isinstance(hi, float) and not lo < hi:
        raise NKIError("rand2 needs min < max for a valid range, got %g and %g%s"
                       % (lo, hi, _loc()))
    span = _t.tensor_tensor(hi, lo, _ir.ALU_SUBTRACT, dtype=nl.float32) \
        if isinstance(hi, NkiTensor) or isinstance(lo, NkiTensor) else hi - lo
    r = _t.tensor_tensor(r, span, _ir.ALU_MULTIPLY, dtype=nl.float32)
    _into(dst, _t.tensor_tensor(r, lo, _ir.ALU_ADD, dtype=dst.dtype), "rand2")


def set_rng_seed(src_seeds, name=None):
    """Seed the random generators from a tile."""
    _req("set_rng_seed")
    nl.random_seed(src_seeds)


_RNG_ENGINE = {engine.gpsimd: _ir.ENGINE_GPSIMD, engine.vector: _ir.ENGINE_VECTOR}


def _rng_engine(e, what):
    e = _enum(engine, e, "engine")
    if e not in _RNG_ENGINE:
        raise NKIError("%s: Supported engines: NeuronCore-v3: GpSimd. NeuronCore-v4+: GpSimd,"
                       " Vector; got engine.%s%s" % (what, e.name, _loc()))
    return _RNG_ENGINE[e]


def rand_set_state(src_seeds, engine=engine.gpsimd, name=None):
    """Set the random stream from ``src_seeds`` (SBUF, uint32, 6 words a
    partition for GpSimd, 24 for Vector): a state ``rand_get_state``
    wrote is restored exactly (the same draws follow); other words seed
    the stream (every word of every lane counts)."""
    b = _req("rand_set_state")
    s = _mx_operand(src_seeds, "src_seeds", "rand_set_state", _SB)
    b.note_read(s)
    b.emit(Op(_ir.OP_RAND_SET_STATE, b.loc_here(), None, [s],
              {"engine": _rng_engine(engine, "rand_set_state")}))


def rand_get_state(dst, engine=engine.gpsimd, name=None):
    """``dst`` (uint32 [P, 6] for GpSimd, [P, 24] for Vector) <- the
    random stream's state: nkid's stream is one per program (counter
    based), so every partition holds the same six 24-bit words (repeated
    for the Vector Engine's four XORWOW slots); ``rand_set_state`` of them
    continues the stream where it was."""
    b = _req("rand_get_state")
    d = _mx_operand(dst, "dst", "rand_get_state", _CHIP)
    b.emit(Op(_ir.OP_RAND_GET_STATE, b.loc_here(), d, [],
              {"engine": _rng_engine(engine, "rand_get_state")}))
    b.note_write(d)


# ---------------------------------------------------------------- MX, search, sync

def quantize_mx(dst, src, dst_scale, name=None):
    """MXFP8 quantization on the Vector Engine (NeuronCore-v4): per group
    of 8 partitions x 4 elements of ``src`` (float16/bfloat16) the scale
    2^(floor(log2(max|x|)) - (E_max - 1)) (2^-127 for an all-zero group)
    goes to ``dst_scale`` in the group's quadrant, and ``src / scale``
    rounded to dst's float8 type packed four to an element to ``dst``.
    Two NKIR ops: the scales', then the data's."""
    b = _req("quantize_mx")
    what = "quantize_mx"
    s = _mx_operand(src, "src", what, _SB)
    d = _mx_operand(dst, "dst", what, _SB)
    sc = _mx_operand(dst_scale, "dst_scale", what, _SB)
    if dst.dtype not in (nl.float8_e5m2_x4, nl.float8_e4m3fn_x4):
        raise NKIError("quantize_mx: The output dst tile must be float8_e5m2_x4 or"
                       " float8_e4m3fn_x4 (4-packed FP8 data types), got %s%s"
                       % (_dt.name_of(dst.dtype), _loc()))
    if dst_scale.dtype not in (nl.float8_e8m0fnu, nl.uint8):
        raise NKIError("quantize_mx: The dst_scale tile must be float8_e8m0fnu or uint8, got"
                       " %s%s" % (_dt.name_of(dst_scale.dtype), _loc()))
    loc = b.loc_here()
    b.note_read(s)
    b.emit(Op(_ir.OP_QUANTIZE_MX, loc, sc, [s], {"acc_dtype": _dt.to_ir(dst.dtype)}))
    b.note_write(sc)
    b.emit(Op(_ir.OP_QUANTIZE_MX, loc, d, [src._access()], {}))
    b.note_write(d)


def nonzero_with_count(dst, src, index_offset=0, padding_val=-1, name=None):
    """In partitions 0, 16, ..., 112 (the GpSimd cores' first): the indices
    (plus ``index_offset``) of src's nonzero elements in order, then
    ``padding_val``, and their count in dst's last element; the other
    partitions of dst are not written."""
    _req("nonzero_with_count")
    _tile(dst, "dst", "nonzero_with_count")
    _tile(src, "src", "nonzero_with_count")
    _space(src, "src", "nonzero_with_count", _SB)
    _space(dst, "dst", "nonzero_with_count", _SB)
    # the free dimensions are one array (0.6 asks only one more element
    # in dst's than in src's): [128, 2, 128] is 256 elements a partition
    src, dst = (x.reshape((x.shape[0], int(np.prod(x.shape[1:])))) if len(x.shape) > 2 else x
                for x in (src, dst))
    if len(src.shape) != 2 or len(dst.shape) != 2:
        raise NKIError("nonzero_with_count takes src and dst with free dimensions, got %s"
                       " and %s%s" % (list(src.shape), list(dst.shape), _loc()))
    if src.dtype not in (nl.float32, nl.int32) or dst.dtype != nl.int32:
        raise NKIError("nonzero_with_count: src must be float32 or int32 and dst int32, got"
                       " %s and %s%s" % (_dt.name_of(src.dtype), _dt.name_of(dst.dtype),
                                         _loc()))
    P, T = src.shape
    if dst.shape[0] != P or dst.shape[1] != T + 1:
        raise NKIError("Destination tensor must have exactly 1 more element than the source"
                       " tensor in the free dimension (src %s, dst %s) of"
                       " 'nonzero_with_count'%s" % (list(src.shape), list(dst.shape), _loc()))
    for v, what in ((index_offset, "index_offset"), (padding_val, "padding_val")):
        if not isinstance(v, (int, np.integer)):
            raise NKIError("%s of 'nonzero_with_count' must be an int32, got %r%s"
                           % (what, v, _loc()))
    G = (P + 15) // 16
    s = src[0:P:16, :]
    nz = _t.tensor_tensor(s, 0.0, _ir.ALU_NOT_EQUAL, dtype=nl.float32)        # [G, T]
    ones = nl.full((G, T), 1.0, nl.float32)
    rank = _I.tensor_tensor_scan(ones, nz, 0.0, nl.multiply, nl.add, dtype=nl.float32)
    # hit[g, j, i]: element i is the (j+1)-th nonzero
    jj = _t.iota_tile(IndexExpr((G, T, T), Aff(1, {1: 1})), nl.float32)
    hit = _t.tensor_tensor(rank.reshape((G, 1, T)).broadcast_to((G, T, T)), jj,
                           _ir.ALU_EQUAL, dtype=nl.float32)
    hit = _t.tensor_tensor(hit, nz.reshape((G, 1, T)).broadcast_to((G, T, T)),
                           _ir.ALU_MULTIPLY, dtype=nl.float32)
    ii = _t.iota_tile(IndexExpr((G, T, T), Aff(int(index_offset), {2: 1})), nl.float32)
    idx = _t.reduce(_t.tensor_tensor(hit, ii, _ir.ALU_MULTIPLY, dtype=nl.float32),
                    _ir.ALU_ADD, 2, dtype=nl.float32)                          # [G, T]
    count = rank[:, T - 1:T]
    j = _t.iota_tile(IndexExpr((G, T), Aff(0, {1: 1})), nl.float32)
    valid = _t.tensor_tensor(j, count, _ir.ALU_LESS, dtype=nl.float32)
    res = _t.select(valid, idx, float(padding_val), dtype=nl.int32)
    _into(dst[0:P:16, 0:T], res, "nonzero_with_count")
    _into(dst[0:P:16, T:T + 1], _t.copy(count, dtype=nl.int32), "nonzero_with_count")


def topk(val_dst, idx_dst, src, n, name=None):
    """The ``n`` largest values of each partition (descending) and their
    indices, by rounds of ``max8`` / ``nc_find_index8`` /
    ``nc_match_replace8``."""
    _req("topk")
    n = int(n)
    if n % 8 or n <= 0:
        raise NKIError("topk: n must be a positive multiple of 8, got %d%s" % (n, _loc()))
    work = _t.copy(src, dtype=nl.float32)
    for r in range(n // 8):
        m = _I.max8(src=work, dtype=nl.float32)
        _into(val_dst[:, r * 8:(r + 1) * 8], _t.copy(m, dtype=val_dst.dtype), "topk")
        idx = _I.nc_find_index8(data=work, vals=m, dtype=nl.uint32)
        _into(idx_dst[:, r * 8:(r + 1) * 8], _t.copy(idx, dtype=idx_dst.dtype), "topk")
        if r + 1 < n // 8:
            work = _I.nc_match_replace8(data=work, vals=m, imm=float(np.finfo(np.float32).min),
                                        dtype=nl.float32)


def core_barrier(data, cores, engine=engine.gpsimd, name=None):
    """A barrier between the cores of a logical NeuronCore: programs run in
    order on nkid, so it has nothing to wait for."""
    _req("core_barrier")


def sendrecv(src, dst, send_to_rank, recv_from_rank, pipe_id, dma_engine=dma_engine.dma,
             name=None):
    """Send ``src`` to a rank and receive ``dst`` from one: on one host,
    one rank, the data comes back (``dst = src``) when both ranks are 0."""
    _req("sendrecv")
    if int(send_to_rank) != 0 or int(recv_from_rank) != 0:
        raise NKIError("nisa.sendrecv: nkid runs one rank (0); send_to_rank and"
                       " recv_from_rank must be 0, got %r and %r%s"
                       % (send_to_rank, recv_from_rank, _loc()))
    dma_copy(dst=dst, src=src)


def _returns_instruction(f):
    """An instruction call returns its NkiInstruction (its name kept); its
    indirect views (NkiTensor.indirect) are gathered and scattered around
    it (``_ti.call``)."""
    @functools.wraps(f)
    def call(*args, **kwargs):
        _ti.call(f.__name__, f, args, kwargs)
        return NkiInstruction(kwargs.get("name"))
    return call


for _n in ("dma_copy", "tensor_copy", "memset", "tensor_copy_predicated", "nc_matmul",
           "nc_matmul_mx", "nc_transpose", "dma_transpose", "dma_compute", "tensor_tensor",
           "tensor_scalar", "tensor_reduce", "tensor_partition_reduce",
           "tensor_scalar_cumulative", "activation", "activation_reduce", "activate2",
           "exponential", "reciprocal", "tensor_tensor_scan", "scalar_tensor_tensor",
           "tensor_scalar_reduce", "iota", "affine_select", "range_select", "select_reduce",
           "sequence_bounds", "bn_stats", "bn_aggr", "local_gather", "nc_n_gather", "dropout",
           "max8", "nc_find_index8", "nc_match_replace8", "nc_stream_shuffle", "rng", "rand2",
           "set_rng_seed", "rand_set_state", "rand_get_state", "quantize_mx",
           "nonzero_with_count", "topk", "core_barrier", "sendrecv"):
    globals()[_n] = _returns_instruction(globals()[_n])
del _n


# nki.isa.constants: the enums again as a submodule (`from nki.isa.constants
# import oob_mode`, `from nki.isa import constants`), which nki-library uses
# (core/subkernels/find_nonzero_indices.py, experimental/) though 0.6's API
# reference lists only nki.isa's own names; nki.isa is a package for it.
__path__ = []
constants = _types.ModuleType(__name__ + ".constants",
                              "nki.isa.constants: nki.isa's enums (nkid.nki06.isa)")
for _n in ("engine", "reduce_cmd", "dge_mode", "oob_mode", "matmul_perf_mode",
           "dma_engine", "nc_version"):
    setattr(constants, _n, globals()[_n])
del _n
_sys.modules[constants.__name__] = constants

__all__ = [n for n in dir() if not n.startswith("_")
           and n not in ("np", "nl", "Enum", "IntEnum", "Aff", "IndexExpr", "Op", "Access")]


# nl's loops reach the registers through _lang (language cannot import isa).
_lang.registers.VirtualRegister = VirtualRegister
_lang.registers.dyn_range = _dyn_range
_lang.registers.dyn_loop = _dyn_loop
_lang.registers.loop_register = _loop_register
_lang.registers.while_loop = _while_loop
