"""PyTorchXLAKernel: a NKI kernel as the torch-xla custom call
``AwsNeuronNkiKernel``, and the top-level ``nki_jit`` decorator.

torch-xla has no primitive for it: :meth:`PyTorchXLAKernel.custom_call`
builds the call (operands, result shapes and dtypes, the base64 JSON
``backend_config`` of :meth:`dump_config`, ``output_operand_aliasing`` for
outputs the kernel writes in place, ``excluded_output_tensors`` for
aliased outputs that need not be materialized again) and
:meth:`PyTorchXLAKernel.__call__` hands it to torch-xla.  torch is not
imported to detect its tensors; emitting the call into a lazy tensor graph
needs torch and torch-xla (and a Neuron runtime to execute it), which this
package does not install: without them the call raises a RuntimeError
that says so.
"""

import sys

from ._framework import FrameworkKernel

__all__ = ["PyTorchXLAKernel", "nki_jit", "CustomCall"]

CUSTOM_CALL_TARGET = "AwsNeuronNkiKernel"

_TORCH_DTYPES = {
    "float32": "float32", "float": "float32", "float16": "float16", "half": "float16",
    "bfloat16": "bfloat16", "int8": "int8", "int16": "int16", "short": "int16",
    "int32": "int32", "int": "int32", "uint8": "uint8", "uint16": "uint16",
    "uint32": "uint32", "bool": "bool", "float8_e4m3fn": "float8_e4m3",
    "float8_e5m2": "float8_e5m2",
}


def is_torch_tensor(x):
    """torch.is_tensor(x), answered without importing torch."""
    if type(x).__module__.split(".")[0] != "torch":
        return False
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "is_tensor"):
        return bool(torch.is_tensor(x))
    return any(c.__name__ == "Tensor" for c in type(x).__mro__)


class CustomCall:
    """One AwsNeuronNkiKernel call as torch-xla receives it."""

    def __init__(self, target, operands, output_shapes, output_dtypes, backend_config,
                 output_operand_aliasing, excluded_output_tensors, frontend_attributes):
        self.target = target
        self.operands = operands
        self.output_shapes = output_shapes
        self.output_dtypes = output_dtypes
        self.backend_config = backend_config
        self.output_operand_aliasing = output_operand_aliasing   # [(output, operand)]
        self.excluded_output_tensors = excluded_output_tensors   # [output]
        self.frontend_attributes = frontend_attributes

    def __repr__(self):
        return "<CustomCall %s: %d operands, %d outputs, aliasing %s>" % (
            self.target, len(self.operands), len(self.output_shapes),
            self.output_operand_aliasing)


class PyTorchXLAKernel(FrameworkKernel):
    """A kernel called with torch tensors (custom call AwsNeuronNkiKernel)."""

    custom_call_target = CUSTOM_CALL_TARGET

    def is_framework_tensor(self, x):
        return is_torch_tensor(x)

    def translate_dtype(self, dtype):
        from ..tracer import dtypes as _dt
        name = str(dtype)
        if name.startswith("torch."):
            name = name[len("torch."):]
        if name not in _TORCH_DTYPES:
            raise TypeError("nki.jit: torch dtype %s is not supported by NKI" % (dtype,))
        return _dt.normalize(_TORCH_DTYPES[name])

    def custom_call(self, *args, **kwargs):
        """Trace the kernel for these tensors and build its CustomCall."""
        from ..tracer import dtypes as _dt
        tensors, pargs, pkwargs = self.split_args(args, kwargs)
        traced = self.specialize(pargs, pkwargs)
        aliasing = sorted(self.aliases(traced).items())
        return CustomCall(
            CUSTOM_CALL_TARGET, tensors,
            [tuple(shape) for _, shape, _ in traced.outputs],
            [_dt.name_of(dtype) for _, _, dtype in traced.outputs],
            self.dump_config(traced), aliasing, [out for out, _ in aliasing],
            {"kernel_name": traced.name, "ir_digest": traced.ir_digest})

    def __call__(self, *args, **kwargs):
        cc = self.custom_call(*args, **kwargs)
        try:
            import torch
            import torch_xla
        except ImportError:
            raise RuntimeError(
                "nki.jit: a torch tensor selects the torch-xla bridge, which needs torch and"
                " torch_xla (and a Neuron runtime to execute %s); install them, or call the"
                " kernel with numpy arrays to run it through nkid" % CUSTOM_CALL_TARGET) from None
        dtypes = [getattr(torch, d if d != "float8_e4m3" else "float8_e4m3fn")
                  for d in cc.output_dtypes]
        outs = torch_xla._XLAC._xla_custom_call(
            list(cc.operands), cc.target, [list(s) for s in cc.output_shapes], dtypes,
            False, cc.backend_config, 2, cc.frontend_attributes)
        # In-place outputs: the kernel's written arguments take the results.
        for out, operand in cc.output_operand_aliasing:
            cc.operands[operand].copy_(outs[out])
        traced = self.specialize(*self.split_args(args, kwargs)[1:])
        if traced.ret_kind == "none":
            return None
        if traced.ret_kind == "single":
            return outs[0]
        return list(outs) if traced.ret_kind == "list" else tuple(outs)


def nki_jit(func=None, **kwargs):
    """The torch-xla decorator: ``nki.jit(mode="torchxla")``."""
    from . import jit
    return jit(func, mode="torchxla", **kwargs)
