"""``nkid.nki.language.constants``: ``sizeinbytes(dtype)``."""

from nkid.tracer import dtypes as _dt

__all__ = ["sizeinbytes"]


def sizeinbytes(dtype):
    """The size in bytes of one element of ``dtype`` (a NKI or numpy dtype)."""
    return int(_dt.normalize(dtype).itemsize)
