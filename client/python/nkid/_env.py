"""Environment reads for the warm call path.

``os.environ.get`` runs several Python frames per read, and raises and
catches a KeyError for a variable that is not set: on a warm
``nki.baremetal`` call that is a measurable part of the client's time
(docs/performance.md, "Python call path").  :func:`get` reads the same
mapping (``os.environ``'s own table, which every change made through
``os.environ`` updates) in one dictionary lookup, and falls back to
``os.environ.get`` where that table is not the expected one.
"""

import os
import sys

__all__ = ["get"]

_data = getattr(os.environ, "_data", None)
_bytes_keys = os.name == "posix" and isinstance(_data, dict)
_keys = {}
_enc = sys.getfilesystemencoding()


def get(name, default=None):
    """os.environ.get(name, default)."""
    if not _bytes_keys:
        return os.environ.get(name, default)
    k = _keys.get(name)
    if k is None:
        k = _keys[name] = name.encode(_enc, "surrogateescape")
    v = _data.get(k)
    return default if v is None else v.decode(_enc, "surrogateescape")
