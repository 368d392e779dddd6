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

import functools
import inspect
import os
import sys
import threading

import numpy as np

from .. import tracer as _tracer
from ..client import get_client, to_wire, from_wire, kernel_ref
from ..tracer import dtypes as _dt

__all__ = ["TraceKernel", "NumpyKernel", "BaremetalKernel", "SimulateKernel",
           "BenchmarkKernel", "ProfileKernel", "BenchmarkResult", "NCLatency",
           "normalize_grid", "array_args"]

_memo = {}
_memo_lock = threading.Lock()


def normalize_grid(grid):
    """A launch grid as a tuple of ints (``nl.nc``/``nl.spmd_dim`` multiply)."""
    if grid is None:
        return ()
    if not isinstance(grid, (tuple, list)):
        grid = (grid,)
    out = []
    for g in grid:
        n = int(g)
        if n < 1:
            raise ValueError("launch grid dimensions must be >= 1, got %r" % (grid,))
        out.append(n)
    return tuple(out)


def array_args(func, args, kwargs):
    """The array arguments of a call, in the order the tracer makes params."""
    sig = inspect.signature(func)
    bound = sig.bind(*args, **kwargs)
    out = []
    for name, v in bound.arguments.items():
        kind = sig.parameters[name].kind
        if kind == inspect.Parameter.VAR_POSITIONAL:
            out.extend(x for x in v if _tracer.is_array_arg(x))
        elif kind == inspect.Parameter.VAR_KEYWORD:
            out.extend(x for x in v.values() if _tracer.is_array_arg(x))
        elif _tracer.is_array_arg(v):
            out.append(v)
    return out


class TraceKernel:
    """A kernel function with its grid and options, traced per specialization."""

    #: keyword options this class accepts (others are kept and ignored)
    def __init__(self, func=None, grid=(), **kwargs):
        inner = getattr(func, "func", None)
        if func is not None and inner is not None and callable(inner) and \
                not inspect.isfunction(func):
            grid = grid or getattr(func, "grid", ())   # a kernel object: take its function
            func = inner
        self.func = func
        self.grid = normalize_grid(grid)
        self.kwargs = kwargs
        self.platform_target = kwargs.get("platform_target") or ""
        self.additional_compile_opt = kwargs.get("additional_compile_opt") or ""
        if func is not None:
            functools.update_wrapper(self, func, updated=())

    def trace(self, func=None, **kwargs):
        """Decorator factory: ``trace(fn, **kw)`` or ``trace(**kw)(fn)``."""
        if func is None:
            return functools.partial(self.trace, **kwargs)
        return type(self)(func, **kwargs)

    def __getitem__(self, grid):
        k = type(self)(self.func, grid=grid, **self.kwargs)
        return k

    def __repr__(self):
        name = getattr(self.func, "__name__", None)
        return "<%s %s grid=%s>" % (type(self).__name__, name, list(self.grid))

    def specialize(self, args, kwargs):
        """The TracedKernel for these arguments (traced at most once per process)."""
        sig = inspect.signature(self.func).bind(*args, **kwargs)
        key = (self.func, self.grid, _tracer._sig_of(sig), self.platform_target,
               self.additional_compile_opt)
        try:
            hash(key)
        except TypeError:
            key = None
        if key is not None:
            t = _memo.get(key)
            if t is not None:
                return t
        t = _tracer.trace(self.func, args, kwargs, self.grid,
                          target=self.platform_target, options=self.additional_compile_opt)
        if key is not None:
            with _memo_lock:
                _memo[key] = t
        return t

    def __call__(self, *args, **kwargs):
        traced = self.specialize(args, kwargs)
        return self.post_process_call(traced, args, kwargs)

    def post_process_call(self, traced, args, kwargs):
        return traced


class NumpyKernel(TraceKernel):
    """A kernel that runs on numpy arrays through nkid."""

    def _inputs(self, traced, args, kwargs, values=True):
        arrays = array_args(self.func, args, kwargs)
        out = []
        for (name, shape, dtype), a in zip(traced.params, arrays):
            if isinstance(a, np.ndarray):
                arr = a
            elif hasattr(a, "zeros"):
                arr = a.zeros() if values else None
            else:
                arr = np.asarray(a)
            if arr is None:
                from .._proto import nkid_pb2 as pb
                out.append(pb.Tensor(name=name, dtype=_dt.wire_name(dtype), shape=list(shape)))
            else:
                out.append(to_wire(name, arr))
        return out, arrays

    def _ref(self, traced):
        return kernel_ref(traced, self.platform_target, self.additional_compile_opt)

    def _results(self, traced, outputs, arrays):
        res = [from_wire(t) for t in outputs]
        if traced.ret_kind == "none":
            for pos, r in zip(traced.inplace, res):
                a = arrays[pos]
                if isinstance(a, np.ndarray):
                    np.copyto(a, r.astype(a.dtype, copy=False))
            return None
        if traced.ret_kind == "single":
            return res[0]
        return list(res) if traced.ret_kind == "list" else tuple(res)

    def execute(self, traced, inputs):
        raise NotImplementedError

    def post_process_call(self, traced, args, kwargs):
        inputs, arrays = self._inputs(traced, args, kwargs)
        outputs = self.execute(traced, inputs)
        return self._results(traced, outputs, arrays)


class BaremetalKernel(NumpyKernel):
    """Compile and run a kernel once through nkid (nki.baremetal)."""

    def __init__(self, func=None, grid=(), save_neff_name=None, save_trace_name=None,
                 additional_compile_opt=None, artifacts_dir=None, **kwargs):
        if save_trace_name is not None and save_neff_name not in (None, "file.neff"):
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

    def execute(self, traced, inputs):
        reply = get_client().run(self._ref(traced), inputs)
        self.last_reply = reply
        if self.save_neff_name and reply.neff:
            d = self.artifacts_dir or os.getcwd()
            with open(os.path.join(d, self.save_neff_name), "wb") as f:
                f.write(reply.neff)
        return reply.outputs


class SimulateKernel(NumpyKernel):
    """Run a kernel on nkid's cpu simulator (nki.simulate_kernel)."""

    def __init__(self, func=None, grid=(), dump_file=None, **kwargs):
        super().__init__(func, grid, **kwargs)
        self._dump_file = dump_file
        self.last_reply = None

    def post_process_call(self, traced, args, kwargs):
        for a in array_args(self.func, args, kwargs):
            if not isinstance(a, np.ndarray):
                raise TypeError("All input and output tensors to the kernel must be"
                                " numpy.ndarray when using this simulate_kernel API.")
        return super().post_process_call(traced, args, kwargs)

    def execute(self, traced, inputs):
        reply = get_client().simulate(self._ref(traced), inputs)
        self.last_reply = reply
        if reply.device_print:
            if self._dump_file:
                with open(self._dump_file, "a") as f:
                    f.write(reply.device_print)
            else:
                sys.stdout.write(reply.device_print)
                sys.stdout.flush()
        return reply.outputs


class NCLatency:
    """Latency percentiles of a benchmark, in microseconds."""

    PERCENTILES = (0, 1, 10, 25, 50, 90, 99, 100)

    def __init__(self, result_dicts):
        self.result_dicts = dict(result_dicts)

    def get_latency_percentile(self, p):
        """The p-th percentile latency (p in 0, 1, 10, 25, 50, 90, 99, 100), in us."""
        if p not in self.result_dicts:
            raise ValueError("percentile must be one of %s" % (list(self.PERCENTILES),))
        return self.result_dicts[p]

    def __str__(self):
        g = self.result_dicts.get
        return ("min %.2f us, p25 %.2f us, p50 %.2f us, p90 %.2f us, max %.2f us"
                % (g(0, 0.0), g(25, 0.0), g(50, 0.0), g(90, 0.0), g(100, 0.0)))


class BenchmarkResult:
    def __init__(self, nc_latency):
        self.nc_latency = nc_latency


class BenchmarkKernel(NumpyKernel):
    """Benchmark a kernel through nkid (nki.benchmark); shapes only."""

    def __init__(self, func=None, grid=(), warmup=10, iters=100, save_neff_name=None,
                 save_trace_name=None, additional_compile_opt=None, **kwargs):
        super().__init__(func, grid, warmup=warmup, iters=iters,
                         save_neff_name=save_neff_name, save_trace_name=save_trace_name,
                         additional_compile_opt=additional_compile_opt, **kwargs)
        self.warmup, self.iters = int(warmup), int(iters)
        self.benchmark_result = None

    def post_process_call(self, traced, args, kwargs):
        inputs, _ = self._inputs(traced, args, kwargs, values=False)
        reply = get_client().benchmark(self._ref(traced), inputs, self.warmup, self.iters)
        pct = {int(p.p): p.us for p in reply.percentiles}
        self.benchmark_result = BenchmarkResult(NCLatency(pct) if pct else None)
        return None


class ProfileKernel(NumpyKernel):
    """Profile a kernel through nkid (nki.profile); artifacts in working_directory."""

    def __init__(self, func=None, grid=(), working_directory=None, save_neff_name="file.neff",
                 save_trace_name="profile.ntff", additional_compile_opt=None, overwrite=False,
                 profile_nth=1, num_execs=None, **kwargs):
        if func is not None and working_directory is None:
            raise ValueError("Please specify working directory")
        super().__init__(func, grid, working_directory=working_directory,
                         save_neff_name=save_neff_name, save_trace_name=save_trace_name,
                         additional_compile_opt=additional_compile_opt, overwrite=overwrite,
                         profile_nth=profile_nth, num_execs=num_execs, **kwargs)
        self.work_dir = working_directory
        self.save_neff_name = save_neff_name
        self.save_trace_name = save_trace_name
        self.overwrite = overwrite
        self.profile_nth = int(profile_nth or 1)
        self.num_execs = int(num_execs or self.profile_nth)

    def post_process_call(self, traced, args, kwargs):
        inputs, arrays = self._inputs(traced, args, kwargs)
        reply = get_client().profile(self._ref(traced), inputs, self.num_execs, self.profile_nth)
        wd = self.work_dir
        os.makedirs(os.path.join(wd, "json_reports"), exist_ok=True)
        stem, ext = os.path.splitext(self.save_trace_name)
        paths = [os.path.join(wd, self.save_neff_name)]
        for i, tr in enumerate(reply.traces):
            name = self.save_trace_name if i == 0 else "%s_exec_%d%s" % (stem, tr.execution, ext)
            paths.append(os.path.join(wd, name))
        if not self.overwrite:
            for p in paths:
                if os.path.exists(p):
                    raise FileExistsError("%s exists (pass overwrite=True)" % p)
        with open(paths[0], "wb") as f:
            f.write(reply.neff)
        for tr, p in zip(reply.traces, paths[1:]):
            with open(p, "wb") as f:
                f.write(tr.trace)
            with open(os.path.join(wd, "json_reports", "exec_%d.json" % tr.execution), "wb") as f:
                f.write(tr.summary_json)
        print("Profile results are written to " + wd)
        return self._results(traced, reply.outputs, arrays)
