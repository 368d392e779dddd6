"""Exceptions raised by the nkid package."""

__all__ = ["NkidError", "NkidConnectionError", "NKISyntaxError", "NKIError"]


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
