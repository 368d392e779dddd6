"""nkid.nki06: NKI 0.6, the standalone ``nki`` package's language, with nkid behind it.

``from nkid import nki06 as nki`` (or ``python -m nkid.run script.py``, or
``NKID_NKI=1``, which make ``import nki`` this package) gives ``nki.jit``,
``nki.simulate``, ``nki.language``, ``nki.isa``, ``nki.typing`` and
``nki.collectives``.  Kernels are traced in this process into the same
NKIR as the legacy ``nkid.nki`` front door and run by nkid through the
same client path (Run, Simulate; the same cache, scheduler and fast path).

``@nki.jit`` on numpy arrays runs the kernel (the Run RPC, as
``neuronxcc.nki.baremetal`` does); with ``NKI_SIMULATOR=1`` in the
environment, or through ``nki.simulate(kernel)``, it runs on nkid's cpu
simulator (the Simulate RPC; ``device_print`` output to stdout), where
``NKI_PRECISE_FP`` defaults to 1 as NKI 0.6's does.  ``kernel[g]`` /
``kernel[g0, g1]`` launch the kernel on an SPMD grid (an LNC degree is a
grid of that many programs).
"""

import math as _math
import functools
import os

import numpy as np

from ..errors import front_door
from ..nki._numpy_kernel import BaremetalKernel, SimulateKernel, signature_of, _memo, \
    _memo_lock
from .. import tracer as _tracer
from .._proto import nkir_pb2 as _ir
from ..tracer import deps as _deps
from ..tracer.branch import rewrite as _rewrite
from ..tracer.builder import current as _current_trace
from . import _lang
from . import language, isa, typing, collectives  # noqa: F401

__all__ = ["jit", "simulate", "language", "isa", "typing", "collectives", "Kernel",
           "SimulatedKernel"]

#: The type of a dtype, for annotations (nki-library writes `index_dtype:
#: nki.dtype = nl.int32`); 0.6's reference types dtypes as nl's DType.
dtype = language.DType

#: NKI_SIMULATOR=1: every nki.jit kernel runs on the cpu simulator.
SIMULATOR_ENV = "NKI_SIMULATOR"
#: The target without NEURON_PLATFORM_TARGET_OVERRIDE: NKI 0.6's simulator
#: takes trn3 when no Neuron device says otherwise, and nkid has none.
DEFAULT_TARGET = "trn3"


def _precise_fp():
    v = os.environ.get("NKI_PRECISE_FP", "").strip()
    if v not in ("", "0", "1"):
        raise ValueError("NKI_PRECISE_FP must be 0 or 1, got '%s'" % v)
    return v != "0"


class _Trace06:
    """What both 0.6 kernel classes share: the 0.6 trace (the language
    flag set, the mixing check, the memo keyed apart from the legacy
    door's)."""

    def _fix_kwargs(self):
        kw = self.kwargs
        if "platform_target" in kw and kw["platform_target"]:
            raise ValueError("nki.jit(platform_target=...) is not supported (NKI 0.3+): set"
                             " NEURON_PLATFORM_TARGET_OVERRIDE instead")
        t = os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE", "").strip() or DEFAULT_TARGET
        t = {"gen2": "trn1", "inf2": "trn1", "gen3": "trn2", "gen4": "trn3"}.get(t, t)
        if t not in ("trn1", "trn2", "trn3"):
            raise ValueError("NEURON_PLATFORM_TARGET_OVERRIDE must be trn1, inf2, gen2, trn2,"
                             " gen3, trn3 or gen4, got '%s'" % t)
        self.platform_target = t

    def specialize(self, args, kwargs, memo=True):
        self._fix_kwargs()
        sig = signature_of(self.func).bind(*args, **kwargs)
        deps = _deps.fingerprint(self.func)
        key = ("nki06", self.func, self.grid, _tracer._sig_of(sig), self.platform_target,
               self.additional_compile_opt, deps) if deps is not None else None
        try:
            hash(key)
        except TypeError:
            key = None
        t = _memo.get(key) if key is not None and memo else None
        if t is None:
            _lang.check_kernel(self.func)
            with _lang.tracing():
                t = self._trace06(args, kwargs)
            if key is not None and t.memo_ok:
                with _memo_lock:
                    _memo[key] = t
        t = _with_written_params(t)
        self._last_traced = t
        return t

    _last_traced = None

    def _results(self, traced, outputs, arrays):
        """The kernel's return value; the parameters it wrote, when it also
        returns outputs, copied back into the caller's arrays (NKI 0.6:
        "input arrays are updated in-place if the kernel modified" them)."""
        wp = getattr(traced, "written_params", None)
        if not wp:
            return super()._results(traced, outputs, arrays)
        from .. import _shm
        from ..client import from_wire
        from ..nki._numpy_kernel import _returned
        tx = _shm.current()
        res = [tx.result(t, from_wire) if tx is not None else from_wire(t) for t in outputs]
        n = len(res) - len(wp)
        for pos, r in zip(wp, res[n:]):
            a = arrays[pos]
            if isinstance(a, np.ndarray):
                np.copyto(a, r.astype(a.dtype, copy=False))
        return _returned(traced, res[:n], arrays)


    def trace06_to(self, args, grid, target="", options=""):
        """The TracedKernel of ``self(*args)`` on ``grid`` for ``target``
        (default: the environment's), not memoized: ``python -m
        nkid.trace`` of a 0.6 kernel."""
        k = type(self)(self.func, grid, **self.kwargs)
        k._fix_kwargs()
        if target:
            k.platform_target = target
        k.additional_compile_opt = options or k.additional_compile_opt
        _lang.check_kernel(k.func)
        with _lang.tracing():
            return k._trace06(tuple(args), {})

    def _trace06(self, args, kwargs):
        """NKI 0.6 evaluates its loops as Python does (the language guide:
        "the compiler unrolls every loop"): the kernel is traced with
        affine_range / sequential_range / fori_loop unrolled, up to
        UNROLL_TRIPS trips in all; past that, with each loop traced once
        into an NKIR loop (the IR does not grow with trip counts), and if
        that trace needs a loop index as a Python value (a list indexed by
        it, min() of it, ...), unrolled whatever its size."""
        def go():
            # NKI 0.6's kernel[n] runs on n physical cores of a logical
            # one (lnc.rst)
            return _tracer.trace(self.func, args, kwargs, self.grid,
                                 target=self.platform_target,
                                 options=self.additional_compile_opt,
                                 cores=_math.prod(int(g) for g in self.grid))
        unrolled = None
        try:
            with _lang.unrolled(UNROLL_TRIPS):
                unrolled = go()
            if _nops(unrolled.kernel.body) <= UNROLL_OPS:
                return unrolled
        except _lang.TooManyTrips:
            pass
        try:
            return go()
        except Exception:
            if unrolled is not None:
                return unrolled
            with _lang.unrolled():
                return go()


    def with_schedule(self, edges):
        """This kernel with scheduling edges ``[(name, name or [names]),
        ...]`` between named instructions: nkid runs instructions in
        program order, so the edges are checked for form and kept
        (``schedule``) without changing results."""
        out = []
        for e in edges:
            if not isinstance(e, (tuple, list)) or len(e) != 2:
                raise ValueError("with_schedule takes (instruction name, name or list of names)"
                                 " pairs, got %r" % (e,))
            after, before = e
            before = [before] if isinstance(before, str) else list(before)
            if not isinstance(after, str) or not all(isinstance(x, str) for x in before):
                raise ValueError("with_schedule: instruction names are strings, got %r" % (e,))
            out.append((after, tuple(before)))
        k = type(self)(self.func, self.grid, **self.kwargs)
        k.schedule = self.schedule + out
        return k

    schedule = []


#: Loop trips a kernel's trace unrolls before it traces its loops as NKIR
#: loops instead (see _Trace06._trace06), and the ops an unrolled trace may
#: have (the executor takes 65536).
UNROLL_TRIPS = 4096
UNROLL_OPS = 16384


def _nops(body):
    n = 0
    for op in body:
        n += 1
        if op.HasField("loop"):
            n += _nops(op.loop.body)
        if op.HasField("branch"):
            n += _nops(op.branch.then_body) + _nops(op.branch.else_body)
    return n


def _written(ops, ids, out):
    for op in ops:
        if op.HasField("dst") and op.dst.tensor in ids and op.kind != _ir.OP_ALLOC:
            out.add(op.dst.tensor)
        if op.HasField("loop"):
            _written(op.loop.body, ids, out)
        if op.HasField("branch"):
            _written(op.branch.then_body, ids, out)
            _written(op.branch.else_body, ids, out)
    return out


def _with_written_params(t):
    """``t``, or (once, kept on it) a copy whose outputs also carry the
    parameters the kernel writes while returning outputs of its own
    (``written_params``: their positions)."""
    if t.ret_kind == "none":
        return t
    v = t.__dict__.get("_wp_variant")
    if v is not None:
        return v
    ids = {p.tensor: i for i, p in enumerate(t.kernel.params)}
    wr = sorted(_written(t.kernel.body, set(ids), set()) - set(t.kernel.outputs))
    if not wr:
        t._wp_variant = t
        return t
    k = _ir.Kernel()
    k.CopyFrom(t.kernel)
    k.outputs.extend(wr)
    outs = list(t.outputs) + [t.params[ids[w]] for w in wr]
    v = type(t)(t.name, k, t.params, outs, t.inplace, t.ret_kind)
    v.written_params = [ids[w] for w in wr]
    t._wp_variant = v
    return v


def _framework(v):
    """'torch' or 'jax' for a framework tensor argument, else None."""
    if isinstance(v, np.ndarray) or not _tracer.is_array_arg(v):
        return None
    mod = type(v).__module__.split(".")[0]
    return {"torch": "torch", "jax": "jax", "jaxlib": "jax"}.get(mod)


def _host_call(call, args, kwargs):
    """``call`` on numpy copies of torch / JAX tensor arguments (nkid runs
    kernels on host arrays), its results handed back as the framework's
    tensors; a torch tensor the kernel wrote in place is updated (JAX
    arrays are immutable)."""
    kinds = [k for k in map(_framework, list(args) + list(kwargs.values())) if k]
    if not kinds:
        return call(*args, **kwargs)

    def host(v):
        k = _framework(v)
        if k == "torch":
            return v.detach().cpu().numpy().copy()
        if k == "jax":
            return np.array(v)
        return v
    hargs = [host(a) for a in args]
    hkw = {n: host(v) for n, v in kwargs.items()}
    res = call(*hargs, **hkw)
    if kinds[0] == "torch":
        import torch
        for a, h in list(zip(args, hargs)) + [(kwargs[n], hkw[n]) for n in kwargs]:
            if _framework(a) == "torch":
                a.copy_(torch.from_numpy(h))
        back = torch.from_numpy
    else:
        import jax.numpy as jnp
        back = jnp.asarray
    if res is None:
        return None
    if isinstance(res, (tuple, list)):
        return type(res)(back(np.ascontiguousarray(r)) for r in res)
    return back(np.ascontiguousarray(res))


class Kernel(_Trace06, BaremetalKernel):
    """What ``nki.jit`` returns: calling it on numpy arrays traces (once
    per specialization) and runs the kernel through nkid (Run); with
    ``NKI_SIMULATOR=1`` it simulates instead."""

    def __init__(self, func=None, grid=(), **kwargs):
        kwargs.pop("mode", None)            # deprecated and ignored since 0.3
        super().__init__(func, grid, **kwargs)

    @front_door
    def __call__(self, *args, **kwargs):
        if _lang.active() and _current_trace() is not None:
            # a jit kernel called from a kernel being traced: part of it
            # (NKI 0.6 asks for undecorated sub-kernels; this runs either)
            return _rewrite(self.func)(*args, **kwargs)
        if os.environ.get(SIMULATOR_ENV, "").strip() not in ("", "0"):
            return simulate(self)(*args, **kwargs)
        if any(map(_framework, list(args) + list(kwargs.values()))):
            return _host_call(self.__call__, args, kwargs)
        old = self.platform_target
        self._fix_kwargs()              # the target of this call (the environment's)
        if self.platform_target != old:
            self._plans = None          # warm-call plans are per target
        out = super().__call__(*args, **kwargs)
        t = self._last_traced
        if t is not None and getattr(t, "written_params", None) and self._plans:
            # the prebuilt request returns outputs only: such a kernel
            # goes the whole way, which copies the written inputs back
            from ..nki import _plan
            self._plans.pop(_plan.arg_key(args, kwargs), None)
        return out


class SimulatedKernel(_Trace06, SimulateKernel):
    """What ``nki.simulate(kernel)`` returns: the kernel on nkid's cpu
    simulator (the Simulate RPC)."""

    def __init__(self, func=None, grid=(), **kwargs):
        kwargs.pop("mode", None)
        super().__init__(func, grid, **kwargs)

    @front_door
    def __call__(self, *args, **kwargs):
        if any(map(_framework, list(args) + list(kwargs.values()))):
            return _host_call(self.__call__, args, kwargs)
        return super().__call__(*args, **kwargs)

    def execute(self, traced, inputs):
        reply = self._call(traced.with_precise_fp(_precise_fp()), "simulate", inputs)
        self.last_reply = reply
        if reply.device_print:
            import sys
            sys.stdout.write(reply.device_print)
            sys.stdout.flush()
        return reply.outputs


def jit(fn=None, **kwargs):
    """Just-in-time compile a NKI kernel: ``@nki.jit`` or
    ``@nki.jit(**options)``; returns a :class:`Kernel`."""
    if fn is None:
        return functools.partial(jit, **kwargs)
    if isinstance(fn, Kernel):
        return fn
    return Kernel(fn, **kwargs)


def simulate(kernel):
    """``kernel`` (a ``nki.jit`` kernel, maybe with a grid, or a plain
    function) on nkid's cpu simulator."""
    if isinstance(kernel, (Kernel, SimulatedKernel)):
        return SimulatedKernel(kernel.func, kernel.grid, **kernel.kwargs)
    return SimulatedKernel(kernel)
