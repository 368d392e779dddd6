"""Affine index arithmetic for the tracer.

NKI kernels index tensors with ``nl.arange``/``nl.mgrid`` index tiles, loop
variables, ``nl.program_id`` and integers.  Every such value is traced as an
:class:`IndexExpr`: an affine expression (:class:`Aff`) over

* access axes (``int`` keys ``0, 1, ...``: positions in ``IndexExpr.shape``),
* loop variables (key ``("l", var)``),
* SPMD program ids (key ``("p", axis)``) and
* index functions (key ``("f", i)``): ``(i + 2) % 2`` or ``i // 4`` of loop
  variables and program ids, kept by the kernel builder,

together with a numpy-style broadcast ``shape``.  Scalars (loop variables,
program ids, Python ints) have the shape ``()``.  Comparisons build a
:class:`Predicate` (a conjunction of ``expr >= 0`` constraints), which is what
``mask=`` takes.  Using either in Python control flow raises NKI's
``err_control_flow_condition_depending_on_arange``.
"""

import math
import numbers
import operator
from functools import partialmethod

from ..errors import NKISyntaxError
from .active import current
from .loc import loc_suffix

__all__ = ["Aff", "IndexExpr", "Predicate", "MGrid", "broadcast_shapes",
           "as_index", "loop_var", "program_var", "arange", "mgrid"]


class Aff:
    """``c + sum(coef * key)`` with integer coefficients."""

    __slots__ = ("c", "t")

    def __init__(self, c=0, t=None):
        self.c = c
        self.t = t if t is not None else {}

    @staticmethod
    def axis(j, coef=1, c=0):
        return Aff(c, {j: coef} if coef else {})

    def copy(self):
        return Aff(self.c, dict(self.t))

    def is_const(self):
        return not self.t

    def axes(self):
        return [k for k in self.t if isinstance(k, int)]

    def _add_term(self, k, v):
        """Add ``v`` to the coefficient of ``k`` (in place), dropping a 0."""
        n = self.t.get(k, 0) + v
        if n:
            self.t[k] = n
        else:
            self.t.pop(k, None)

    def __add__(self, o):
        r = Aff(self.c + o.c, dict(self.t))
        for k, v in o.t.items():
            r._add_term(k, v)
        return r

    def scale(self, k):
        if k == 0:
            return Aff(0)
        return Aff(self.c * k, {key: v * k for key, v in self.t.items()})

    def __neg__(self):
        return self.scale(-1)

    def __sub__(self, o):
        return self + o.scale(-1)

    def shift(self, off):
        """Renumber axes ``j -> j + off`` (numpy right-alignment)."""
        if not off:
            return self
        return Aff(self.c, {(k + off if isinstance(k, int) else k): v
                            for k, v in self.t.items()})

    def subst(self, m):
        """Replace axis ``j`` by the affine ``m[j]`` (``None`` means 0)."""
        r = Aff(self.c)
        for k, v in self.t.items():
            if isinstance(k, int):
                e = m[k]
                if e is not None:
                    r = r + e.scale(v)
            else:
                r._add_term(k, v)
        return r

    def __eq__(self, o):
        return isinstance(o, Aff) and self.c == o.c and self.t == o.t

    __hash__ = None

    def __repr__(self):
        parts = [str(self.c)] if self.c or not self.t else []
        for k, v in self.t.items():
            name = ("ax%d" % k if isinstance(k, int)
                    else {"l": "loop%d", "p": "pid%d", "f": "fn%d"}[k[0]] % k[1])
            parts.append(name if v == 1 else "%d*%s" % (v, name))
        return " + ".join(parts)


def broadcast_shapes(*shapes):
    """numpy's broadcasting rule over index shapes."""
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        off = rank - len(s)
        for i, n in enumerate(s):
            cur = out[off + i]
            if cur == 1:
                out[off + i] = n
            elif n != 1 and n != cur:
                raise IndexError(
                    "shape mismatch: index shapes %s cannot be broadcast together"
                    % " ".join(str(tuple(x)) for x in shapes))
    return tuple(out)


def _control_flow_error():
    return NKISyntaxError(
        "Control-flow depending on `nl.arange` or `nl.mgrid` is not supported."
        " (err_control_flow_condition_depending_on_arange)" + loc_suffix())


def _not_affine(what):
    return NKISyntaxError(
        "index expression is not affine: %s; NKI indices must be affine in"
        " loop variables, program ids and nl.arange/nl.mgrid%s"
        % (what, loc_suffix()))


def _const_int(o):
    """o as a Python int if it is a constant index, else None."""
    if isinstance(o, numbers.Integral):
        return o
    oi = as_index(o)
    if oi is None or not oi.is_const():
        return None
    return oi.aff.c


def as_index(x):
    """An IndexExpr for ``x`` (int or IndexExpr), or None."""
    if isinstance(x, IndexExpr):
        return x
    if isinstance(x, (bool,)):
        return IndexExpr((), Aff(int(x)))
    if isinstance(x, numbers.Integral):
        return IndexExpr((), Aff(int(x)))
    return None


class IndexExpr:
    """An affine index value with a numpy broadcast shape."""

    __slots__ = ("shape", "aff")
    __array_priority__ = 1000

    def __init__(self, shape, aff):
        self.shape = tuple(shape)
        self.aff = aff

    # -- inspection
    @property
    def ndim(self):
        return len(self.shape)

    def is_const(self):
        return self.aff.is_const()

    def const_value(self):
        if not self.aff.is_const():
            raise _not_affine("a constant was expected")
        return self.aff.c

    def __repr__(self):
        return "IndexExpr(shape=%s, %r)" % (self.shape, self.aff)

    # -- arithmetic
    def _binary(self, o, sign):
        o = as_index(o)
        if o is None:
            return NotImplemented
        shape = broadcast_shapes(self.shape, o.shape)
        a = self.aff.shift(len(shape) - len(self.shape))
        b = o.aff.shift(len(shape) - len(o.shape))
        return IndexExpr(shape, a + b.scale(sign))

    def __add__(self, o):
        return self._binary(o, 1)

    __radd__ = __add__

    def __sub__(self, o):
        return self._binary(o, -1)

    def __rsub__(self, o):
        o = as_index(o)
        if o is None:
            return NotImplemented
        return o._binary(self, -1)

    def __neg__(self):
        return IndexExpr(self.shape, -self.aff)

    def __pos__(self):
        return self

    def __mul__(self, o):
        oi = as_index(o)
        if oi is None:
            if isinstance(o, float) and o.is_integer():
                oi = as_index(int(o))
            else:
                return NotImplemented
        if not oi.is_const() and not self.is_const():
            raise _not_affine("product of two non-constant indices")
        if oi.is_const():
            k, e = oi.aff.c, self
        else:
            k, e = self.aff.c, oi
        shape = broadcast_shapes(self.shape, oi.shape)
        return IndexExpr(shape, e.aff.shift(len(shape) - len(e.shape)).scale(k))

    __rmul__ = __mul__

    def __floordiv__(self, o):
        o = _const_int(o)
        if o is None:
            return NotImplemented
        if self.is_const():
            return IndexExpr(self.shape, Aff(self.aff.c // o))
        if all(v % o == 0 for v in self.aff.t.values()) and self.aff.c % o == 0:
            return IndexExpr(self.shape, Aff(self.aff.c // o,
                                             {k: v // o for k, v in self.aff.t.items()}))
        return self._index_fn("floordiv", o, "floor division")

    def __mod__(self, o):
        o = _const_int(o)
        if o is None:
            return NotImplemented
        if self.is_const():
            return IndexExpr(self.shape, Aff(self.aff.c % o))
        return self._index_fn("mod", o, "modulo")

    def _index_fn(self, kind, divisor, what):
        """``self % divisor`` or ``self // divisor`` for a scalar index of
        loop variables and program ids (``(i + 2) % 2``): a new symbolic
        term, an NKIR index function, with the range the planner derives."""
        if divisor <= 0:
            raise _not_affine("%s by %d (the divisor must be a positive constant)"
                              % (what, divisor))
        if self.shape or any(isinstance(k, int) or k[0] == "f" for k in self.aff.t):
            raise _not_affine("%s of an nl.arange/nl.mgrid index (only a loop"
                              " variable or program id expression may be divided)" % what)
        b = current()
        if b is None:
            raise _not_affine("%s of a loop index outside a kernel trace" % what)
        return IndexExpr((), Aff(0, {("f", b.index_fn(kind, self.aff, int(divisor))): 1}))

    def __rfloordiv__(self, o):
        raise _not_affine("division by an index")

    __rmod__ = __rfloordiv__

    def __truediv__(self, o):
        raise _not_affine("true division of an index (use //)")

    __rtruediv__ = __truediv__

    # -- comparisons build predicates (mask=...)
    def _cmp(self, o, op):
        if isinstance(o, float) and not o.is_integer():
            # integer-valued left side: round the bound the right way
            if op in ("lt", "ge"):
                o = math.ceil(o)
            else:
                o = math.floor(o)
        oi = as_index(o)
        if oi is None:
            if isinstance(o, float):
                oi = as_index(int(o))
            else:
                return NotImplemented
        d = self - oi                       # self - o
        if op == "lt":                      # o - self - 1 >= 0
            return Predicate([(-d) + (-1)])
        if op == "le":
            return Predicate([-d])
        if op == "gt":
            return Predicate([d + (-1)])
        if op == "ge":
            return Predicate([d])
        if op == "eq":
            return Predicate([d, -d])
        raise _not_affine("'!=' in a mask")

    __lt__ = partialmethod(_cmp, op="lt")
    __le__ = partialmethod(_cmp, op="le")
    __gt__ = partialmethod(_cmp, op="gt")
    __ge__ = partialmethod(_cmp, op="ge")
    __eq__ = partialmethod(_cmp, op="eq")
    __ne__ = partialmethod(_cmp, op="ne")

    __hash__ = object.__hash__

    def __bool__(self):
        if self.is_const() and not self.shape:
            return bool(self.aff.c)
        raise _control_flow_error()

    def __index__(self):
        if self.is_const() and not self.shape:
            return self.aff.c
        raise _control_flow_error()

    def __int__(self):
        return self.__index__()

    def __iter__(self):
        raise TypeError("an index expression is not iterable")

    # -- reshaping index tiles: arange(n)[:, None]
    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        if any(k is Ellipsis for k in key):
            i = key.index(Ellipsis)
            nfill = len(self.shape) - (len(key) - 1 - key.count(None))
            key = key[:i] + (slice(None),) * nfill + key[i + 1:]
        shape, m, old = [], {}, 0
        for k in key:
            if k is None:
                shape.append(1)
            elif isinstance(k, slice) and k == slice(None):
                if old >= len(self.shape):
                    raise IndexError("too many indices for an index expression")
                m[old] = Aff.axis(len(shape))
                shape.append(self.shape[old])
                old += 1
            else:
                raise IndexError("an index expression supports only ':' and None"
                                 " in subscripts")
        if old != len(self.shape):
            raise IndexError("index expression of rank %d indexed with %d axes"
                             % (len(self.shape), old))
        return IndexExpr(shape, self.aff.subst(m))


class Predicate:
    """A conjunction of ``expr >= 0`` constraints: an NKI mask."""

    __slots__ = ("terms",)

    def __init__(self, terms):
        self.terms = list(terms)

    @property
    def shape(self):
        return broadcast_shapes(*[t.shape for t in self.terms])

    def __and__(self, o):
        if isinstance(o, Predicate):
            return Predicate(self.terms + o.terms)
        if o is True:
            return self
        return NotImplemented

    __rand__ = __and__

    def __or__(self, o):
        raise _not_affine("'|' in a mask (masks are conjunctions: use '&')")

    __ror__ = __or__

    def __bool__(self):
        if any(t.shape or any(isinstance(k, int) for k in t.aff.t) for t in self.terms):
            raise _control_flow_error()
        raise NKISyntaxError(
            "an if on loop indices is traced in kernel and sub-kernel functions"
            " (nki.jit, nki.trace) only; this condition is in a function nkid does not"
            " rewrite: decorate it with nki.trace or nki.jit(mode='trace')" + loc_suffix())

    def __repr__(self):
        return "Predicate(%s)" % " & ".join("(%r >= 0)" % t.aff for t in self.terms)


def loop_var(var):
    return IndexExpr((), Aff(0, {("l", var): 1}))


def program_var(axis):
    return IndexExpr((), Aff(0, {("p", axis): 1}))


def _range_len(start, stop, step):
    return len(range(start, stop, step))


def range_args(args, name):
    """``([start,] stop[, step])`` as Python's range reads them: the triple
    (start, stop, step), or a TypeError naming ``name``."""
    if len(args) == 1:
        return 0, args[0], 1
    if len(args) == 2:
        return args[0], args[1], 1
    if len(args) == 3:
        return tuple(args)
    raise TypeError("%s expects 1 to 3 arguments" % name)


def arange(*args):
    """``nl.arange([start,] stop[, step])``: a 1-D index tile."""
    start, stop, step = (int(operator_index(v))
                         for v in range_args(args, "arange"))
    n = _range_len(start, stop, step)
    if n <= 0:
        raise ValueError("nl.arange(%d, %d, %d) is empty" % (start, stop, step))
    return IndexExpr((n,), Aff.axis(0, step if n > 1 else 0, start))


def operator_index(v):
    i = as_index(v)
    if i is None:
        if isinstance(v, float) and v.is_integer():
            return int(v)
        raise TypeError("expected an integer, got %r" % (v,))
    return i.__index__()


class MGrid(tuple):
    """The index tiles of ``nl.mgrid[...]``: unpack it or use .p/.x/.y/.z."""

    p = property(operator.itemgetter(0))
    x = property(operator.itemgetter(1))
    y = property(operator.itemgetter(2))
    z = property(operator.itemgetter(3))


class _MGridMaker:
    """``nl.mgrid[0:128, 0:512]``: one index tile per slice, each varying
    along its own axis (shapes [128, 1] and [1, 512])."""

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        rank = len(key)
        out = []
        for d, s in enumerate(key):
            if not isinstance(s, slice):
                raise TypeError("nl.mgrid takes slices, e.g. nl.mgrid[0:128, 0:512]")
            start = 0 if s.start is None else operator_index(s.start)
            stop = operator_index(s.stop)
            step = 1 if s.step is None else operator_index(s.step)
            n = _range_len(start, stop, step)
            if n <= 0:
                raise ValueError("empty nl.mgrid range %r" % (s,))
            shape = tuple(n if i == d else 1 for i in range(rank))
            out.append(IndexExpr(shape, Aff.axis(d, step if n > 1 else 0, start)))
        return MGrid(out)

    def __repr__(self):
        return "nl.mgrid"


mgrid = _MGridMaker()
