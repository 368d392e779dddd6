"""Framework kernels: JAX and torch-xla lower a kernel to an XLA custom call
instead of running it.  First cut: the classes exist for dispatch; the
bridges (nki_call_p, AwsNeuronCustomNativeKernel / AwsNeuronNkiKernel custom
calls) come with the front-doors issue."""

from ._numpy_kernel import TraceKernel

__all__ = ["JAXKernel", "PyTorchXLAKernel"]


class JAXKernel(TraceKernel):
    """A kernel called with JAX arrays (custom call AwsNeuronCustomNativeKernel)."""

    def post_process_call(self, traced, args, kwargs):
        raise NotImplementedError("nkid: the JAX bridge of nki.jit is not implemented yet")


class PyTorchXLAKernel(TraceKernel):
    """A kernel called with torch-xla tensors (custom call AwsNeuronNkiKernel)."""

    def post_process_call(self, traced, args, kwargs):
        raise NotImplementedError("nkid: the torch-xla bridge of nki.jit is not implemented yet")
