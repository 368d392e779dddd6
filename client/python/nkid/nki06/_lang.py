"""Which NKI language a trace speaks, and the two kept apart.

A kernel traced by the NKI 0.6 front door (``nkid.nki06``) runs with this
thread's flag set; the 0.6 API refuses to run without it (a legacy
``nkid.nki`` kernel calling ``nki.isa.nc_matmul(dst, ...)``), and before a
0.6 trace starts :func:`check_kernel` refuses a kernel whose code reaches
the legacy modules (``nkid.nki.*``, ``neuronxcc.nki.*``).  Both errors
name the two languages and the kernel's file:line.
"""

import contextlib
import inspect
import os
import threading
import types
from enum import IntEnum

from ..errors import NKIError
from ..tracer.builder import Access, current as _current, loc_suffix as _loc

_state = threading.local()

LEGACY = "the legacy neuronxcc.nki language (nkid.nki)"
NEW = "NKI 0.6 (the nki package, nkid.nki06)"


def active():
    """True while a 0.6 kernel is traced on this thread."""
    return getattr(_state, "depth", 0) > 0


@contextlib.contextmanager
def tracing():
    """The dynamic extent of one 0.6 trace."""
    _state.depth = getattr(_state, "depth", 0) + 1
    try:
        yield
    finally:
        _state.depth -= 1


def unrolling():
    """True while a 0.6 kernel is traced with its loops unrolled (the
    second attempt, see nkid.nki06.Kernel.specialize)."""
    return getattr(_state, "unroll", 0) > 0


class TooManyTrips(Exception):
    """An unrolled trace went past its trip budget (internal)."""


@contextlib.contextmanager
def unrolled(budget=None):
    """Trace with affine_range / sequential_range unrolled (Python
    semantics, as NKI 0.6 documents its loops); with a budget, more loop
    trips than that in all raise TooManyTrips."""
    _state.unroll = getattr(_state, "unroll", 0) + 1
    old = getattr(_state, "budget", None)
    _state.budget = [budget] if budget is not None else None
    try:
        yield
    finally:
        _state.unroll -= 1
        _state.budget = old


def unrolled_trips(n):
    """Count n more unrolled trips against the budget."""
    b = getattr(_state, "budget", None)
    if b is not None:
        b[0] -= n
        if b[0] < 0:
            raise TooManyTrips()


def require(what):
    """The current builder for a 0.6 API call ``what``; an error when no
    kernel is traced, or when the kernel is traced by the legacy door."""
    b = _current()
    if b is None:
        raise NKIError("%s can only be used inside a NKI kernel while it is traced"
                       " (call the nki.jit kernel, or nki.simulate(kernel))" % what)
    if not active():
        raise NKIError("%s is %s, but this kernel is traced by %s: a kernel uses one"
                       " language; trace it with nkid.nki06.jit (import nki) or write"
                       " it with neuronxcc.nki's API%s" % (what, NEW, LEGACY, _loc()))
    return b


def _legacy_module(m):
    name = getattr(m, "__name__", "") or ""
    return (name == "nkid.nki" or name.startswith("nkid.nki.")
            or name == "neuronxcc" or name.startswith("neuronxcc."))


def _where(func):
    code = getattr(func, "__code__", None)
    if code is None:
        return ""
    return " (%s:%d)" % (os.path.basename(code.co_filename), code.co_firstlineno)


def check_kernel(func, _seen=None, _depth=0):
    """Refuse a 0.6 kernel whose code (or a helper it calls, up to a few
    levels) names a legacy NKI module or a legacy front door."""
    if _seen is None:
        _seen = set()
    if id(func) in _seen or _depth > 4:
        return
    _seen.add(id(func))
    code = getattr(func, "__code__", None)
    if code is None:
        return
    g = getattr(func, "__globals__", {}) or {}
    values = []
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names.update(c.co_names)
    for n in names:
        if n in g:
            values.append((n, g[n]))
    for cell, n in zip(getattr(func, "__closure__", None) or (), code.co_freevars):
        try:
            values.append((n, cell.cell_contents))
        except ValueError:
            continue
    for n, v in values:
        if isinstance(v, types.ModuleType):
            if _legacy_module(v):
                raise NKIError(
                    "kernel '%s' mixes %s with %s: it uses '%s' (module %s); a kernel"
                    " traced by nki.jit of the nki package must use nki.language and"
                    " nki.isa only%s" % (func.__name__, NEW, LEGACY, n, v.__name__,
                                         _where(func)))
            continue
        mod = getattr(v, "__module__", "") or ""
        if mod.startswith("nkid.nki.") and type(v).__name__ in (
                "GenericKernel", "BaremetalKernel", "SimulateKernel", "SubKernel"):
            raise NKIError(
                "kernel '%s' mixes %s with %s: it calls '%s', a kernel of the legacy"
                " front door%s" % (func.__name__, NEW, LEGACY, n, _where(func)))
        if inspect.isfunction(v) and not mod.startswith("nkid."):
            check_kernel(v, _seen, _depth + 1)


# ---------------------------------------------------------------- shared with isa

#: What nl's loops need of isa's registers, filled in by isa.py when it is
#: imported (the package imports it with language): isa's registers are
#: nl.ndarray tiles, so language cannot import isa.
registers = types.SimpleNamespace(VirtualRegister=None, dyn_range=None, dyn_loop=None,
                                  loop_register=None, while_loop=None)

class nc_version(IntEnum):
    """NeuronCore version."""

    gen2 = 2
    gen3 = 3
    gen4 = 4


def get_nc_version():
    """The target's NeuronCore version (gen2 trn1/inf2, gen3 trn2, gen4 trn3)."""
    b = _current()
    t = getattr(b, "target", "") or ""
    return {"trn2": nc_version.gen3, "trn3": nc_version.gen4}.get(t, nc_version.gen2)


def needs(gen, what):
    """Refuse ``what`` on a target older than NeuronCore-v<gen>."""
    have = int(get_nc_version())
    if have < gen:
        raise NKIError("%s is available only on NeuronCore-v%d and newer (trn%d), but the"
                       " target is NeuronCore-v%d (set NEURON_PLATFORM_TARGET_OVERRIDE)%s"
                       % (what, gen, gen - 1, have, _loc()))


def touches(ops, tid):
    for op in ops:
        accs = [op.dst] + list(op.src)
        if any(isinstance(a, Access) and a.tensor == tid for a in accs):
            return True
        if op.loop is not None and touches(op.loop[5], tid):
            return True
        body = op.fields.get("_body") if op.fields else None
        if body is not None and touches(body, tid):
            return True
        if op.branch is not None and (touches(op.branch[1], tid) or touches(op.branch[2], tid)):
            return True
    return False


def hoist_fills(b):
    """A loop just ended (its op is the last of the current body): move the
    zero fills of accumulation groups it holds out before it, when its
    variable is not in the group's view, it was entered after the tile was
    declared, and nothing else in it touches the tile."""
    pend = getattr(b, "_nki06_fills", None)
    if not pend:
        return
    parent = b.cur_body
    if not parent or parent[-1].loop is None:
        return
    lop = parent[-1]
    var, body = lop.loop[0], lop.loop[5]
    keep = []
    for f in pend:
        if f["body"] is not body:
            keep.append(f)              # not this loop's: wait for its own end
            continue
        tid = f["tid"]
        others = [op for op in body if op is not f["fill"]
                  and not (op.loop is not None and op.loop[5] is next_loop_body(body, f))]
        if (("l", var) in set(k for a in f["view"]._imap for k in a.t)
                or var in b.tensors[tid].scope or touches(others, tid)):
            continue                    # the group starts here: done
        body.remove(f["fill"])
        parent.insert(len(parent) - 1, f["fill"])
        f["body"] = parent
        keep.append(f)
    b._nki06_fills = keep


def next_loop_body(body, f):
    """The body of the loop op right after f's fill in body."""
    try:
        i = body.index(f["fill"])
    except ValueError:
        return None
    for op in body[i + 1:]:
        if op.loop is not None:
            return op.loop[5]
    return None
