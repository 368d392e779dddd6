"""Where the trace is: the kernel's source line being traced.

The tracer's error messages end with this location, as NKI's do; both the
index arithmetic (affine.py) and the kernel builder (builder.py) use it, so
it sits below both.
"""

import os
import sys

__all__ = ["caller_frame", "caller_loc", "loc_suffix"]

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def caller_frame():
    """The innermost frame outside the nkid package (the kernel's line)."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_PKG_DIR):
        f = f.f_back
    return f


def caller_loc():
    f = caller_frame()
    if f is None:
        return ("<unknown>", 0)
    return (f.f_code.co_filename, f.f_lineno)


def loc_suffix():
    """`` (file.py:LINE)`` for the kernel line being traced."""
    path, line = caller_loc()
    return " (%s:%d)" % (os.path.basename(path), line)
