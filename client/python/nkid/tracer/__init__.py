"""The NKI tracer: run a kernel function on symbolic tensors and record NKIR.

``trace(func, args, kwargs, grid)`` calls ``func`` once.  Array arguments
(numpy arrays, ``nt.tensor[...]`` placeholders, anything with ``shape`` and
``dtype``) become TENSOR_PARAM tensors in HBM; every other argument is a
static Python value the kernel may compute with.  The ``nki.language``
functions called by the kernel append ops to the trace; NKI loops
(``nl.affine_range``, ``sequential_range``) are traced once with a
symbolic loop variable, so the IR does not grow with trip counts.
``nl.static_range`` and a plain Python ``range`` loop run as Python: they
are unrolled.

The result is a :class:`TracedKernel`: the ``nkir.v1.Kernel`` message, its
bytes and their digest, the parameter and output signatures.  nkid keys a
compiled kernel by what it derives from the IR itself; the digest lets a
warm process ask for it (``Lookup``) without sending the IR.
"""

import hashlib
import inspect
import linecache
import os

import numpy as np

from .._proto import nkir_pb2 as ir
from ..errors import NKIError
from . import dtypes as _dt
from .branch import rewrite
from .builder import KernelBuilder
from .merge import write_back
from .tensor import NkiTensor, new_hbm, new_param, store

__all__ = ["trace", "TracedKernel", "is_array_arg", "array_args", "signature_of",
           "arg_signature", "ir_digest"]

FORMAT = "nkir/1"


def is_array_arg(x):
    """True if a kernel argument is a tensor (numpy array or placeholder)."""
    if isinstance(x, np.ndarray):
        return True
    if isinstance(x, (int, float, complex, str, bytes, bool, tuple, list, dict, type(None))):
        return False
    return hasattr(x, "shape") and hasattr(x, "dtype") and not np.isscalar(x)


_signatures = {}


def signature_of(func):
    """inspect.signature(func), computed once per function (it costs more
    than the rest of a warm call's Python side)."""
    sig = _signatures.get(func)
    if sig is None:
        sig = _signatures[func] = inspect.signature(func)
    return sig


def array_args(func, args, kwargs):
    """The array arguments of a call, in the order the tracer makes params."""
    sig = signature_of(func)
    bound = sig.bind(*args, **kwargs)
    out = []
    for name, v in bound.arguments.items():
        kind = sig.parameters[name].kind
        if kind == inspect.Parameter.VAR_POSITIONAL:
            out.extend(x for x in v if is_array_arg(x))
        elif kind == inspect.Parameter.VAR_KEYWORD:
            out.extend(x for x in v.values() if is_array_arg(x))
        elif is_array_arg(v):
            out.append(v)
    return out


def arg_signature(x):
    """A hashable description of one argument for the trace memo."""
    if is_array_arg(x):
        return ("T", tuple(int(s) for s in x.shape), _dt.name_of(_dt.normalize(x.dtype)))
    try:
        hash(x)
        return ("S", type(x).__name__, x)
    except TypeError:
        return ("R", type(x).__name__, repr(x))


class TracedKernel:
    """A kernel traced for one specialization (shapes, dtypes, statics, grid)."""

    def __init__(self, name, kernel, params, outputs, inplace, ret_kind):
        self.name = name
        self.kernel = kernel              # nkir.v1.Kernel
        self.ir = kernel.SerializeToString(deterministic=True)
        self.ir_digest = ir_digest(self.ir)
        self.files = list(kernel.files)
        self.params = params              # [(name, shape, dtype)]
        self.outputs = outputs            # [(name, shape, dtype)]
        self.inplace = inplace            # param positions written back (kernel returned None)
        self.ret_kind = ret_kind          # "none", "single", "tuple", "list"
        self.format = FORMAT
        self.memo_ok = True               # False: the trace read a file; trace again

    def __repr__(self):
        return "<TracedKernel %s: %d params, %d outputs, %d bytes of %s>" % (
            self.name, len(self.params), len(self.outputs), len(self.ir), self.format)

    def with_precise_fp(self, precise):
        """This kernel for ``NKI_PRECISE_FP=precise``: itself when precise
        (tiles round to their dtype, as the hardware stores them) or when
        it has no bfloat16/float16/fp8/tfloat32 tile; else a copy whose IR
        sets ``Kernel.fp32_tiles`` (such tiles keep float32 values, as NKI
        2.24's simulator did).  The IR differs, so nkid keys the two
        apart."""
        if precise or not _has_lowp_tile(self.kernel):
            return self
        v = getattr(self, "_fp32_variant", None)
        if v is None:
            k = ir.Kernel()
            k.CopyFrom(self.kernel)
            k.fp32_tiles = True
            v = TracedKernel(self.name, k, self.params, self.outputs, self.inplace,
                             self.ret_kind)
            self._fp32_variant = v
        return v


_LOWP = (ir.DT_BFLOAT16, ir.DT_FLOAT16, ir.DT_FP8_E4M3, ir.DT_FP8_E5M2, ir.DT_TFLOAT32)


def _has_lowp_tile(kernel):
    return any(t.kind == ir.TENSOR_TILE and t.dtype in _LOWP for t in kernel.tensors)


def _def_line(func):
    code = func.__code__
    line = code.co_firstlineno
    for i in range(line, line + 50):
        text = linecache.getline(code.co_filename, i).lstrip()
        if text.startswith("def ") or text.startswith("async def "):
            return i
        if not text and i > line + 1:
            break
    return line


def ir_digest(ir):
    """The digest nkid computes of IR bytes (hex SHA-256): how a warm
    process names a kernel it traced without sending it (``Lookup``)."""
    return hashlib.sha256(ir).hexdigest()


def trace(func, args=(), kwargs=None, grid=(), name=None, target="", options="",
          cores=None):
    """Trace ``func(*args, **kwargs)`` launched on ``grid``, its programs
    spread over ``cores`` physical NeuronCores (default: the grid's, a
    normalize_grid Grid's ``nl.nc`` factors; 1)."""
    kwargs = kwargs or {}
    if cores is None:
        cores = getattr(grid, "cores", 1)
    grid = tuple(int(g) for g in grid)
    name = name or getattr(func, "__name__", "kernel")
    b = KernelBuilder(name, grid, target)
    b.cores = int(cores)
    b.def_loc = (b.file_index(func.__code__.co_filename), _def_line(func))
    b.force_auto_alloc = bool(getattr(func, "__nki_force_auto_alloc__", False))

    sig = inspect.signature(func)
    bound = sig.bind(*args, **kwargs)
    params = []
    param_objs = {}

    def convert(pname, v):
        if is_array_arg(v):
            shape = tuple(int(s) for s in v.shape)
            t = new_param(b, pname, shape, v.dtype)
            params.append((pname, shape, t.dtype))
            param_objs[t._tid] = len(params) - 1
            return t
        return v

    with b:
        new_args = {}
        for pname, v in bound.arguments.items():
            kind = sig.parameters[pname].kind
            if kind == inspect.Parameter.VAR_POSITIONAL:
                new_args[pname] = tuple(convert("%s_%d" % (pname, i), x) for i, x in enumerate(v))
            elif kind == inspect.Parameter.VAR_KEYWORD:
                new_args[pname] = {k: convert(k, x) for k, x in v.items()}
            else:
                new_args[pname] = convert(pname, v)
        bound.arguments.update(new_args)
        ret = _returned_in_hbm(rewrite(func)(*bound.args, **bound.kwargs))
        write_back(b)

        if ret is None:
            ret_kind = "none"
            outs = [t for t in range(len(b.tensors))
                    if b.tensors[t].kind == ir.TENSOR_PARAM and b.tensors[t].written]
        elif isinstance(ret, NkiTensor):
            ret_kind, outs = "single", [ret]
        elif isinstance(ret, (tuple, list)):
            ret_kind, outs = ("list" if isinstance(ret, list) else "tuple"), list(ret)
        else:
            raise NKIError("kernel '%s' returned %r; a NKI kernel returns HBM tensors"
                           " (nl.ndarray(..., buffer=nl.shared_hbm)), a tuple of them or None"
                           % (name, type(ret).__name__))
    outputs, out_ids, inplace = [], [], []
    for o in outs:
        if isinstance(o, int):
            tid = o
            inplace.append(param_objs[tid])
        else:
            if not isinstance(o, NkiTensor) or o._space not in (ir.SPACE_HBM, ir.SPACE_SHARED_HBM):
                raise NKIError("kernel '%s' must return tensors in HBM"
                               " (nl.ndarray(..., buffer=nl.shared_hbm)), got %r" % (name, o))
            tid = o._tid
        t = b.tensors[tid]
        out_ids.append(tid)
        outputs.append((t.name, t.shape, t.dtype))
    b.outputs = out_ids
    kernel = b.finish()
    traced = TracedKernel(name, kernel, params, outputs, inplace, ret_kind)
    traced.memo_ok = not b.files_read
    return traced


def _returned_in_hbm(ret):
    """The kernel's return value with each SBUF/PSUM tile in it stored to
    a new shared HBM tensor of its shape and dtype (NKI's simulator returns
    a kernel's tiles as arrays, e.g. nisa.dma_transpose's result)."""
    def one(t):
        if isinstance(t, NkiTensor) and t._space in (ir.SPACE_SBUF, ir.SPACE_PSUM):
            out = new_hbm(t.shape, t.dtype, ir.SPACE_SHARED_HBM, t.name)
            store(out, t)
            return out
        return t
    if isinstance(ret, (tuple, list)):
        return type(ret)(one(t) for t in ret)
    return one(ret)


def _sig_of(bound):
    out = []
    for k, v in bound.arguments.items():
        if isinstance(v, tuple) and any(is_array_arg(x) for x in v):
            out.append((k, tuple(arg_signature(x) for x in v)))
        elif isinstance(v, dict) and any(is_array_arg(x) for x in v.values()):
            out.append((k, tuple((kk, arg_signature(x)) for kk, x in sorted(v.items()))))
        else:
            out.append((k, arg_signature(v)))
    return tuple(out)


def kernel_source_files(traced):
    return [os.path.abspath(f) if not f.startswith("<") else f for f in traced.files]
