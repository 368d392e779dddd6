"""Helpers of the nki.isa tests: seeded data, and kernels around a single
instruction whose result or refusal a test checks."""

import numpy as np
import pytest

from nkid import nki
import nkid.nki.language as nl


def rng(seed=0):
    """numpy's default generator, seeded: the same data on every run."""
    return np.random.default_rng(seed)


def out_kernel(fill, shape=None, dtype=None, **jit):
    """An nki.jit kernel of one tensor x whose output in HBM, of shape(x)
    and dtype (x's by default), is written by fill(x, out); jit: nki.jit's
    keywords (platform_target=...)."""
    def k(x):
        out = nl.ndarray(x.shape if shape is None else shape(x),
                         dtype=x.dtype if dtype is None else dtype, buffer=nl.shared_hbm)
        fill(x, out)
        return out
    return nki.jit(k, **jit)


def tile_kernel(compute, shape=None, dtype=None, **jit):
    """An out_kernel that stores compute(t) of the tile t = nl.load(x)."""
    return out_kernel(lambda x, out: nl.store(out, compute(nl.load(x))), shape, dtype, **jit)


def row_reduced(x, compute, dtype=None):
    """Inside a kernel of x: the tile compute(r) returns, r being the [P, 1]
    float32 tile its instruction writes with reduce_res=r, stored into new
    HBM tensors of x's shape (dtype, x's by default) and of [P, 1] float32;
    those two."""
    y = nl.ndarray(x.shape, dtype=x.dtype if dtype is None else dtype, buffer=nl.shared_hbm)
    m = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.shared_hbm)
    r = nl.ndarray((x.shape[0], 1), dtype=nl.float32)
    nl.store(y, compute(r))
    nl.store(m, r)
    return y, m


def assert_refused(kernel, error, match, *args):
    """kernel(*args) raises error, its message matching the regex match."""
    with pytest.raises(error, match=match):
        kernel(*args)
