"""nkid.nki: NKI's front doors (mirrors ``neuronxcc.nki``).

``jit`` dispatches per call on the argument types (see
:func:`nkid.nki.compile.compute_mode`); ``baremetal``, ``benchmark``,
``profile`` and ``simulate_kernel`` name a fixed mode.  Kernels are traced
in this process and compiled and run by nkid.
"""

import functools

from . import language, isa, typing, compiler  # noqa: F401
from .compile import GenericKernel, simulate_kernel, compute_mode, _native_mode_map  # noqa: F401
from .compile import _unknown_mode
from ._numpy_kernel import (BaremetalKernel, BenchmarkKernel, ProfileKernel, SimulateKernel,
                            TraceKernel)
from ..errors import NKIError
from ..tracer.branch import rewrite as _rewrite
from ..tracer.builder import current as _current_trace
from ..tracer.tensor import NkiTensor as tensor

__all__ = ["jit", "baremetal", "benchmark", "profile", "simulate_kernel", "trace", "tensor",
           "language", "isa", "typing", "compiler", "GenericKernel"]


def _register_activations():
    """nisa.activation(op=...) takes the nki.language functions: the ones
    this package adds beyond isa's own table."""
    for f in (language.tan, language.arctan, language.gelu_dx, language.gelu_apprx_sigmoid,
              language.silu_dx, language.erf_dx, language.mish):
        isa._ACT.setdefault(f, f.act)
    isa._ACT.setdefault(__import__("numpy").tan, language.tan.act)
    isa._ACT.setdefault(__import__("numpy").arctan, language.arctan.act)


_register_activations()


class SubKernel(TraceKernel):
    """What ``nki.trace`` (and ``nki.jit(mode="trace")``) returns: called
    while a kernel is traced it runs inline, as part of the caller (NKI's
    sub-kernels); called outside one it traces the function and returns the
    :class:`nkid.tracer.TracedKernel`.  ``nki.simulate_kernel`` and the
    other doors take it as a kernel."""

    def __call__(self, *args, **kwargs):
        if _current_trace() is not None:
            if self.grid:
                raise NKIError(
                    "Calling a NKI kernel with a SPMD grid from another NKI kernel is not"
                    " supported. (err_nested_kernel_with_spmd_grid)")
            return _rewrite(self.func)(*args, **kwargs)
        return super().__call__(*args, **kwargs)


def trace(func=None, **kwargs):
    """Mark a function as a NKI kernel without running it (NKI's
    ``nki.trace``): a sub-kernel for other kernels, or a kernel for
    ``nki.simulate_kernel`` and the other doors."""
    if func is None:
        return functools.partial(trace, **kwargs)
    return SubKernel(func, **kwargs)

_baremetal_kernel = BaremetalKernel(None)
_benchmark_kernel = BenchmarkKernel(None)
_profile_kernel = ProfileKernel(None)


def _jit_dispatch(func, mode, kwargs):
    if not isinstance(mode, str):
        raise ValueError("Unknown framework '%s'" % (mode,))
    if mode == "trace":
        return trace(func, **kwargs)
    if mode != "auto" and mode not in _native_mode_map:
        raise _unknown_mode(mode)
    return GenericKernel(func, mode, **kwargs)


def jit(func=None, mode="auto", **kwargs):
    """This decorator compiles a function to run on NeuronDevices.

    This decorator tries to automatically detect the current framework and
    compile the function as a custom operator of the current framework. To
    bypass the framework detection logic, you may specify the mode parameter
    explicitly.

    :param mode: The compilation mode, possible values: "jax", "torchxla",
        "baremetal", "benchmark", "simulation" and "auto".
    """
    if func is None:
        return functools.partial(jit, mode=mode, **kwargs)
    return _jit_dispatch(func, mode, kwargs)


def baremetal(kernel=None, **kwargs):
    """Compile and run a NKI kernel on NeuronDevice without involving ML
    frameworks such as PyTorch and JAX.

    Keyword options: save_neff_name, save_trace_name, additional_compile_opt,
    artifacts_dir.  Known issue: if save_trace_name is specified,
    save_neff_name must be set to "file.neff".  Calling the result returns
    the kernel's outputs.
    """
    return _baremetal_kernel.trace(kernel, **kwargs)


def benchmark(func=None, **kwargs):
    """Benchmark a NKI kernel on a NeuronDevice (warmup=10, iters=100); uses
    the same underlying mechanism as nki.baremetal but additionally collects
    latency statistics in ``.benchmark_result.nc_latency``.  nki.benchmark
    does not use the actual inputs passed into the benchmarked function."""
    return _benchmark_kernel.trace(func, **kwargs)


def profile(func=None, **kwargs):
    """Profile a NKI kernel (working_directory required); writes the NEFF,
    the traces and json_reports/ into working_directory."""
    return _profile_kernel.trace(func, **kwargs)
