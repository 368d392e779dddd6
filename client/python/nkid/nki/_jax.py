"""JAXKernel: a NKI kernel as a JAX primitive (``nki_call_p``) lowered to
the stablehlo custom call ``AwsNeuronCustomNativeKernel``.

``nki_call_p`` has an abstract-eval rule (``nki_call_eval``: trace the
kernel on the operands' shapes and dtypes, return the outputs'
``ShapedArray``) and a lowering rule (``nki_call_lowering_rule``: a
``stablehlo.custom_call`` with the base64 JSON ``backend_config`` of
:meth:`dump_config`, operand-output aliasing for outputs the kernel writes
in place, and ``mhlo.frontend_attributes``).  JAX is imported on the first
call with JAX arrays, never before.

The trace made for the abstract eval is kept for the lowering; with
``NKI_DONT_CACHE_TRACE_FOR_JAX_LOWERING=TRUE`` the lowering traces again.
Running the lowered module needs a runtime that implements the custom
call (the Neuron PJRT plugin); on other platforms ``nki.jit`` refuses JAX
arrays before tracing (``nki only support on neuron, current target: cpu``).
"""

import os

from ._framework import FrameworkKernel

__all__ = ["JAXKernel", "nki_call_p", "get_nki_call_p"]

CUSTOM_CALL_TARGET = "AwsNeuronCustomNativeKernel"
DONT_CACHE_ENV = "NKI_DONT_CACHE_TRACE_FOR_JAX_LOWERING"
NOT_CACHED_MSG = ("NKI trace is not properly cached, use ``export"
                  " NKI_DONT_CACHE_TRACE_FOR_JAX_LOWERING=TRUE`` to workaround the issue")

nki_call_p = None


def _dont_cache_trace_for_jax_lowering():
    return os.environ.get(DONT_CACHE_ENV, "").upper() == "TRUE"


class _Call:
    """The hashable parameter of one nki_call: the kernel, the call's static
    arguments and where its JAX operands go."""

    def __init__(self, kernel, args, kwargs):
        self.kernel = kernel
        self.args = args                  # placeholders for operands
        self.kwargs = kwargs
        self.traced = None

    def _key(self):
        def sig(x):
            shape = getattr(x, "shape", None)
            if shape is not None and hasattr(x, "dtype"):
                return ("T", tuple(shape), str(x.dtype))
            try:
                hash(x)
                return ("S", x)
            except TypeError:
                return ("R", repr(x))
        return (id(self.kernel), tuple(sig(a) for a in self.args),
                tuple(sorted((k, sig(v)) for k, v in self.kwargs.items())))

    def __hash__(self):
        return hash(self._key())

    def __eq__(self, other):
        return isinstance(other, _Call) and self._key() == other._key()

    def trace(self, for_lowering=False):
        if self.traced is None or (for_lowering and _dont_cache_trace_for_jax_lowering()):
            self.traced = self.kernel.specialize(self.args, self.kwargs,
                                                 memo=not _dont_cache_trace_for_jax_lowering())
        if self.traced is None:
            raise RuntimeError(NOT_CACHED_MSG)
        return self.traced


def nki_call_eval(*avals, call):
    """Abstract eval: the outputs' ShapedArrays (no compute)."""
    from jax.core import ShapedArray
    traced = call.trace()
    return [ShapedArray(shape, _host(dtype)) for _, shape, dtype in traced.outputs]


def nki_call_lowering_rule(ctx, *operands, call):
    """Lower to stablehlo.custom_call AwsNeuronCustomNativeKernel."""
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    traced = call.trace(for_lowering=True)
    kernel = call.kernel
    try:
        result_types = [mlir.aval_to_ir_type(ctx.module_context, a) for a in ctx.avals_out]
    except TypeError:   # older jax: aval_to_ir_type(aval)
        result_types = [mlir.aval_to_ir_type(a) for a in ctx.avals_out]
    aliases = kernel.aliases(traced)
    attrs = kernel.frontend_attributes(traced)
    op = mlir.custom_call(
        CUSTOM_CALL_TARGET,
        result_types=result_types,
        operands=list(operands),
        backend_config=kernel.dump_config(traced),
        has_side_effect=False,
        api_version=2,
        operand_output_aliases={operand: out for out, operand in aliases.items()} or None,
        extra_attributes={"mhlo.frontend_attributes": ir.DictAttr.get(
            {k: ir.StringAttr.get(v) for k, v in attrs.items()})},
    )
    return op.results


def _host(dtype):
    from ..tracer import dtypes as _dt
    return _dt.host_dtype(dtype)


def get_nki_call_p():
    """The nki_call primitive (registered with JAX on first use)."""
    global nki_call_p
    if nki_call_p is None:
        from jax.extend.core import Primitive
        from jax.interpreters import mlir
        p = Primitive("nki_call")
        p.multiple_results = True
        p.def_abstract_eval(nki_call_eval)
        mlir.register_lowering(p, nki_call_lowering_rule)
        nki_call_p = p
    return nki_call_p


def is_jax_tensor(x):
    """A JAX Array, ArrayImpl or Tracer, found by class and module name
    (jax is never imported to answer)."""
    for c in type(x).__mro__:
        if c.__name__ in ("Array", "ArrayImpl", "Tracer") and \
                c.__module__.split(".")[0] in ("jax", "jaxlib"):
            return True
    return False


class JAXKernel(FrameworkKernel):
    """A kernel called with JAX arrays (custom call AwsNeuronCustomNativeKernel)."""

    custom_call_target = CUSTOM_CALL_TARGET

    def is_framework_tensor(self, x):
        return is_jax_tensor(x)

    def translate_dtype(self, dtype):
        from ..tracer import dtypes as _dt
        return _dt.normalize(getattr(dtype, "name", dtype))

    def frontend_attributes(self, traced):
        return {"kernel_name": traced.name, "ir_digest": traced.ir_digest,
                "nki_format": traced.format}

    def __call__(self, *args, **kwargs):
        tensors, pargs, pkwargs = self.split_args(args, kwargs)
        call = _Call(self, pargs, pkwargs)
        outs = get_nki_call_p().bind(*tensors, call=call)
        traced = call.trace()
        if traced.ret_kind == "none":
            # JAX arrays are immutable: the arguments the kernel writes come
            # back as results (aliased to their operands).
            return outs[0] if len(outs) == 1 else (tuple(outs) or None)
        if traced.ret_kind == "single":
            return outs[0]
        return list(outs) if traced.ret_kind == "list" else tuple(outs)
