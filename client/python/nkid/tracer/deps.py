"""What a kernel's trace reads beyond its arguments, as a fingerprint.

A process traces each specialization of a kernel once and keeps the trace
(``TraceKernel.specialize``).  The trace depends on more than the arguments:
module globals the kernel reads (``SCALE``), closure cells, default
arguments, the helper functions it calls and the module attributes it reads
(``helper.FACTOR``).  :func:`fingerprint` returns a hashable value that
changes whenever any of those changes, so the memo never hands back a trace
of the kernel as it was; ``None`` when that cannot be established (an
object whose state cannot be hashed, such as a numpy array global), in which
case the caller traces again.

Across processes nothing here matters: nkid keys every compiled kernel by
the digest of the IR that was traced, never by this fingerprint.
"""

import types

__all__ = ["fingerprint"]

#: How deep calls into helper functions are followed.
MAX_DEPTH = 8
#: Most elements of a list, tuple, set or dict taken by value.
MAX_ITEMS = 256

_SIMPLE = (int, float, complex, str, bytes, bool, type(None), range, slice)
# Libraries whose functions and objects do not change under a kernel: taken
# by identity, not followed.
_LIBRARIES = ("nkid", "numpy", "ml_dtypes", "jax", "jaxlib", "math", "builtins",
              "functools", "itertools", "operator", "typing", "neuronxcc")


class _Unknown(Exception):
    pass


_code_names = {}


def _names(code):
    """Every global or attribute name code (and the code nested in it)
    reads, computed once per code object."""
    names = _code_names.get(code)
    if names is None:
        acc = set(code.co_names)
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                acc.update(_names(c))
        names = _code_names[code] = tuple(sorted(acc))
    return names


def _library(obj):
    mod = getattr(obj, "__module__", None) or getattr(type(obj), "__module__", "") or ""
    return mod.partition(".")[0] in _LIBRARIES


def _value(v, names, out, seen, depth):
    """Append what v contributes to the fingerprint."""
    if isinstance(v, _SIMPLE):
        out.append(v.__class__)     # 1, 1.0 and True trace apart
        out.append(v)
    elif isinstance(v, types.FunctionType):
        if _library(v):
            out.append(v)
        else:
            _function(v, out, seen, depth + 1)
    elif isinstance(v, types.ModuleType):
        out.append(v.__name__)
        if not _library(v) and depth < MAX_DEPTH:
            # A user's module: the attributes the code reads from it.
            d = v.__dict__
            for n in names:
                if n in d:
                    out.append(n)
                    _value(d[n], (), out, seen, depth + 1)
    elif isinstance(v, (tuple, list, set, frozenset)):
        if len(v) > MAX_ITEMS:
            raise _Unknown()
        out.append((type(v).__name__, len(v)))
        for x in (sorted(v, key=repr) if isinstance(v, (set, frozenset)) else v):
            _value(x, names, out, seen, depth)
    elif isinstance(v, dict):
        if len(v) > MAX_ITEMS:
            raise _Unknown()
        out.append(("dict", len(v)))
        for k in sorted(v, key=repr):
            out.append(k)
            _value(v[k], names, out, seen, depth)
    elif isinstance(v, (type, types.BuiltinFunctionType, types.MethodType)) or _library(v):
        try:
            hash(v)
        except TypeError:
            raise _Unknown()
        out.append(v)
    elif callable(getattr(v, "__wrapped__", None)) or hasattr(v, "func"):
        # A decorated kernel or sub-kernel object: follow its function.
        inner = getattr(v, "__wrapped__", None) or getattr(v, "func")
        if not isinstance(inner, types.FunctionType):
            raise _Unknown()
        out.append(type(v))
        _function(inner, out, seen, depth + 1)
    else:
        raise _Unknown()


def _function(f, out, seen, depth):
    if depth > MAX_DEPTH:
        raise _Unknown()
    if id(f) in seen:
        out.append(("seen", f.__code__))
        return
    seen.add(id(f))
    code = f.__code__
    out.append(code)
    names = _names(code)
    for v in (f.__defaults__ or ()):
        _value(v, names, out, seen, depth)
    for k, v in sorted((f.__kwdefaults__ or {}).items()):
        out.append(k)
        _value(v, names, out, seen, depth)
    for cell in (f.__closure__ or ()):
        try:
            v = cell.cell_contents
        except ValueError:
            out.append(("empty",))
            continue
        _value(v, names, out, seen, depth)
    g = f.__globals__
    for n in names:
        if n in g:
            out.append(n)
            _value(g[n], names, out, seen, depth)


def fingerprint(func):
    """A hashable fingerprint of everything func's trace can read besides
    its arguments, or None when that cannot be established."""
    if not isinstance(func, types.FunctionType):
        return None
    out = []
    try:
        _function(func, out, set(), 0)
        t = tuple(out)
        hash(t)
    except (_Unknown, TypeError, RecursionError):
        return None
    return t
