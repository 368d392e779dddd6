"""nkid.nki.compile: kernel-class dispatch (compute_mode, _native_mode_map),
GenericKernel, and simulate_kernel.

``compute_mode`` resolves the concrete kernel class of a call: an explicit
mode is looked up in ``_native_mode_map``; ``"auto"`` inspects the runtime
arguments (a JAX array selects JAXKernel, on the neuron platform only; a
torch tensor selects PyTorchXLAKernel; anything else BaremetalKernel).
"""

import functools

from ..errors import front_door
from .. import targets as _targets
from ._numpy_kernel import (TraceKernel, BaremetalKernel, BenchmarkKernel, SimulateKernel,
                            ProfileKernel, normalize_grid)
from ._jax import JAXKernel, is_jax_tensor as _is_jax_tensor
from ..tracer.branch import rewrite as _rewrite
from ..tracer.builder import current as _current_trace
from ._torch_xla import PyTorchXLAKernel, is_torch_tensor as _is_torch_tensor

__all__ = ["compute_mode", "GenericKernel", "simulate_kernel", "_native_mode_map"]

_native_mode_map = {
    "jax": JAXKernel,
    "torchxla": PyTorchXLAKernel,
    "baremetal": BaremetalKernel,
    "benchmark": BenchmarkKernel,
    "simulation": SimulateKernel,
}


def _jax_platform():
    """jax.get_backend().platform (jax.default_backend() on newer jax)."""
    import jax
    get_backend = getattr(jax, "get_backend", None)
    if get_backend is None:
        try:
            from jax.extend.backend import get_backend
        except ImportError:
            return jax.default_backend()
    return get_backend().platform


def _unknown_mode(mode):
    """The error of nki.jit (and a kernel's call) for a mode it does not know."""
    return ValueError("Unsupported mode '%s' passed to nki.jit" % (mode,))


def compute_mode(mode, args, kwargs):
    """The kernel class for a call in ``mode`` with these arguments."""
    if mode != "auto":
        cls = _native_mode_map.get(mode)
        if cls is None:
            raise _unknown_mode(mode)
        return cls
    for a in list(args) + list(kwargs.values()):
        if _is_jax_tensor(a):
            platform = _jax_platform()
            if platform != "neuron":
                raise RuntimeError("nki only support on neuron, current target: " + platform)
            return JAXKernel
        if _is_torch_tensor(a):
            return PyTorchXLAKernel
    return BaremetalKernel


class GenericKernel:
    """What ``nki.jit`` returns: resolves the kernel class on each call,
    memoized per class; subscript it with a launch grid."""

    __test__ = False        # not a pytest test when named test_* (TraceKernel)

    def __init__(self, func, mode="auto", grid=(), **kwargs):
        _targets.check(kwargs.get("platform_target") or "")
        self.func = func
        self.mode = mode
        self.grid = normalize_grid(grid)
        self.kwargs = kwargs
        self._cached_kernel = {}
        functools.update_wrapper(self, func, updated=())

    def build_cache_kernel(self, cls):
        k = cls(self.func, grid=self.grid, **self.kwargs)
        self._cached_kernel[cls] = k
        return k

    @front_door
    def __call__(self, *args, **kwargs):
        if _current_trace() is not None:
            # called from a kernel being traced: a sub-kernel, inline
            return _rewrite(self.func)(*args, **kwargs)
        cls = compute_mode(self.mode, args, kwargs)
        k = self._cached_kernel.get(cls)
        if k is None:
            k = self.build_cache_kernel(cls)
        return k(*args, **kwargs)

    def __getitem__(self, grid):
        return GenericKernel(self.func, self.mode, grid=grid, **self.kwargs)

    def __class_getitem__(cls, item):
        return cls

    def __repr__(self):
        return "<GenericKernel %s mode=%s grid=%s>" % (
            getattr(self.func, "__name__", "?"), self.mode, list(self.grid))


def _unwrap(kernel):
    """(function, grid, options) of whatever a door was given."""
    if isinstance(kernel, (GenericKernel, TraceKernel)):
        return kernel.func, kernel.grid, dict(kernel.kwargs)
    if callable(kernel):
        return kernel, (), {}
    raise TypeError("expected a NKI kernel, got %r" % (kernel,))


@front_door
def simulate_kernel(kernel, *args, **kwargs):
    """Simulate a nki kernel on CPU using a built-in simulator in Neuron
    Compiler (here: nkid's cpu executor).  This simulation mode is especially
    useful for inspecting intermediate tensor values using
    nki.language.device_print.  All input and output tensors to the kernel
    must be numpy.ndarray when using this simulate_kernel API.
    """
    func, grid, opts = _unwrap(kernel)
    keep = {k: v for k, v in opts.items()
            if k in ("platform_target", "additional_compile_opt", "retry_failed")}
    return SimulateKernel(func, grid=grid, **keep)(*args, **kwargs)
