"""Which trace is running on this thread: the stack of active kernel
builders.

Tracing is re-entrant per thread and independent across threads. The index
arithmetic (affine.py) asks for the active builder as the builder itself
does, so the stack sits below both.
"""

import threading

from ..errors import NKIError

__all__ = ["current", "require", "push", "pop"]

_state = threading.local()


def current():
    """The builder of the trace running on this thread, or None."""
    stack = getattr(_state, "stack", None)
    return stack[-1] if stack else None


def require(what):
    """The active builder; NKIError naming ``what`` outside a trace."""
    b = current()
    if b is None:
        raise NKIError("%s can only be used inside a NKI kernel while it is traced"
                       " (call the kernel, or nki.baremetal / nki.simulate_kernel)" % what)
    return b


def push(b):
    """Make ``b`` the active builder of this thread (until ``pop``)."""
    stack = getattr(_state, "stack", None)
    if stack is None:
        stack = _state.stack = []
    stack.append(b)


def pop():
    """End the innermost trace of this thread."""
    _state.stack.pop()
