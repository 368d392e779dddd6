"""The kernel classes behind the front doors (NKI's TraceKernel / NumpyKernel
family), with nkid doing the compile and the run.

``TraceKernel`` wraps a kernel function with its launch grid and options and
traces it once per specialization (argument shapes and dtypes, static
arguments, grid, target, options): a per-process memo.  The NumpyKernel
classes take numpy arrays, send the traced kernel and the inputs to nkid and
return numpy outputs:

* BaremetalKernel: ``Run`` (compile if needed, execute once).
* SimulateKernel: ``Simulate`` (the cpu executor; device_print to stdout).
* BenchmarkKernel: ``Benchmark`` (shapes only; latency percentiles).
* ProfileKernel: ``Profile`` (artifacts written by the client).
"""

import base64
import functools
import inspect
import json
import os
import sys
import threading

import numpy as np

from .._proto import nkid_pb2 as pb
from .. import _shm
from .. import targets as _targets
from . import _plan
from .. import tracer as _tracer
from ..client import get_client, to_wire, from_wire, kernel_ref
from ..errors import NkidError, front_door, shallow
from ..tracer import deps as _deps
from ..tracer import dtypes as _dt
from ..tracer import array_args, signature_of

__all__ = ["TraceKernel", "NumpyKernel", "BaremetalKernel", "SimulateKernel",
           "BenchmarkKernel", "ProfileKernel", "BenchmarkResult", "NCLatency",
           "normalize_grid", "array_args", "check_dtypes", "accepted_dtypes", "dump_config",
           "MIN_LATENCY_ITERS", "LATENCY_ENV"]

#: Fewer timed iterations than this and nki.benchmark has no latency
#: percentiles (``benchmark_result.nc_latency`` is None).
MIN_LATENCY_ITERS = 2
#: Most executions nki.profile takes for num_execs and profile_nth (nkid's
#: Profile RPC bound).
PROFILE_MAX = 1000

_memo = {}
_memo_lock = threading.Lock()


class Grid(tuple):
    """A launch grid: its dimensions as ints, and ``cores``, the physical
    NeuronCores its programs are spread over (the product of its ``nl.nc``
    factors: the performance model's, docs/model.md)."""
    cores = 1


def normalize_grid(grid):
    """A launch grid as a Grid of ints (``nl.nc``/``nl.spmd_dim`` multiply)."""
    if grid is None:
        return Grid()
    if not isinstance(grid, (tuple, list)):
        grid = (grid,)
    out, cores = [], 1
    for g in grid:
        n = int(g)
        if n < 1:
            raise ValueError("launch grid dimensions must be >= 1, got %r" % (grid,))
        out.append(n)
        cores *= getattr(g, "cores", 1)
    out = Grid(out)
    out.cores = getattr(grid, "cores", cores)
    return out


#: The host dtypes of kernel arguments, in NKI's order (those the tracer
#: takes: see accepted_dtypes).
_HOST_DTYPES = ("float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "int8",
                "int16", "int32", "uint8", "uint16", "uint32", "bool")


def accepted_dtypes():
    """The names of the dtypes a kernel's array arguments may have."""
    out = []
    for name in _HOST_DTYPES:
        try:
            _dt.normalize(name)
        except TypeError:
            continue
        out.append(name)
    return out


def check_dtypes(func, args, kwargs):
    """Refuse an array argument of a dtype NKI does not take (numpy's
    default float64, say) before anything is traced, naming the parameter,
    its dtype and the dtypes NKI accepts."""
    sig = signature_of(func)
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return                      # the trace says what is wrong
    for name, v in bound.arguments.items():
        kind = sig.parameters[name].kind
        if kind == inspect.Parameter.VAR_POSITIONAL:
            items = [("%s[%d]" % (name, i), x) for i, x in enumerate(v)]
        elif kind == inspect.Parameter.VAR_KEYWORD:
            items = list(v.items())
        else:
            items = [(name, v)]
        for pname, x in items:
            if not _tracer.is_array_arg(x):
                continue
            try:
                _dt.normalize(x.dtype)
            except TypeError:
                got = getattr(x.dtype, "name", str(x.dtype))
                raise shallow(TypeError(
                    "kernel '%s': parameter '%s' has dtype %s, which NKI does not accept;"
                    " NKI accepts %s (convert it first, e.g. %s.astype(numpy.%s))"
                    % (getattr(func, "__name__", "?"), pname, got,
                       ", ".join(accepted_dtypes()), pname,
                       _NEAREST_DTYPE.get(got, "float32")))) from None


# The accepted dtype a conversion suggests for one NKI does not take.
_NEAREST_DTYPE = {"int64": "int32", "uint64": "uint32", "longlong": "int32",
                  "ulonglong": "uint32", "float64": "float32",
                  "longdouble": "float32", "complex64": "float32",
                  "complex128": "float32"}


def dump_config(traced, platform_target="", additional_compile_opt="", grid=()):
    """The ``backend_config`` of a traced kernel: base64 of a JSON object
    holding the kernel's NKIR (itself base64) with everything needed to
    compile and run it.  Shared by every kernel class; the framework
    bridges put it in their XLA custom call."""
    from ..tracer import dtypes as dt

    def sig(items):
        return [{"name": n, "shape": list(shape), "dtype": dt.name_of(d)}
                for n, shape, d in items]
    from .. import __version__
    cfg = {
        "format": traced.format,
        "kernel_name": traced.name,
        "ir_digest": traced.ir_digest,
        "ir": base64.b64encode(traced.ir).decode("ascii"),
        "source_files": list(traced.files),
        "grid": list(grid),
        "platform_target": platform_target or "",
        "additional_compile_opt": additional_compile_opt or "",
        "inputs": sig(traced.params),
        "outputs": sig(traced.outputs),
        "inplace": list(traced.inplace),
        "producer": "nkid-python/" + __version__,
    }
    text = json.dumps(cfg, sort_keys=True, separators=(",", ":"))
    return base64.b64encode(text.encode()).decode("ascii")


class TraceKernel:
    """A kernel function with its grid and options, traced per specialization."""

    #: never a pytest test, even when named test_* (NKI's own examples
    #: name kernels so): update_wrapper's __wrapped__ would let pytest
    #: collect it and call it with fixtures
    __test__ = False

    def __init__(self, func=None, grid=(), **kwargs):
        inner = getattr(func, "func", None)
        if func is not None and inner is not None and callable(inner) and \
                not inspect.isfunction(func):
            grid = grid or getattr(func, "grid", ())   # a kernel object: take its function
            kwargs = {**getattr(func, "kwargs", {}), **kwargs}
            func = inner
        self.func = func
        self.grid = normalize_grid(grid)
        self.kwargs = kwargs
        self.platform_target = _targets.check(kwargs.get("platform_target") or "")
        self.additional_compile_opt = kwargs.get("additional_compile_opt") or ""
        #: compile again even if nkid has a failure cached for the kernel
        self.retry_failed = bool(kwargs.get("retry_failed", False))
        if func is not None:
            functools.update_wrapper(self, func, updated=())

    def trace(self, func=None, **kwargs):
        """Decorator factory: ``trace(fn, **kw)`` or ``trace(**kw)(fn)``."""
        if func is None:
            return functools.partial(self.trace, **kwargs)
        return type(self)(func, **kwargs)

    def __getitem__(self, grid):
        return type(self)(self.func, grid=grid, **self.kwargs)

    def __repr__(self):
        name = getattr(self.func, "__name__", None)
        return "<%s %s grid=%s>" % (type(self).__name__, name, list(self.grid))

    def specialize(self, args, kwargs, memo=True):
        """The TracedKernel for these arguments (traced at most once per
        process and specialization unless memo is False)."""
        sig = signature_of(self.func).bind(*args, **kwargs)
        # The trace also reads globals, closures, defaults and helpers:
        # their fingerprint is part of the key, and without one (state
        # that cannot be hashed) the kernel is traced again.
        deps = _deps.fingerprint(self.func)
        key = (self.func, self.grid, self.grid.cores, _tracer._sig_of(sig), self.platform_target,
               self.additional_compile_opt, deps) if deps is not None else None
        try:
            hash(key)
        except TypeError:
            key = None
        if key is not None and memo:
            t = _memo.get(key)
            if t is not None:
                return t
        t = _tracer.trace(self.func, args, kwargs, self.grid,
                          target=self.platform_target, options=self.additional_compile_opt)
        if key is not None and t.memo_ok:
            with _memo_lock:
                _memo[key] = t
        return t

    def dump_config(self, traced):
        """This kernel's ``backend_config`` for a traced specialization."""
        return dump_config(traced, self.platform_target, self.additional_compile_opt,
                           self.grid)

    @front_door
    def __call__(self, *args, **kwargs):
        traced = self.specialize(args, kwargs)
        return self.post_process_call(traced, args, kwargs)

    def post_process_call(self, traced, args, kwargs):
        return traced


class NumpyKernel(TraceKernel):
    """A kernel that runs on numpy arrays through nkid."""

    @front_door
    def __call__(self, *args, **kwargs):
        check_dtypes(self.func, args, kwargs)
        return super().__call__(*args, **kwargs)

    def _inputs(self, traced, args, kwargs, values=True):
        arrays = array_args(self.func, args, kwargs)
        out = []
        for (name, shape, dtype), a in zip(traced.params, arrays):
            if not values or not isinstance(a, np.ndarray):
                if values and hasattr(a, "zeros"):
                    a = a.zeros()           # a placeholder: zeros
                elif not values:
                    out.append(pb.Tensor(name=name, dtype=_dt.wire_name(dtype),
                                         shape=list(shape)))
                    continue
            tx = _shm.current() if values else None
            out.append(tx.wire(name, a, to_wire) if tx is not None
                       else to_wire(name, np.asarray(a)))
        return out, arrays

    def _lookup_key(self, traced):
        return (traced.ir_digest, self.platform_target or "", self.additional_compile_opt or "")

    def _ref(self, traced):
        """The KernelRef: after the first nkid answer for this traced IR,
        its NEFF key alone (a warm process asks Lookup by the IR's digest
        first and sends no IR when nkid has compiled that IR)."""
        lk = self._lookup_key(traced)
        key = _neff_keys.get(lk)
        if key is None and lk not in _looked_up:
            _looked_up.add(lk)
            try:
                rep = get_client().lookup(traced.ir_digest, traced.format, lk[1], lk[2])
                if rep.found:
                    key = _neff_keys[lk] = rep.neff_key
            except NkidError as e:
                if e.code != "UNIMPLEMENTED":
                    raise
        if key:
            return pb.KernelRef(neff_key=key, target=lk[1], options=lk[2],
                                retry_failed=self.retry_failed)
        return kernel_ref(traced, self.platform_target, self.additional_compile_opt,
                          retry_failed=self.retry_failed)

    def _call(self, traced, method, *args, **kwargs):
        """Call nkid, with the shared-memory regions of this thread's
        Transfer (inline again if nkid refuses them)."""
        tx = _shm.current()
        if tx is not None:
            tx.seal()
            if method in _shm.OUTPUT_METHODS and tx.output_shm is not None:
                kwargs["output_shm"] = tx.output_shm
        try:
            return self._call_ref(traced, method, *args, **kwargs)
        except NkidError as e:
            if tx is None or not tx.refused(e):
                raise
            kwargs.pop("output_shm", None)
            return self._call_ref(traced, method, *args, **kwargs)

    def _call_ref(self, traced, method, *args, **kwargs):
        """Call nkid; a NEFF key nkid no longer has falls back to the IR."""
        ref = self._ref(traced)
        try:
            reply = getattr(get_client(), method)(ref, *args, **kwargs)
        except NkidError as e:
            if not ref.neff_key or e.code not in ("NOT_FOUND", "FAILED_PRECONDITION") \
                    or "shared-memory region" in str(e):
                raise
            _neff_keys.pop(self._lookup_key(traced), None)
            ref = kernel_ref(traced, self.platform_target, self.additional_compile_opt,
                             retry_failed=self.retry_failed)
            reply = getattr(get_client(), method)(ref, *args, **kwargs)
        if getattr(reply, "neff_key", ""):
            _neff_keys[self._lookup_key(traced)] = reply.neff_key
        return reply

    def _results(self, traced, outputs, arrays):
        tx = _shm.current()
        res = [tx.result(t, from_wire) if tx is not None else from_wire(t) for t in outputs]
        return _returned(traced, res, arrays)

    def execute(self, traced, inputs):
        raise NotImplementedError

    def post_process_call(self, traced, args, kwargs):
        # Large tensors through /dev/shm for this call (nkid/_shm.py).
        with _shm.Transfer(get_client().socket) as tx:
            inputs, arrays = self._inputs(traced, args, kwargs)
            tx.expect(traced.outputs)
            outputs = self.execute(traced, inputs)
            return self._results(traced, outputs, arrays)


def _returned(traced, res, arrays):
    """What the kernel call returns, given its output arrays res: them (one,
    a tuple or a list), or None after copying them into the arrays the
    kernel wrote."""
    if traced.ret_kind == "none":
        for pos, r in zip(traced.inplace, res):
            a = arrays[pos]
            if isinstance(a, np.ndarray):
                np.copyto(a, r.astype(a.dtype, copy=False))
        return None
    if traced.ret_kind == "single":
        return res[0]
    return list(res) if traced.ret_kind == "list" else tuple(res)


def _write_new(path, data, overwrite):
    if not overwrite and os.path.exists(path):
        raise FileExistsError("%s already exists; pass overwrite=True to replace it" % path)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _trace_names(save_trace_name, executions):
    """NKI's trace file names: <name> for the first profiled execution,
    <stem>_exec_<n><ext> for the later ones."""
    stem, ext = os.path.splitext(save_trace_name)
    return [save_trace_name if i == 0 else "%s_exec_%d%s" % (stem, n, ext)
            for i, n in enumerate(executions)]


class BaremetalKernel(NumpyKernel):
    """Compile and run a kernel once through nkid (nki.baremetal)."""

    def __init__(self, func=None, grid=(), save_neff_name=None, save_trace_name=None,
                 additional_compile_opt=None, artifacts_dir=None, **kwargs):
        if save_trace_name is not None and save_neff_name != "file.neff":
            raise ValueError('Known issue: if save_trace_name is specified, save_neff_name'
                             ' must be set to "file.neff".')
        super().__init__(func, grid, save_neff_name=save_neff_name,
                         save_trace_name=save_trace_name,
                         additional_compile_opt=additional_compile_opt,
                         artifacts_dir=artifacts_dir, **kwargs)
        self.save_neff_name = save_neff_name
        self.save_trace_name = save_trace_name
        self.artifacts_dir = artifacts_dir
        self.last_reply = None
        # Warm calls without artifacts take a prebuilt request (_plan.py).
        self._plannable = save_neff_name is None and save_trace_name is None and \
            artifacts_dir is None
        self._plans = None

    @front_door
    def __call__(self, *args, **kwargs):
        if not self._plannable or self.func is None:
            return super().__call__(*args, **kwargs)
        plans = self._plans
        if plans is None:
            plans = self._plans = _plan.table(self)
        # A plan exists only for argument kinds that went the whole way
        # (dtypes checked, traced, run): its key has their dtypes.
        hit = _plan.lookup(plans, self.func, args, kwargs)
        if hit is not None:
            plan, arrays = hit
            reply = _plan.run(plan, arrays)
            if reply is not _plan.MISS:
                self.last_reply = reply
                return _returned(plan.traced, plan.results(reply), arrays)
        # The whole way; the fingerprint is taken before the trace is.
        check_dtypes(self.func, args, kwargs)
        fp = _deps.fingerprint(self.func)
        traced = self.specialize(args, kwargs)
        self.last_reply = None
        out = self.post_process_call(traced, args, kwargs)
        _plan.record(self, plans, traced, fp, args, kwargs, self.last_reply)
        return out

    def post_process_call(self, traced, args, kwargs):
        d = self.artifacts_dir
        if d is not None and os.path.isdir(d) and os.listdir(d):
            raise ValueError("artifacts_dir '%s' must be empty: a non-empty directory would"
                             " lead to a compilation error" % d)
        return super().post_process_call(traced, args, kwargs)

    def execute(self, traced, inputs):
        d = self.artifacts_dir or os.getcwd()
        if self.artifacts_dir:
            os.makedirs(d, exist_ok=True)
        if self.save_trace_name:
            reply = self._call(traced, "profile", inputs, 1, 1)
            self.last_reply = reply
            _write_new(os.path.join(d, self.save_neff_name), reply.neff, True)
            if reply.traces:
                _write_new(os.path.join(d, self.save_trace_name), reply.traces[0].trace, True)
            return reply.outputs
        reply = self._call(traced, "run", inputs, return_neff=bool(self.save_neff_name))
        self.last_reply = reply
        if self.save_neff_name:
            _write_new(os.path.join(d, self.save_neff_name), reply.neff, True)
        return reply.outputs


def _param_holding(func, args, kwargs, obj):
    """The name of func's parameter that obj was passed as, or None."""
    if obj is None:
        return None
    try:
        bound = signature_of(func).bind(*args, **kwargs)
    except TypeError:
        return None
    for name, v in bound.arguments.items():
        if v is obj:
            return name
    return None


class SimulateKernel(NumpyKernel):
    """Run a kernel on nkid's cpu simulator (nki.simulate_kernel)."""

    def __init__(self, func=None, grid=(), dump_file=None, **kwargs):
        super().__init__(func, grid, **kwargs)
        self._dump_file = dump_file
        self.last_reply = None

    @front_door
    def __call__(self, *args, **kwargs):
        for a in array_args(self.func, args, kwargs):
            if not isinstance(a, np.ndarray):
                raise shallow(TypeError("All input and output tensors to the kernel must be"
                                        " numpy.ndarray when using this simulate_kernel API"
                                        " (got %s)" % type(a).__name__))
        try:
            return super().__call__(*args, **kwargs)
        except AttributeError as e:
            # A list or tuple the kernel uses as a tensor (a.tolist()):
            # the documented TypeError, naming the parameter.
            name = _param_holding(self.func, args, kwargs, getattr(e, "obj", None))
            if name is None or not isinstance(e.obj, (list, tuple)):
                raise
            raise shallow(TypeError("All input and output tensors to the kernel must be"
                                    " numpy.ndarray when using this simulate_kernel API"
                                    " (got %s for parameter '%s'; pass numpy.asarray(%s))"
                                    % (type(e.obj).__name__, name, name))) from None

    def execute(self, traced, inputs):
        # NKI_PRECISE_FP: unset or 0 keeps low-precision tiles in fp32 (NKI
        # 2.24's simulator); the other doors stand in for the device: round
        reply = self._call(traced.with_precise_fp(precise_fp()), "simulate", inputs)
        self.last_reply = reply
        if reply.device_print:
            if self._dump_file:
                with open(self._dump_file, "a") as f:
                    f.write(reply.device_print)
            else:
                sys.stdout.write(reply.device_print)
                sys.stdout.flush()
        return reply.outputs


#: NKI_PRECISE_FP: "1" stores bfloat16/float16/fp8 tiles as those types in
#: simulation; "0" (the default, NKI 2.24's behaviour) keeps them in fp32.
PRECISE_FP_ENV = "NKI_PRECISE_FP"


def precise_fp():
    """True if simulation rounds low-precision tiles (NKI_PRECISE_FP=1)."""
    v = os.environ.get(PRECISE_FP_ENV, "").strip()
    if v not in ("", "0", "1"):
        raise ValueError("%s must be 0 or 1, got '%s'" % (PRECISE_FP_ENV, v))
    return v == "1"


class NCLatency:
    """Latency percentiles of a benchmark, in microseconds.

    On the cpu backend ``nc_latency`` holds the modeled NeuronCore latency
    (``source == "model"``, docs/model.md): the model is deterministic, so
    every percentile is the same figure.  ``cpu_latency`` holds the host
    executor's own time."""

    PERCENTILES = (0, 1, 10, 25, 50, 90, 99, 100)

    def __init__(self, result_dicts, source="", note=""):
        #: {percentile: microseconds}
        self.result_dicts = dict(result_dicts)
        #: "model", "cpu" or "device" ("" if nkid did not say)
        self.source = source
        #: what the figures are, in a sentence
        self.note = note

    def get_latency_percentile(self, p):
        """The p-th percentile latency in microseconds.  result_dicts must
        be in form of {x: } where x is the percentile: p0, p1, p10, p25,
        p50, p90, p99 and p100."""
        if p not in self.result_dicts:
            raise ValueError("percentile must be one of %s, got %r"
                             % (list(self.PERCENTILES), p))
        return self.result_dicts[p]

    def __str__(self):
        g = self.result_dicts.get
        s = ("min %.2f us, p25 %.2f us, p50 %.2f us, p90 %.2f us, max %.2f us"
             % (g(0, 0.0), g(25, 0.0), g(50, 0.0), g(90, 0.0), g(100, 0.0)))
        if self.source == "model":
            s += " (modeled NeuronCore latency: deterministic)"
        return s

    def __repr__(self):
        return "<NCLatency %s>" % self


#: NKID_BENCHMARK_LATENCY: "model" or "cpu" picks what nc_latency holds on
#: the cpu backend; unset, nkid's benchmark.latency decides.
LATENCY_ENV = "NKID_BENCHMARK_LATENCY"


class BenchmarkResult:
    """What ``bench.benchmark_result`` holds: ``nc_latency`` (an
    :class:`NCLatency`, or None when iters < MIN_LATENCY_ITERS) and the raw
    per-iteration ``samples_us``; on the cpu backend also ``cpu_latency``
    and ``cpu_samples_us`` (the host executor's time), ``model_us`` and
    ``model_target`` and ``model_version`` (the NeuronCore model,
    docs/model.md) and ``note``."""

    def __init__(self, nc_latency, samples_us=(), cpu_latency=None, cpu_samples_us=(),
                 model_us=0.0, model_target="", note="", model_version=""):
        self.nc_latency = nc_latency
        self.samples_us = list(samples_us)
        self.cpu_latency = cpu_latency
        self.cpu_samples_us = list(cpu_samples_us)
        self.model_us = model_us
        self.model_target = model_target
        self.model_version = model_version
        self.note = note

    def __str__(self):
        lines = ["nc_latency:  %s" % (self.nc_latency if self.nc_latency is not None else
                                       "none (fewer than %d iterations)" % MIN_LATENCY_ITERS)]
        if self.cpu_latency is not None:
            lines.append("cpu_latency: %s" % self.cpu_latency)
        if self.model_us > 0:
            lines.append("model:       %.2f us on %s" % (self.model_us, self.model_target))
        lines.append("samples:     %d" % len(self.samples_us))
        if self.note:
            lines.append("note:        %s" % self.note)
        return "\n".join(lines)

    def __repr__(self):
        return "<BenchmarkResult nc_latency p50 %s, %d samples>" % (
            "%.2f us" % self.nc_latency.get_latency_percentile(50)
            if self.nc_latency is not None else "none", len(self.samples_us))

    @classmethod
    def from_reply(cls, reply, iters):
        """From a BenchmarkReply, honouring NKID_BENCHMARK_LATENCY."""
        want = os.environ.get(LATENCY_ENV, "").strip().lower()
        if want not in ("", "model", "cpu"):
            raise ValueError("%s must be 'model' or 'cpu', got '%s'"
                             % (LATENCY_ENV, os.environ[LATENCY_ENV]))
        enough = iters >= MIN_LATENCY_ITERS
        src, note = reply.latency_source, reply.latency_note
        pct = {int(p.p): p.us for p in reply.percentiles}
        samples = list(reply.samples_us)
        cpu = {int(p.p): p.us for p in reply.cpu_percentiles}
        cpu_lat = NCLatency(cpu, "cpu", "the host executor's time") \
            if cpu and enough else None
        if want == "cpu" and src == "model":
            pct, samples, src = cpu, list(reply.cpu_samples_us), "cpu"
        elif want == "model" and src == "cpu" and reply.model_us > 0:
            pct = {p: reply.model_us for p in NCLatency.PERCENTILES}
            samples, src = [reply.model_us] * len(samples), "model"
        lat = NCLatency(pct, src, note) if pct and enough else None
        return cls(lat, samples, cpu_lat, reply.cpu_samples_us, reply.model_us,
                   reply.model_target, note, reply.model_version)


class BenchmarkKernel(NumpyKernel):
    """Benchmark a kernel through nkid (nki.benchmark): shapes only, one
    core, the batch class."""

    def __init__(self, func=None, grid=(), warmup=10, iters=100, save_neff_name=None,
                 save_trace_name=None, additional_compile_opt=None, **kwargs):
        super().__init__(func, grid, warmup=warmup, iters=iters,
                         save_neff_name=save_neff_name, save_trace_name=save_trace_name,
                         additional_compile_opt=additional_compile_opt, **kwargs)
        self.warmup, self.iters = int(warmup), int(iters)
        self.save_neff_name = save_neff_name
        self.save_trace_name = save_trace_name
        self.benchmark_result = None

    def post_process_call(self, traced, args, kwargs):
        inputs, _ = self._inputs(traced, args, kwargs, values=False)
        reply = self._call(traced, "benchmark", inputs, self.warmup, self.iters,
                           return_neff=bool(self.save_neff_name))
        self.benchmark_result = BenchmarkResult.from_reply(reply, self.iters)
        if self.save_neff_name:
            _write_new(os.path.abspath(self.save_neff_name), reply.neff, True)
        if self.save_trace_name:
            rep = self._call(traced, "profile", self._inputs(traced, args, kwargs)[0], 1, 1)
            if rep.traces:
                _write_new(os.path.abspath(self.save_trace_name), rep.traces[0].trace, True)
        return None


class ProfileKernel(NumpyKernel):
    """Profile a kernel through nkid (nki.profile); the client writes the
    artifacts into working_directory in NKI's layout."""

    def __init__(self, func=None, grid=(), working_directory=None, save_neff_name="file.neff",
                 save_trace_name="profile.ntff", additional_compile_opt=None, overwrite=False,
                 profile_nth=1, num_execs=None, **kwargs):
        if func is not None and working_directory is None:
            raise ValueError("Please specify working directory")
        if working_directory is not None and not os.path.isabs(working_directory):
            raise ValueError("working_directory must be an absolute path, got '%s'"
                             % (working_directory,))
        super().__init__(func, grid, working_directory=working_directory,
                         save_neff_name=save_neff_name, save_trace_name=save_trace_name,
                         additional_compile_opt=additional_compile_opt, overwrite=overwrite,
                         profile_nth=profile_nth, num_execs=num_execs, **kwargs)
        self.work_dir = working_directory
        self.save_neff_name = save_neff_name or "file.neff"
        self.save_trace_name = save_trace_name or "profile.ntff"
        self.overwrite = bool(overwrite)
        # None means the default; 0 is out of range, as on hardware.
        self.profile_nth = int(1 if profile_nth is None else profile_nth)
        self.num_execs = int(self.profile_nth if num_execs is None else num_execs)
        for name, v in (("profile_nth", self.profile_nth), ("num_execs", self.num_execs)):
            if not 1 <= v <= PROFILE_MAX:
                raise ValueError("%s must be 1 to %d, got %d" % (name, PROFILE_MAX, v))

    def executions(self):
        """The executions that get a trace: profile_nth, 2*profile_nth, ...
        <= num_execs (profile_nth alone if num_execs < profile_nth)."""
        n = self.profile_nth
        return list(range(n, max(self.num_execs, n) + 1, n))

    def _paths(self, executions):
        wd = self.work_dir
        traces = [os.path.join(wd, t) for t in _trace_names(self.save_trace_name, executions)]
        reports = [os.path.join(wd, "json_reports", "%s.json" % os.path.splitext(
            os.path.basename(t))[0]) for t in traces]
        return os.path.join(wd, self.save_neff_name), traces, reports

    def post_process_call(self, traced, args, kwargs):
        neff, traces, reports = self._paths(self.executions())
        if not self.overwrite:
            for p in [neff] + traces + reports:
                if os.path.exists(p):
                    raise FileExistsError("%s already exists; pass overwrite=True to"
                                          " replace the profile artifacts" % p)
        with _shm.Transfer(get_client().socket) as tx:
            inputs, arrays = self._inputs(traced, args, kwargs)
            tx.expect(traced.outputs)
            reply = self._call(traced, "profile", inputs, self.num_execs, self.profile_nth)
            os.makedirs(os.path.join(self.work_dir, "json_reports"), exist_ok=True)
            neff, traces, reports = self._paths([t.execution for t in reply.traces])
            _write_new(neff, reply.neff, True)
            for tr, tpath, rpath in zip(reply.traces, traces, reports):
                _write_new(tpath, tr.trace, True)
                _write_new(rpath, tr.summary_json, True)
            self.last_reply = reply
            print("Profile results are written to " + self.work_dir)
            return self._results(traced, reply.outputs, arrays)


_neff_keys = {}      # (IR digest, target, options) -> NEFF key nkid answered with
_looked_up = set()   # those already asked about (Lookup)
