"""Trace a kernel and save it for nkictl and warm-up manifests.

    python -m nkid.trace MODULE:KERNEL --shape 256,1024 --dtype float32 \\
        --shape 256,1024 --dtype float32 [--arg 4] [--grid 2,2] \\
        [--target trn2] [--options "..."] [-o kernel.nkir] [--print]

MODULE is a dotted module name or a path to a .py file; KERNEL a kernel in
it (a plain function, or what nki.jit / nki.baremetal returned; a grid given
with ``kernel[...]`` there is replaced by ``--grid``).  The kernel's
arguments are given in call order: each ``--shape`` (with the ``--dtype``
after it, default float32) is a tensor argument, each ``--arg`` a Python
literal passed as is.

The file written (``.nkir`` by convention) is the *saved-kernel format*::

    bytes 0..7   magic  b"NKIDKRF1"
    bytes 8..    a serialized nkid.v1.KernelRef (proto/nkid.proto):
                 kernel {name, format "nkir/1", ir (a serialized
                 nkir.v1.Kernel), source_files}, target, options

See docs/python.md.
"""

import argparse
import ast
import importlib
import importlib.util
import os
import sys

from ._proto import nkid_pb2 as pb
from ._proto import nkir_pb2 as ir
from . import targets as _targets
from .tracer import trace as _trace
from .nki.typing import TensorPlaceholder

__all__ = ["MAGIC", "save", "load", "trace_to_file", "main"]

MAGIC = b"NKIDKRF1"


def save(traced, path, target="", options=""):
    """Write a TracedKernel in the saved-kernel format; returns the KernelRef."""
    from .client import kernel_ref
    ref = kernel_ref(traced, target or traced.kernel.target, options)
    data = MAGIC + ref.SerializeToString(deterministic=True)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    return ref


def load(path):
    """Read a saved kernel: (nkid.v1.KernelRef, nkir.v1.Kernel)."""
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(MAGIC):
        raise ValueError("%s is not a saved nkid kernel (bad magic)" % path)
    ref = pb.KernelRef()
    ref.ParseFromString(data[len(MAGIC):])
    k = ir.Kernel()
    k.ParseFromString(ref.kernel.ir)
    return ref, k


def _resolve(spec):
    mod, _, attr = spec.partition(":")
    if not attr:
        raise SystemExit("expected MODULE:KERNEL, got %r" % spec)
    if mod.endswith(".py") or os.sep in mod:
        path = os.path.abspath(mod)
        sys.path.insert(0, os.path.dirname(path))
        name = os.path.splitext(os.path.basename(path))[0]
        s = importlib.util.spec_from_file_location(name, path)
        m = importlib.util.module_from_spec(s)
        sys.modules[name] = m
        s.loader.exec_module(m)
    else:
        sys.path.insert(0, os.getcwd())
        m = importlib.import_module(mod)
    obj = m
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _unwrap(obj):
    func = getattr(obj, "func", None)
    if func is not None and callable(func):
        return func, getattr(obj, "grid", ())
    return obj, ()


class _Ordered(argparse.Action):
    def __call__(self, parser, ns, values, option_string=None):
        items = getattr(ns, "items", None) or []
        items.append((self.dest, values))
        ns.items = items


def trace_to_file(kernel, args, path, grid=None, target="", options=""):
    """Trace ``kernel(*args)`` (tensors may be nt.tensor placeholders) and save it."""
    func, g = _unwrap(kernel)
    if hasattr(kernel, "_trace06"):         # a NKI 0.6 kernel (nkid.nki06): its own trace
        traced = kernel.trace06_to(args, grid if grid is not None else g, target, options)
    else:
        traced = _trace(func, args, {}, grid if grid is not None else g,
                        target=target, options=options)
    save(traced, path, target, options)
    return traced


def _target(name):
    """argparse type: a target NKI names, else the error listing them."""
    try:
        return _targets.check(name)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m nkid.trace",
                                description="Trace a NKI kernel to NKIR and save it.")
    p.add_argument("kernel", help="MODULE:KERNEL (module name or file.py)")
    p.add_argument("--shape", action=_Ordered, help="a tensor argument: d0,d1,...")
    p.add_argument("--dtype", action=_Ordered, help="dtype of the preceding --shape")
    p.add_argument("--arg", action=_Ordered, help="a static argument (Python literal)")
    p.add_argument("--grid", default=None, help="launch grid g0,g1,...")
    p.add_argument("--target", default="", type=_target,
                   help="compile target: " + _targets.NAMES)
    p.add_argument("--options", default="", help="additional compile options")
    p.add_argument("-o", "--output", default=None, help="output file (default KERNEL.nkir)")
    p.add_argument("--print", action="store_true", help="print the IR as text")
    ns = p.parse_args(argv)

    args = []
    for kind, value in getattr(ns, "items", None) or []:
        if kind == "shape":
            shape = [int(s) for s in value.replace("x", ",").split(",") if s]
            args.append(TensorPlaceholder(shape, "float32"))
        elif kind == "dtype":
            if not args or not isinstance(args[-1], TensorPlaceholder):
                p.error("--dtype must follow a --shape")
            args[-1] = TensorPlaceholder(args[-1].shape, value)
        else:
            try:
                args.append(ast.literal_eval(value))
            except (ValueError, SyntaxError):
                args.append(value)
    grid = None
    if ns.grid:
        grid = tuple(int(g) for g in ns.grid.replace("x", ",").split(",") if g)
    kernel = _resolve(ns.kernel)
    out = ns.output or (ns.kernel.rpartition(":")[2] + ".nkir")
    traced = trace_to_file(kernel, args, out, grid, ns.target, ns.options)
    if ns.print:
        from .tracer.pretty import format_kernel
        print(format_kernel(traced.kernel))
    print("%s: %s, %d bytes of %s, ir %s" % (out, traced.name, len(traced.ir),
                                              traced.format, traced.ir_digest[:16]),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
