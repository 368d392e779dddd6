"""FrameworkKernel: the base of the JAX and torch-xla bridges.

A framework kernel never runs anything here: it traces the kernel (to learn
its outputs and to serialize its IR) and emits an XLA custom call that
carries the traced kernel in its ``backend_config``; the framework's own
compiler and runtime execute it later.  :meth:`TraceKernel.dump_config`
(shared with every kernel class) produces that ``backend_config``.

The classes themselves live in :mod:`._jax` (``JAXKernel``, custom call
``AwsNeuronCustomNativeKernel``) and :mod:`._torch_xla`
(``PyTorchXLAKernel``, custom call ``AwsNeuronNkiKernel``).  Neither module
imports its framework until a kernel is called with that framework's
tensors.
"""

from ._numpy_kernel import TraceKernel
from ..tracer import dtypes as _dt
from .typing import TensorPlaceholder

__all__ = ["FrameworkKernel"]


class FrameworkKernel(TraceKernel):
    """A kernel lowered to a framework's XLA custom call."""

    #: the custom call target the framework's runtime matches on
    custom_call_target = None

    def translate_dtype(self, dtype):
        """The NKI dtype of a framework tensor's dtype."""
        return _dt.normalize(dtype)

    def placeholder(self, tensor):
        """A shape-and-dtype stand-in for a framework tensor (the trace
        never sees framework values)."""
        return TensorPlaceholder(tuple(int(s) for s in tensor.shape),
                                 self.translate_dtype(tensor.dtype))

    def is_framework_tensor(self, x):
        raise NotImplementedError

    def split_args(self, args, kwargs):
        """(tensors in call order, args and kwargs with placeholders)."""
        tensors = []

        def conv(x):
            if self.is_framework_tensor(x):
                tensors.append(x)
                return self.placeholder(x)
            return x
        new_args = tuple(conv(a) for a in args)
        new_kwargs = {k: conv(v) for k, v in kwargs.items()}
        return tensors, new_args, new_kwargs

    def aliases(self, traced):
        """{output index: operand index} for outputs written in place
        (a kernel that writes its arguments and returns None)."""
        return {i: pos for i, pos in enumerate(traced.inplace)}

