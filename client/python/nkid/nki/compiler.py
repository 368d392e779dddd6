"""nkid.nki.compiler: compiler directives (``nki.compiler``).

nkid's backends do their own allocation and scheduling, so these directives
are accepted and have no effect."""

__all__ = ["skip_middle_end_transformations", "enable_stack_allocator", "force_auto_alloc"]


def skip_middle_end_transformations(func):
    """Accepted; no effect under nkid."""
    return func


def enable_stack_allocator(func=None, **kwargs):
    """Accepted; no effect under nkid."""
    return func if func is not None else (lambda f: f)


def force_auto_alloc(func=None, **kwargs):
    """Accepted; no effect under nkid."""
    return func if func is not None else (lambda f: f)


class _AllocSpace:
    """``nki.compiler.sbuf`` / ``.psum``: explicit allocation helpers
    (``mod_alloc``, ``alloc``, ...).  nkid allocates by itself: every helper
    returns the plain buffer, so ``buffer=ncc.sbuf.mod_alloc(...)`` means
    ``buffer=nl.sbuf``."""

    def __init__(self, buffer):
        self._buffer = buffer

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        buf = self._buffer
        return lambda *args, **kwargs: buf

    def __repr__(self):
        return "nki.compiler.%s" % self._buffer.name


def _spaces():
    from ..tracer.tensor import sbuf as _sbuf, psum as _psum
    return _AllocSpace(_sbuf), _AllocSpace(_psum)


sbuf, psum = _spaces()
