"""Exceptions raised by the nkid package, and the front doors' way of
raising them from the caller's frame."""

import functools
import os
import re

from . import _tb

__all__ = ["NkidError", "NkidConnectionError", "NKISyntaxError", "NKIError", "error_for",
           "front_door", "shallow", "TRACEBACK_ENV"]

#: NKID_TRACEBACK=full keeps the client's own frames in tracebacks.
TRACEBACK_ENV = "NKID_TRACEBACK"


class NkidError(RuntimeError):
    """A request to nkid failed.

    ``str(err)`` is the daemon's message (for an invalid kernel it is
    worded like NKI's own errors and ends with the kernel's
    ``(file.py:line)``, the file named relative to its directory as the
    tracer's errors name it; ``full_message`` keeps the daemon's absolute
    path).  ``code`` is the gRPC status name, e.g. ``"INVALID_ARGUMENT"``.
    """

    def __init__(self, message, code=None):
        super().__init__(message)
        self.message = message
        self.full_message = message
        self.code = code


class NkidConnectionError(NkidError):
    """nkid could not be reached on its socket."""


_OOB_RE = re.compile(r"\b(index -?\d+ is out of bounds for axis \d+ with size \d+):")


def error_for(message, code=None):
    """The exception for a failed request: NkidError, or for a run-time
    (indirect) index out of bounds the plain IndexError NKI's simulator
    raises, whose ``str`` is numpy's words for the flat element ("index
    66048 is out of bounds for axis 0 with size 65536") and whose note and
    ``message`` are the daemon's whole message (the tensor, the index and
    the kernel's file:line)."""
    full = message
    message = _tb.short_paths(message)
    m = _OOB_RE.search(message or "")
    if not m:
        err = NkidError(message, code)
        err.full_message = full
        return err
    e = IndexError(m.group(1))
    e.add_note(message)
    e.message = message
    e.full_message = full
    e.code = code
    return e


class NKIError(Exception):
    """A kernel broke a rule of the NKI language while it was traced."""


class NKISyntaxError(NKIError, SyntaxError):
    """A kernel used a construct the NKI tracer cannot express (for example
    Python control flow on a loop variable or an index tile)."""

    def __init__(self, msg):
        Exception.__init__(self, msg)
        self.msg = msg

    def __str__(self):
        return self.msg


def shallow(err):
    """Mark err (returned) to be raised from the caller's frame by the front
    door it passes through: what the client checked or nkid answered, where
    the client's own frames tell the user nothing."""
    err._nkid_shallow = True
    return err


def front_door(call):
    """Decorate a front door's ``__call__``: an NkidError, or an error
    marked with :func:`shallow`, is raised again from the door with its
    message and no traceback of the client's frames (``raise
    err.with_traceback(None) from None``), so that it ends in the user's
    call.  Errors of the user's own kernel (NKIError, from tracing) keep
    their frames, and only theirs: the package's frames between the call
    and the kernel's line are cut (nkid._tb).  ``NKID_TRACEBACK=full``
    keeps every frame."""
    @functools.wraps(call)
    def door(*args, **kwargs):
        try:
            return call(*args, **kwargs)
        except Exception as err:
            if os.environ.get(TRACEBACK_ENV, "") == "full":
                raise
            if not (isinstance(err, NkidError) or getattr(err, "_nkid_shallow", False)):
                # The kernel's own error (tracing): its frames, not ours.
                tb = _tb.user_frames_only(err.__traceback__)
                if tb is None:
                    raise
                raise err.with_traceback(tb) from err.__cause__
            raise err.with_traceback(None) from None
    return door
