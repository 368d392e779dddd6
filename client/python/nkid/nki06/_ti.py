"""Tensor Indirection (``NkiTensor.indirect``, NeuronCore-v4) at the
instructions that take it.

NKI 0.6 documents, per ``nki.isa`` instruction, which operands accept an
indirect view, on which engines, and the partitions the operands and
their indices must start on (aws-neuron-sdk@81ce03ae
``nki/api/nki/isa/__init__.py``, each instruction's "Tensor
indirection." paragraph; ``nki/api/nki/language/__init__.py``,
``NkiTensor.indirect``).  :func:`call` checks those rules with NKI's
words, then runs the instruction on plain tiles: an indirect source is
gathered into a fresh tile first (NKIR ``OP_TI_GATHER``), an indirect
``dst`` is a fresh tile the instruction writes and that is scattered
after (``OP_TI_SCATTER``; gathered first when the instruction also reads
``dst``).  The executor does both (``sim/sim_op06_ti.c``); the model
costs them as part of the instruction (``model/model_cost.c``).
"""

import inspect

from .._proto import nkir_pb2 as _ir
from ..errors import NKIError
from ..tracer import dtypes as _dt
from ..tracer.builder import Op, current as _current, loc_suffix as _loc
from ..tracer.nkitensor import new_tile
from . import _lang
from ._tensor import TI_ARCH, TiTensor, _origin

_V, _S, _G, _T = "vector", "scalar", "gpsimd", "tensor"
_ENGINE_IR = {_V: _ir.ENGINE_VECTOR, _S: _ir.ENGINE_SCALAR, _G: _ir.ENGINE_GPSIMD,
              _T: _ir.ENGINE_TENSOR}


class _Spec:
    """What one instruction's documentation allows: the operands that may
    be indirect, the one whose partitions ``dst``'s index follows, the
    engines (the first one the default), whether the instruction reads
    ``dst`` (the engine choice passed through the ``engine`` argument)."""

    def __init__(self, args, data, engines, engine_arg=False, reads_dst=False):
        self.args = args
        self.data = data
        self.engines = engines
        self.engine_arg = engine_arg
        self.reads_dst = reads_dst


#: NKI 0.5+ (Neuron 2.31 release notes, "Tensor indirection on compute
#: APIs"): the instructions that accept ``.indirect()`` views.
_TI = {
    "tensor_copy": _Spec(("dst", "src"), "src", (_V, _S), engine_arg=True),
    "tensor_copy_predicated": _Spec(("dst", "predicate"), "predicate", (_V,),
                                    reads_dst=True),
    "nc_matmul": _Spec(("dst", "stationary", "moving"), "stationary", (_T,)),
    "nc_matmul_mx": _Spec(("dst", "stationary", "moving", "stationary_scale",
                           "moving_scale"), "stationary", (_T,)),
    "tensor_tensor": _Spec(("dst", "data1"), "data1", (_V, _G), engine_arg=True),
    "tensor_scalar": _Spec(("dst", "data"), "data", (_V, _S, _G), engine_arg=True),
    "tensor_reduce": _Spec(("dst", "data"), "data", (_V,)),
    "tensor_scalar_cumulative": _Spec(("dst", "src"), "src", (_V,)),
    "activation": _Spec(("dst", "data"), "data", (_S,)),
    "activation_reduce": _Spec(("dst", "data"), "data", (_S,)),
    "activate2": _Spec(("dst", "data"), "data", (_S,)),
    "exponential": _Spec(("dst", "src"), "src", (_V,)),
    "tensor_scalar_reduce": _Spec(("dst", "data"), "data", (_V,)),
}

#: nc_matmul: "The indirect operands must be a Tensor-Engine float dtype".
_TE_FLOATS = ("float16", "bfloat16", "float8_e4m3", "float8_e5m2", "float8_e4m3fn")


def _err(msg):
    return NKIError(msg + _loc())


def _has_ti(v):
    if isinstance(v, TiTensor):
        return True
    return isinstance(v, (list, tuple)) and any(isinstance(x, TiTensor) for x in v)


def _part0(t):
    """The partition a view starts on, or None when it depends on loop
    variables (nkid places tiles at partition 0: a slice's start)."""
    a = _origin(t)[0]
    return a.c if a.is_const() else None


def _engine(name, spec, bound):
    """The engine the instruction runs on with tensor indirection (NKI's
    rule: one of spec.engines)."""
    if not spec.engine_arg:
        return spec.engines[0]
    e = bound.arguments.get("engine")
    ename = getattr(e, "name", None)
    if ename in (None, "unknown"):
        return spec.engines[0]
    if ename not in spec.engines:
        words = {(_V, _S): "the Vector or Scalar engine", (_V, _G): "the Vector or GpSimd engine",
                 (_V, _S, _G): "the Vector, Scalar, or GpSimd engine"}[spec.engines]
        raise _err("When tensor indirection is used, the operation must run on %s ('%s' with"
                   " engine=%s)" % (words, name, ename))
    return ename


def _check(name, spec, bound, eng):
    """NKI's documented limits of tensor indirection for instruction name."""
    a = bound.arguments
    ti = {k: v for k, v in a.items() if isinstance(v, TiTensor)}
    for k, v in ti.items():
        p = _part0(v._ti_index)
        if p is not None and p % 32:
            raise _err("the index of every .indirect() view starts on a quadrant boundary (a"
                       " multiple of 32): the index of '%s' of '%s' starts on partition %d"
                       % (k, name, p))
    for k, v in ti.items():
        if k == "dst":
            continue
        pb, pi = _part0(v._ti_base), _part0(v._ti_index)
        if pb is not None and pi is not None and pb != pi:
            raise _err("if '%s' uses .indirect(), '%s' starts on the same partition as its"
                       " index ('%s' of '%s' starts on partition %d, its index on %d)"
                       % (k, k, k, name, pb, pi))
    d = ti.get("dst")
    data = a.get(spec.data)
    if d is not None and data is not None and hasattr(data, "_space"):
        di = _part0(d._ti_index)
        if name.startswith("nc_matmul") or data._space == _ir.SPACE_SBUF:
            ref = _part0(data._ti_base if isinstance(data, TiTensor) else data)
            what = "'%s'" % spec.data
        elif isinstance(data, TiTensor):
            ref = _part0(data._ti_index)
            what = "'%s''s index" % spec.data
        else:
            ref = None
        if di is not None and ref is not None and di != ref:
            raise _err("if 'dst' uses .indirect(), 'dst''s index starts on the same partition"
                       " as %s (in '%s': partition %d and %d)" % (what, name, di, ref))
    if d is not None and eng == _S and d._space == _ir.SPACE_PSUM:
        raise _err("on the Scalar engine a scattered 'dst' cannot be in PSUM ('%s')" % name)
    if name.startswith("nc_matmul"):
        tp = a.get("tile_position")
        if tp not in (None, ()) and tuple(tp) != (0, 0):
            raise _err("Tensor indirection is incompatible with hardware tiling, so"
                       " tile_position must be (0, 0) (or unset) when it is used ('%s', got"
                       " tile_position=%s)" % (name, tuple(tp)))
    if name == "nc_matmul":
        if a.get("is_transpose") and "moving" in ti:
            raise _err("When is_transpose=True, 'moving' cannot use tensor indirection"
                       " ('nc_matmul')")
        for k, v in ti.items():
            if k != "dst" and _dt.name_of(v.dtype) not in _TE_FLOATS:
                raise _err("The indirect operands must be a Tensor-Engine float dtype (%s):"
                           " '%s' of 'nc_matmul' is %s" % (", ".join(_TE_FLOATS), k,
                                                           _dt.name_of(v.dtype)))
        if "dst" in ti and a.get("accumulate") is None:
            raise _err("nc_matmul into an indirect 'dst' with accumulate=None: nkid cannot"
                       " tell NKI's accumulation groups through an indirection; pass"
                       " accumulate=True or False")
    if name == "nc_matmul_mx":
        for x, s in (("stationary", "stationary_scale"), ("moving", "moving_scale")):
            u, w = a.get(x), a.get(s)
            iu, iw = isinstance(u, TiTensor), isinstance(w, TiTensor)
            if iu != iw or (iu and u._ti_index is not w._ti_index):
                raise _err("The (%s, %s) pair must agree on tensor indirection: either both"
                           " members of a pair use .indirect() with the same index, or"
                           " neither does ('nc_matmul_mx')" % (x, s))
    if name == "tensor_scalar":
        dt = [_dt.name_of(x.dtype) for x in (a.get("dst"), a.get("data"))
              if hasattr(x, "dtype")]
        if dt and all(n in ("int32", "uint32") for n in dt):
            raise _err("Tensor indirection is not supported when the op matches the"
                       " int32/uint32 address-arithmetic pattern (tensor_scalar_addr): "
                       "'tensor_scalar' on %s" % " and ".join(dt))


def _gather(b, v, eng, name):
    """A fresh tile holding the indirect view v (OP_TI_GATHER)."""
    t = new_tile(tuple(v.shape), v.dtype, v._space, "%s_ti" % (v.name or "tensor"))
    src = v._ti_base._access()
    idx = v._ti_index._access()
    b.note_read(src)
    b.note_read(idx)
    acc = t._access()
    b.emit(Op(_ir.OP_TI_GATHER, b.loc_here(), acc, [src, idx],
              {"engine": _ENGINE_IR[eng]}))
    b.note_write(acc)
    return t


def _scatter(b, t, v, eng):
    """Write tile t through the indirect view v (OP_TI_SCATTER)."""
    src = t._access()
    idx = v._ti_index._access()
    b.note_read(src)
    b.note_read(idx)
    dst = v._ti_base._access()
    b.note_read(dst)                    # the other columns are kept
    b.emit(Op(_ir.OP_TI_SCATTER, b.loc_here(), dst, [src, idx],
              {"engine": _ENGINE_IR[eng]}))


def call(name, f, args, kwargs):
    """Run instruction ``f`` (nisa.<name>) on its arguments, its indirect
    views (NkiTensor.indirect) gathered before and scattered after."""
    if not any(_has_ti(v) for v in list(args) + list(kwargs.values())):
        return f(*args, **kwargs)
    b = _lang.require("nisa.%s" % name)
    bound = inspect.signature(f).bind(*args, **kwargs)
    bound.apply_defaults()
    spec = _TI.get(name)
    for k, v in bound.arguments.items():
        if _has_ti(v) and (spec is None or k not in spec.args or not isinstance(v, TiTensor)):
            if spec is None:
                raise _err("'%s' of 'nisa.%s' is an indirect view (NkiTensor.indirect), but"
                           " nisa.%s does not support tensor indirection" % (k, name, name))
            raise _err("'%s' of 'nisa.%s' does not support tensor indirection (on"
                       " NeuronCore-v4 it is supported on %s)"
                       % (k, name, ", ".join("'%s'" % x for x in spec.args)))
    _lang.needs(TI_ARCH, "Tensor indirection (NkiTensor.indirect) in nisa.%s" % name)
    eng = _engine(name, spec, bound)
    _check(name, spec, bound, eng)
    a = bound.arguments
    out = None
    for k in spec.args:
        v = a.get(k)
        if not isinstance(v, TiTensor):
            continue
        if k == "dst":
            out = v
            if spec.reads_dst or (name == "nc_matmul" and a.get("accumulate")):
                a[k] = _gather(b, v, eng, name)
            else:
                a[k] = new_tile(tuple(v.shape), v.dtype, v._space,
                                "%s_ti" % (v.name or "tensor"))
        else:
            a[k] = _gather(b, v, eng, name)
    if spec.engine_arg and getattr(a.get("engine"), "name", None) == "unknown":
        a["engine"] = type(a["engine"])[eng]
    res = f(*bound.args, **bound.kwargs)
    if out is not None:
        _scatter(b, a["dst"], out, eng)
    return res
