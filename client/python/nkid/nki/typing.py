"""nkid.nki.typing: tensor type annotations and placeholders
(``import nkid.nki.typing as nt``).

``nt.tensor[[8192, 4096], nl.bfloat16]`` is a placeholder argument with a
shape and a dtype but no values: kernels trace with it, and nki.benchmark
accepts it (only shapes matter there).  ``nt.mutable_tensor`` marks a
parameter the kernel may write.
"""

import numpy as np

from ..tracer import dtypes as _dt

__all__ = ["tensor", "mutable_tensor", "TensorPlaceholder"]


class TensorPlaceholder:
    """A kernel argument known only by shape and dtype."""

    def __init__(self, shape, dtype, mutable=False):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = _dt.normalize(dtype)
        self.mutable = mutable

    @property
    def ndim(self):
        return len(self.shape)

    def zeros(self):
        """A host array of zeros with this shape and dtype."""
        return np.zeros(self.shape, dtype=_dt.host_dtype(self.dtype))

    def __repr__(self):
        return "nt.tensor[%s, %s]" % (list(self.shape), _dt.name_of(self.dtype))


def _parse(key, mutable):
    if not isinstance(key, tuple):
        key = (key,)
    if len(key) == 2 and isinstance(key[0], (list, tuple)):
        return TensorPlaceholder(key[0], key[1], mutable)
    dtype = np.float32
    dims = list(key)
    if dims and not isinstance(dims[-1], (int, np.integer)):
        dtype = dims.pop()
    return TensorPlaceholder(dims, dtype, mutable)


class tensor:
    """``nt.tensor[shape, dtype]`` (or ``nt.tensor[d0, d1, ...]``)."""

    def __class_getitem__(cls, key):
        return _parse(key, False)


class mutable_tensor:
    """``nt.mutable_tensor``: a parameter the kernel writes in place."""

    def __class_getitem__(cls, key):
        return _parse(key, True)
