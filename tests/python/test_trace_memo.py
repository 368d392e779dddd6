"""The client's trace memo (nkid/tracer/deps.py) never hands back a stale
kernel (issue 30, 6): a class attribute the kernel reads (``K.s = 10``,
also through a base class), a keyword of a ``functools.partial`` it calls,
and a builtin it calls that is rebound each give a new trace and the new
result. Before, deps.py fingerprinted classes, functools objects and
builtins by identity, and each of these returned the old number."""

import builtins
import functools

import numpy as np

from nkid import nki
from nkid.tracer import deps
import nkid.nki.language as nl


class Base:
    s = 2.0


class K(Base):
    pass


def by_class(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(a), K.s))
    return out


def _scaled(t, s=1.0):
    return nl.multiply(t, s)


SCALED = functools.partial(_scaled, s=3.0)


def by_partial(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=SCALED(nl.load(a)))
    return out


def by_builtin(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(a), float(abs(-4))))
    return out


X = np.ones((128, 8), np.float32)


def test_class_attribute_along_the_mro(nkid_socket):
    k = nki.baremetal(by_class)
    fp = deps.fingerprint(by_class)
    assert fp is not None
    assert k(X)[0, 0] == 2.0 and k(X)[0, 0] == 2.0
    try:
        K.s = 10.0                      # shadows Base.s
        assert deps.fingerprint(by_class) != fp
        assert k(X)[0, 0] == 10.0
        del K.s
        Base.s = 5.0                    # the base changes
        assert k(X)[0, 0] == 5.0
    finally:
        Base.s = 2.0
        if "s" in K.__dict__:
            del K.s
    assert k(X)[0, 0] == 2.0
    assert deps.fingerprint(by_class) == fp


def test_partial_keyword_changed_in_place(nkid_socket):
    k = nki.baremetal(by_partial)
    assert deps.fingerprint(by_partial) is not None
    assert k(X)[0, 0] == 3.0 and k(X)[0, 0] == 3.0
    try:
        SCALED.keywords["s"] = 7.0
        assert k(X)[0, 0] == 7.0
    finally:
        SCALED.keywords["s"] = 3.0
    assert k(X)[0, 0] == 3.0


def test_builtin_rebound(nkid_socket):
    k = nki.baremetal(by_builtin)
    fp = deps.fingerprint(by_builtin)
    assert fp is not None
    assert k(X)[0, 0] == 4.0 and k(X)[0, 0] == 4.0
    real = builtins.abs
    try:
        builtins.abs = lambda v: 6
        assert deps.fingerprint(by_builtin) != fp
        assert k(X)[0, 0] == 6.0
    finally:
        builtins.abs = real
    assert k(X)[0, 0] == 4.0
    # Unchanged builtins keep the fingerprint (and the memo) as it was.
    assert deps.fingerprint(by_builtin) == fp
