"""nkid.nki.compiler: allocation control and kernel decorators
(``import nkid.nki.compiler as ncc``, mirrors ``neuronxcc.nki.compiler``).

Direct allocation: ``buffer=ncc.sbuf.alloc(func)``, ``ncc.sbuf.mod_alloc(...)``
and the PSUM forms place every logical tile of a tensor; nkid computes the
placement as NKI's compiler does and refuses what it refuses (see
``nkid.tracer.alloc``): addresses outside SBUF/PSUM, bad start partitions,
tensors alive at the same time on overlapping memory.  The executor keeps
each tensor in memory of its own, so placements never change results.
``auto_alloc()`` (and ``nl.sbuf``/``nl.psum``) leave placement to nkid.

Scheduling directives (``allocation_scope()``, ``multi_buffer(factor)``,
``no_reorder()``) are accepted and checked for their arguments: they steer
neuronx-cc's scheduler and allocator, and nkid runs a kernel's operations in
program order whatever the directive, so results never depend on them.

The decorators are accepted: ``skip_middle_end_transformations`` and
``enable_stack_allocator`` change how neuronx-cc schedules, which nothing
in nkid's results depends on; ``force_auto_alloc`` makes a kernel's direct
allocations ignored (not checked), as NKI ignores them.
"""

import functools
import os

from ..tracer.alloc import AllocBuffer, OnBuffer

# submodules that NKI's reference kernels import (nkid.nki._internal)
__path__ = [os.path.join(os.path.dirname(__file__), "_internal", "compiler")]

__all__ = ["sbuf", "psum", "skip_middle_end_transformations", "enable_stack_allocator",
           "force_auto_alloc", "allocation_scope", "multi_buffer", "no_reorder"]


def _linear(shape, idx):
    """idx modulo shape ((1, 1, ...) when empty), row-major linearized over
    shape, as NKI's modulo allocation computes it (extra entries of either
    are ignored: zip)."""
    n = 0
    for d, (i, s) in enumerate(zip(idx, shape)):
        stride = 1
        for x in shape[d + 1:]:
            stride *= int(x)
        n += (int(i) % int(s)) * stride
    return n


def _tiles(name, v):
    if v is None:
        return ()
    if isinstance(v, int):
        return (v,)
    v = tuple(int(x) for x in v)
    if any(x < 1 for x in v):
        raise ValueError("%s must hold positive tile counts, got %r" % (name, v))
    return v


def _decorator(func, mark=None):
    if func is None:
        return functools.partial(_decorator, mark=mark)
    if mark:
        inner = getattr(func, "func", func)
        setattr(inner, mark, True)
    return func


def skip_middle_end_transformations(func=None):
    """Skip all middle end transformations on the kernel (accepted: nkid's
    backends schedule nothing that changes results)."""
    return _decorator(func)


def enable_stack_allocator(func=None, log_level=50):
    """Use the stack allocator for the kernel's psum and sbuf tensors
    (accepted; with skip_middle_end_transformations)."""
    return _decorator(func)


def force_auto_alloc(func=None):
    """Force automatic allocation: the kernel's direct allocations are
    ignored (neither placed nor checked)."""
    return _decorator(func, "__nki_force_auto_alloc__")


class _Directive:
    """A scheduling directive: usable as ``with ...:`` around kernel code and
    as ``nl.sequential_range(n, directives=...)``; changes no result."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class AllocationScope(_Directive):
    """``ncc.allocation_scope()``: a scope for the allocations made inside
    it (nkid's allocation check already frees a tensor at its last use)."""

    def __repr__(self):
        return "nki.compiler.allocation_scope()"


class MultiBufferDirective(_Directive):
    """``ncc.multi_buffer(factor)``: let the allocator use ``factor``
    buffers for the tensors of a loop."""

    def __init__(self, factor):
        self.factor = factor

    def __repr__(self):
        return "nki.compiler.multi_buffer(factor=%d)" % self.factor


class OperationOrderGuard(_Directive):
    """``ncc.no_reorder()``: keep the operations in program order."""

    def __repr__(self):
        return "nki.compiler.no_reorder()"


def allocation_scope():
    """AllocationScope for managing tensor allocation scopes."""
    return AllocationScope()


def multi_buffer(factor=2):
    """A MultiBufferDirective: multi-buffered allocation with ``factor``
    buffers (a positive integer)."""
    if isinstance(factor, bool) or not isinstance(factor, int) or factor < 1:
        raise ValueError("ncc.multi_buffer factor must be a positive integer, got %r"
                         % (factor,))
    return MultiBufferDirective(factor)


def no_reorder():
    """An OperationOrderGuard: operations are not reordered (nkid never
    reorders them)."""
    return OperationOrderGuard()


def is_directive(v):
    """True if v is a directive or a list/tuple of directives."""
    if isinstance(v, (list, tuple)):
        return all(isinstance(x, _Directive) for x in v)
    return isinstance(v, _Directive)


class _Space(OnBuffer):
    """``ncc.sbuf`` / ``ncc.psum``: the allocation APIs of one memory."""

    def __init__(self, buffer):
        self.buffer = buffer

    def auto_alloc(self):
        """Leave the tensor's placement to nkid (same as nl.sbuf/nl.psum)."""
        return self.buffer

    def alloc(self, func):
        """Place each logical tile where ``func(idx, pdim_size, fdim_size)``
        says: ``(start_partition, byte_addr)`` in SBUF, ``(bank_id,
        start_partition, byte_addr)`` in PSUM."""
        if not callable(func):
            raise TypeError("ncc.%s.alloc expects a callable, got %r" % (self.name, func))
        name = getattr(func, "__name__", None) or type(func).__name__
        return AllocBuffer(self.buffer, func, "ncc.%s.alloc(%s)" % (self.name, name))

    def __repr__(self):
        return "nki.compiler.%s" % self.name


class _Sbuf(_Space):

    def mod_alloc(self, *, base_addr=None, base_partition=0, num_par_tiles=(),
                  num_free_tiles=(), byte_addr=None):
        """Modulo allocation: logical tile ``idx`` at partition
        ``base_partition + lin(idx % num_par_tiles) * pdim_size`` and byte
        ``base_addr + lin(idx % num_free_tiles) * fdim_size``."""
        if base_addr is None:
            base_addr = byte_addr           # the guide's examples spell it so
        if base_addr is None:
            raise TypeError("ncc.sbuf.mod_alloc() missing required keyword argument"
                            " 'base_addr'")
        base_addr, base_partition = int(base_addr), int(base_partition)
        if base_partition != 0:
            raise ValueError("base_partition of ncc.sbuf.mod_alloc must be 0 in the current"
                             " version, got %d" % base_partition)
        npar = _tiles("num_par_tiles", num_par_tiles)
        nfree = _tiles("num_free_tiles", num_free_tiles)

        def func(idx, pdim_size, fdim_size):
            return (base_partition + _linear(npar, idx) * pdim_size,
                    base_addr + _linear(nfree, idx) * fdim_size)
        what = "ncc.sbuf.mod_alloc(base_addr=%d%s%s)" % (
            base_addr, ", num_par_tiles=%r" % (npar,) if npar else "",
            ", num_free_tiles=%r" % (nfree,) if nfree else "")
        return AllocBuffer(self.buffer, func, what)


class _Psum(_Space):

    def mod_alloc(self, *, base_bank, base_addr=0, base_partition=0, num_bank_tiles=(),
                  num_par_tiles=(), num_free_tiles=()):
        """Modulo allocation over PSUM banks: logical tile ``idx`` in bank
        ``base_bank + lin(idx % num_bank_tiles)``."""
        base_bank, base_addr = int(base_bank), int(base_addr)
        if base_addr != 0 or int(base_partition) != 0:
            raise ValueError("base_addr and base_partition of ncc.psum.mod_alloc must be 0"
                             " in the current version")
        nbank = _tiles("num_bank_tiles", num_bank_tiles)
        for name, v in (("num_par_tiles", num_par_tiles), ("num_free_tiles",
                                                             num_free_tiles)):
            if any(x != 1 for x in _tiles(name, v)):
                raise ValueError("%s of ncc.psum.mod_alloc must currently be empty or"
                                 " (1, 1, ...)" % name)

        def func(idx, pdim_size, fdim_size):
            return (base_bank + _linear(nbank, idx), 0, 0)
        what = "ncc.psum.mod_alloc(base_bank=%d%s)" % (
            base_bank, ", num_bank_tiles=%r" % (nbank,) if nbank else "")
        return AllocBuffer(self.buffer, func, what)


def _spaces():
    from ..tracer.tensor import sbuf as _sbuf, psum as _psum
    return _Sbuf(_sbuf), _Psum(_psum)


sbuf, psum = _spaces()
