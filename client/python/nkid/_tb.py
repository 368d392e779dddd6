"""What a user sees of an error: tracebacks trimmed to the user's own
frames, and kernel files named as NKI names them.

A front door (``nki.jit``, ``nki.baremetal``, ...) traces the user's kernel
through the package's frames; an error the kernel causes should read as
Python's own errors do, from the user's call to the user's line, not
through the tracer's internals.  ``NKID_TRACEBACK=full`` keeps them."""

import os
import re
import types

__all__ = ["user_frames_only", "short_paths"]

_PKG = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _ours(tb):
    return os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_PKG)


def user_frames_only(tb):
    """The traceback tb without the package's frames, or None when it has
    no frame of the user's (then nothing is to be gained)."""
    keep = []
    while tb is not None:
        if not _ours(tb):
            keep.append(tb)
        tb = tb.tb_next
    if not keep:
        return None
    out = None
    for t in reversed(keep):
        out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


# "(/abs/dir/kernel.py:12)": a kernel's file and line in nkid's messages.
_LOC_RE = re.compile(r"\((/[^()\n]*?([^/()\n]+\.py)):(\d+)\)")


def short_paths(message):
    """message with each ``(/abs/path/file.py:LINE)`` written
    ``(file.py:LINE)``: the kernel's file relative to its directory, as the
    tracer's own errors and NKI's name it."""
    return _LOC_RE.sub(lambda m: "(%s:%s)" % (m.group(2), m.group(3)), message or "")
