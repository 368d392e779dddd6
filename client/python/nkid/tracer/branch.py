"""``if`` statements on loop indices: NKI kernels may branch on a
condition of loop variables and program ids (``if i * 128 < n:``), whose
truth changes from iteration to iteration of a loop traced once.

A kernel function is traced in a rewritten form: every ``if`` statement

.. code-block:: python

    if test:
        A
    else:
        B

becomes

.. code-block:: python

    _c = __nki_cond__(test)
    if __nki_then__(_c):
        try:
            A
        finally:
            __nki_end__(_c, 1)
    if __nki_else__(_c):
        try:
            B
        finally:
            __nki_end__(_c, 2)

``a and b`` becomes ``__nki_and__(lambda: a, lambda: b)``, which joins
conditions on loop indices into one predicate (``a or b`` likewise, where
Python decides all but the last operand).

A test that Python can decide (a bool, an int, a constant index) runs as
Python; one that depends on loop variables or program ids (a
:class:`~nkid.tracer.affine.Predicate` without ``nl.arange`` axes) traces
both sides into one NKIR ``OP_IF``, which the executor decides on each
execution.  The rewritten function keeps the file name and line numbers
of the original, so NKI's errors still name the kernel's lines.  Functions
whose source cannot be read run unchanged.
"""

import ast
import functools
import inspect
import textwrap
import types

from ..errors import NKISyntaxError
from .affine import Aff, IndexExpr, Predicate
from .builder import current, loc_suffix

__all__ = ["rewrite", "cond", "then", "orelse", "end"]


class _Dynamic:
    """A test decided at run time: its conditions and the OP_IF."""

    __slots__ = ("conds", "op")

    def __init__(self, conds):
        self.conds = conds
        self.op = None


def _arange_error():
    return NKISyntaxError("Control-flow depending on `nl.arange` or `nl.mgrid` is not supported."
                          " (err_control_flow_condition_depending_on_arange)" + loc_suffix())


def cond(test):
    """The test of an ``if``: a Python bool, or a _Dynamic for a predicate
    of loop variables and program ids."""
    if isinstance(test, Predicate):
        conds = []
        for t in test.terms:
            if t.shape or any(isinstance(k, int) for k in t.aff.t):
                raise _arange_error()
            conds.append(t.aff)
        if all(a.is_const() for a in conds):
            return all(a.c >= 0 for a in conds)
        return _Dynamic(conds)
    if isinstance(test, IndexExpr) and test.is_const() and not test.shape:
        return bool(test.aff.c)
    return bool(test)           # IndexExpr and tiles raise NKI's errors


def then(c):
    if isinstance(c, _Dynamic):
        b = current()
        if b is None:
            raise NKISyntaxError("an if on loop indices outside a kernel trace" + loc_suffix())
        c.op = b.begin_branch(c.conds)
        return True
    return c


def orelse(c):
    if isinstance(c, _Dynamic):
        b = current()
        if b is None or c.op is None:
            return False
        b.begin_else(c.op)
        return True
    return not c


def end(c, side):
    if isinstance(c, _Dynamic):
        b = current()
        if b is not None and c.op is not None:
            b.end_branch(c.op, side)


def and_(*operands):
    """``a and b and ...`` (each operand a thunk, evaluated in turn): a
    Python-decidable operand short-circuits as in Python; conditions on
    loop indices and program ids, and masks on nl.arange, are joined into
    one predicate (``&``), which an ``if`` then traces into an OP_IF (a
    mask, as NKI's own examples write ``mask=(ix < n and iy < m)``)."""
    preds, v = [], True
    for f in operands:
        v = f()
        if isinstance(v, Predicate):
            if any(t.shape or any(isinstance(k, int) for k in t.aff.t) for t in v.terms):
                preds.append(v)         # a mask: mask=(ix < n and iy < m)
                continue
            c = cond(v)
            if isinstance(c, _Dynamic):
                preds.append(v)
                continue
            v = c
        if not v:
            return v
    if not preds:
        return v
    p = preds[0]
    for q in preds[1:]:
        p = p & q
    return p


def or_(*operands):
    """``a or b or ...``: Python-decidable operands as in Python; the last
    operand may be a condition on loop indices (``False or i < n``), an
    earlier one may not (conditions are conjunctions)."""
    for f in operands[:-1]:
        v = f()
        if isinstance(v, Predicate):
            c = cond(v)
            if isinstance(c, _Dynamic):
                raise NKISyntaxError(
                    "`or` of conditions on loop indices is not supported: NKI conditions"
                    " are conjunctions; use nested ifs or if/elif" + loc_suffix())
            v = c
        if v:
            return v
    return operands[-1]()


_HELPERS = {"__nki_cond__": cond, "__nki_then__": then, "__nki_else__": orelse,
            "__nki_end__": end, "__nki_and__": and_, "__nki_or__": or_}


class _Rewrite(ast.NodeTransformer):
    def __init__(self):
        self.n = 0

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        if any(isinstance(n, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await))
               for n in ast.walk(node)):
            return node
        noargs = ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[],
                               defaults=[])
        helper = "__nki_and__" if isinstance(node.op, ast.And) else "__nki_or__"
        out = ast.Call(func=ast.Name(helper, ast.Load()),
                       args=[ast.Lambda(args=noargs, body=v) for v in node.values],
                       keywords=[])
        ast.copy_location(out, node)
        ast.fix_missing_locations(out)
        return out

    def visit_If(self, node):
        self.generic_visit(node)
        self.n += 1
        name = "__nki_c%d__" % self.n

        def call(fn, *args):
            return ast.Call(func=ast.Name(fn, ast.Load()), args=list(args), keywords=[])

        def guarded(test_fn, body, side):
            return ast.If(
                test=call(test_fn, ast.Name(name, ast.Load())),
                body=[ast.Try(body=body or [ast.Pass()], handlers=[], orelse=[],
                              finalbody=[ast.Expr(call("__nki_end__", ast.Name(name, ast.Load()),
                                                       ast.Constant(side)))])],
                orelse=[])
        out = [ast.Assign(targets=[ast.Name(name, ast.Store())],
                          value=call("__nki_cond__", node.test)),
               guarded("__nki_then__", node.body, 1)]
        if node.orelse:
            out.append(guarded("__nki_else__", node.orelse, 2))
        else:
            out.append(guarded("__nki_else__", [], 2))
        for s in out:
            ast.copy_location(s, node)
            ast.fix_missing_locations(s)
        return out


_cache = {}
_FUTURE_FLAGS = 0
for _f in __import__("__future__").all_feature_names:
    _FUTURE_FLAGS |= getattr(__import__("__future__"), _f).compiler_flag


def rewrite(func):
    """func with its ``if`` statements rewritten (see the module), made
    once per function object; func itself if it has none or its source
    cannot be read."""
    if not isinstance(func, types.FunctionType):
        return func
    key = (func.__code__, func.__closure__ and tuple(id(c) for c in func.__closure__))
    hit = _cache.get(func)
    if hit is not None and hit[0] == key:
        return hit[1]
    new = _rewrite(func)
    try:
        _cache[func] = (key, new)
    except TypeError:
        pass
    return new


def _rewrite(func):
    try:
        lines, first = inspect.getsourcelines(func)
    except (OSError, TypeError):
        return func
    src = textwrap.dedent("".join(lines))
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return func
    fdef = tree.body[0] if tree.body else None
    if not isinstance(fdef, (ast.FunctionDef, ast.AsyncFunctionDef)) or \
            not any(isinstance(n, (ast.If, ast.BoolOp)) for n in ast.walk(fdef)):
        return func
    fdef.decorator_list = []
    # annotations were evaluated once, with the original def: not again
    fdef.returns = None
    a = fdef.args
    for arg in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg]:
        if arg is not None:
            arg.annotation = None
    # so were the defaults (set again below): module-level code looks
    # names up in the globals without _Scope.__missing__
    a.defaults = []
    a.kw_defaults = [None] * len(a.kw_defaults)
    t = _Rewrite()
    t.visit(fdef)
    ast.increment_lineno(tree, first - 1)
    free = func.__code__.co_freevars
    if free:
        # rebuild the closure: a factory taking the free variables
        factory = ast.FunctionDef(
            name="__nki_factory__",
            args=ast.arguments(posonlyargs=[], args=[ast.arg(v) for v in free],
                               kwonlyargs=[], kw_defaults=[], defaults=[]),
            body=[fdef, ast.Return(ast.Name(fdef.name, ast.Load()))], decorator_list=[])
        ast.copy_location(factory, fdef)
        tree.body = [factory]
    ast.fix_missing_locations(tree)
    try:
        code = compile(tree, func.__code__.co_filename, "exec",
                       flags=func.__code__.co_flags & _FUTURE_FLAGS, dont_inherit=True)
    except (SyntaxError, ValueError):
        return func
    ns = {}
    exec(code, _Scope(func.__globals__), ns)
    if free:
        new = ns["__nki_factory__"](*[c.cell_contents for c in func.__closure__])
    else:
        new = ns[fdef.name]
    new.__defaults__ = func.__defaults__
    new.__kwdefaults__ = func.__kwdefaults__
    functools.update_wrapper(new, func)
    return new


class _Scope(dict):
    """The kernel's module globals seen live, with the rewrite's helpers."""

    def __init__(self, g):
        super().__init__(_HELPERS)
        self._g = g

    def __missing__(self, key):
        return self._g[key]
