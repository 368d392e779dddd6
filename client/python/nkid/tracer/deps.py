"""What a kernel's trace reads beyond its arguments, as a fingerprint.

A process traces each specialization of a kernel once and keeps the trace
(``TraceKernel.specialize``).  The trace depends on more than the arguments:
module globals the kernel reads (``SCALE``), closure cells, default
arguments, the helper functions it calls and the module attributes it reads
(``helper.FACTOR``), the attributes it reads from a class of the user's
along its MRO (``K.s``), what a ``functools.partial`` holds (its function,
arguments and keywords) and the builtins it calls when they were rebound
(``builtins.abs = ...``).  :func:`fingerprint` returns a hashable value that
changes whenever any of those changes, so the memo never hands back a trace
of the kernel as it was; ``None`` when that cannot be established (an
object whose state cannot be hashed, such as a numpy array global), in which
case the caller traces again.

Across processes nothing here matters: nkid keys every compiled kernel by
the digest of the IR that was traced, never by this fingerprint.
"""

import builtins
import dis
import functools
import types
import weakref

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
    reads, computed once per code object (the attributes a kernel may read
    from a module of the user's)."""
    names = _code_names.get(code)
    if names is None:
        acc = set(code.co_names)
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                acc.update(_names(c))
        names = _code_names[code] = tuple(sorted(acc))
    return names


_GLOBAL_OPS = frozenset(("LOAD_GLOBAL", "STORE_GLOBAL", "DELETE_GLOBAL", "LOAD_NAME",
                         "STORE_NAME", "DELETE_NAME", "LOAD_FROM_DICT_OR_GLOBALS"))
_code_globals = {}


def _globals(code):
    """The names code (and the code nested in it) looks up as globals,
    computed once per code object: the plan of which globals a kernel's
    fingerprint reads.  A name of co_names that no instruction uses is
    kept too (read conservatively)."""
    names = _code_globals.get(code)
    if names is None:
        acc, used = set(), set()
        for ins in dis.get_instructions(code):
            if isinstance(ins.argval, str):
                used.add(ins.argval)
                if ins.opname in _GLOBAL_OPS:
                    acc.add(ins.argval)
        acc.update(n for n in code.co_names if n not in used)
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                acc.update(_globals(c))
        names = _code_globals[code] = tuple(sorted(acc))
    return names


def _library(obj):
    mod = getattr(obj, "__module__", None) or getattr(type(obj), "__module__", "") or ""
    return mod.partition(".")[0] in _LIBRARIES


class _Walk:
    """One fingerprint in the making: the values (out), the functions seen,
    and the probes that show it still holds (None once something mutable
    was read: a list, dict or set, a non-empty __kwdefaults__, an empty
    closure cell)."""

    __slots__ = ("root", "out", "seen", "dicts", "attrs")

    def __init__(self, root):
        self.root = root
        self.out = []
        self.seen = set()
        self.dicts = []         # (dict, key, value read or _ABSENT)
        self.attrs = []         # (object or None for root, attribute, value read)

    def mutable(self):
        self.dicts = self.attrs = None

    def read(self, d, key):
        v = d.get(key, _ABSENT)
        if self.dicts is not None:
            self.dicts.append((d, key, v))
        return v

    def attr(self, obj, name):
        v = getattr(obj, name)
        if self.attrs is not None:
            # Not the root itself: it is the key of _probed.
            self.attrs.append((None if obj is self.root else obj, name, v))
        return v


_ABSENT = object()
#: The builtins as Python started: one still bound to its name is taken by
#: name; one rebound (builtins.abs = f) is followed like any other value.
_BUILTINS = dict(builtins.__dict__)


def _class(v, names, w, depth):
    """A class of the user's: the attributes the code reads from it, each
    where the MRO finds it (so a subclass's assignment that shadows a
    base's, or a base's change, both count)."""
    w.out.append(v)
    if depth >= MAX_DEPTH:
        raise _Unknown()
    for n in names:
        for k in v.__mro__:
            if k is object:
                continue
            x = w.read(k.__dict__, n)
            if x is _ABSENT:
                continue
            w.out.append((k.__qualname__, n))
            if isinstance(x, (staticmethod, classmethod)):
                x = x.__func__
            _value(x, (), w, depth + 1)
            break


def _value(v, names, w, depth):
    """Append what v contributes to the fingerprint."""
    out = w.out
    if isinstance(v, _SIMPLE):
        out.append(v.__class__)     # 1, 1.0 and True trace apart
        out.append(v)
    elif isinstance(v, types.FunctionType):
        if _library(v):
            out.append(v)
        else:
            _function(v, w, depth + 1)
    elif isinstance(v, types.ModuleType):
        out.append(v.__name__)
        # A module is a library by its own name (a module object has no
        # __module__: _library would name its type's, builtins).
        if v.__name__.partition(".")[0] not in _LIBRARIES and depth < MAX_DEPTH:
            # A user's module: the attributes the code reads from it.
            d = v.__dict__
            for n in names:
                x = w.read(d, n)
                if x is not _ABSENT:
                    out.append(n)
                    _value(x, (), w, depth + 1)
    elif isinstance(v, (tuple, list, set, frozenset)):
        if len(v) > MAX_ITEMS:
            raise _Unknown()
        if not isinstance(v, (tuple, frozenset)):
            w.mutable()
        out.append((type(v).__name__, len(v)))
        for x in (sorted(v, key=repr) if isinstance(v, (set, frozenset)) else v):
            _value(x, names, w, depth)
    elif isinstance(v, dict):
        if len(v) > MAX_ITEMS:
            raise _Unknown()
        w.mutable()
        out.append(("dict", len(v)))
        for k in sorted(v, key=repr):
            out.append(k)
            _value(v[k], names, w, depth)
    elif isinstance(v, functools.partial):
        # Its function, arguments and keywords, by value; the keywords are
        # a dict that may change in place: walked on every call.
        out.append(functools.partial)
        kw = w.attr(v, "keywords")
        if kw:
            w.mutable()
        _value(w.attr(v, "func"), names, w, depth + 1)
        _value(w.attr(v, "args"), names, w, depth)
        for k in sorted(kw or {}):
            out.append(k)
            _value(kw[k], names, w, depth)
    elif isinstance(v, type) and not _library(v):
        _class(v, names, w, depth)
    elif isinstance(v, (type, types.BuiltinFunctionType, types.MethodType)) or _library(v):
        try:
            hash(v)
        except TypeError:
            raise _Unknown()
        out.append(v)
    elif callable(getattr(v, "__wrapped__", None)) or hasattr(v, "func"):
        # A decorated kernel or sub-kernel object: follow its function.
        wrapped = getattr(v, "__wrapped__", None)
        inner = w.attr(v, "__wrapped__") if callable(wrapped) else w.attr(v, "func")
        if not isinstance(inner, types.FunctionType):
            raise _Unknown()
        out.append(type(v))
        _function(inner, w, depth + 1)
    else:
        raise _Unknown()


def _function(f, w, depth):
    if depth > MAX_DEPTH:
        raise _Unknown()
    out = w.out
    if id(f) in w.seen:
        out.append(("seen", f.__code__))
        return
    w.seen.add(id(f))
    code = w.attr(f, "__code__")
    out.append(code)
    names = _names(code)
    for v in (w.attr(f, "__defaults__") or ()):
        _value(v, names, w, depth)
    kwd = w.attr(f, "__kwdefaults__")
    if kwd:
        w.mutable()
    for k, v in sorted((kwd or {}).items()):
        out.append(k)
        _value(v, names, w, depth)
    for cell in (f.__closure__ or ()):
        try:
            v = w.attr(cell, "cell_contents")
        except ValueError:
            w.mutable()
            out.append(("empty",))
            continue
        _value(v, names, w, depth)
    g = f.__globals__
    b = f.__builtins__ if isinstance(getattr(f, "__builtins__", None), dict) \
        else builtins.__dict__
    for n in _globals(code):
        v = w.read(g, n)
        if v is not _ABSENT:
            out.append(n)
            _value(v, names, w, depth)
            continue
        # Not a global: a builtin, if it is one; rebound, by value.
        v = w.read(b, n)
        if v is _ABSENT:
            continue
        if v is _BUILTINS.get(n, _ABSENT):
            out.append(("builtin", n))
        else:
            out.append(n)
            _value(v, names, w, depth)


#: func -> (dict probes, attribute probes, fingerprint) of its last full walk.
_probed = weakref.WeakKeyDictionary()


def probes(func):
    """What func's last full walk read (see :func:`fingerprint`), with its
    fingerprint, for :func:`same`; None if it read something mutable or
    never ran."""
    return _probed.get(func) if isinstance(func, types.FunctionType) else None


def same(func, probed):
    """True if fingerprint(func) is still the fingerprint of probed (from
    :func:`probes`): at once while every object that walk read is still
    the very same object, else by a full walk."""
    return _holds(func, probed) or fingerprint(func) == probed[2]


def _holds(func, probed):
    """Every object probed's walk read is still the one it read."""
    for d, k, v in probed[0]:
        if d.get(k, _ABSENT) is not v:
            return False
    for o, a, v in probed[1]:
        if getattr(func if o is None else o, a, _ABSENT) is not v:
            return False
    return True


def fingerprint(func):
    """A hashable fingerprint of everything func's trace can read besides
    its arguments, or None when that cannot be established.

    The full walk runs when something it read may have changed: after one,
    the very objects it read (each global and module attribute looked up,
    each closure cell, default and code object) are kept, and while every
    one of them is still the same object the fingerprint is the same.  A
    walk that read something mutable in place (a list, dict or set) runs
    every time."""
    if not isinstance(func, types.FunctionType):
        return None
    p = _probed.get(func)
    if p is not None and _holds(func, p):
        return p[2]
    w = _Walk(func)
    try:
        _function(func, w, 0)
        t = tuple(w.out)
        hash(t)
    except (_Unknown, TypeError, RecursionError):
        return None
    if w.dicts is not None:
        _probed[func] = (w.dicts, w.attrs, t)
    else:
        _probed.pop(func, None)
    return t
