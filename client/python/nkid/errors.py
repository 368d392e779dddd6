"""Exceptions raised by the nkid package."""

import re

__all__ = ["NkidError", "NkidConnectionError", "NKISyntaxError", "NKIError", "error_for"]


class NkidError(RuntimeError):
    """A request to nkid failed.

    ``str(err)`` is the daemon's message verbatim (for an invalid kernel it
    is worded like NKI's own errors and ends with the kernel's
    ``(file:line)``).  ``code`` is the gRPC status name, e.g.
    ``"INVALID_ARGUMENT"``.
    """

    def __init__(self, message, code=None):
        super().__init__(message)
        self.message = message
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
    m = _OOB_RE.search(message or "")
    if not m:
        return NkidError(message, code)
    e = IndexError(m.group(1))
    e.add_note(message)
    e.message = message
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
