"""Kernels the benchmark runs (make bench): small on purpose, so that what
is measured is nkid's path, not the executor."""

from nkid import nki
import nkid.nki.language as nl


@nki.jit
def tiny_add(x, y):
    """x + y for one small tile."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(x), nl.load(y)))
    return out


@nki.jit
def short_mix(x):
    """A short job (about a millisecond on the cpu backend): exp, square
    and a row sum over a [128, 512] tile, 4 times."""
    out = nl.ndarray((128, 1), dtype=x.dtype, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 1), dtype=nl.float32)
    for i in nl.sequential_range(4):
        t = nl.load(x)
        acc[...] = nl.add(acc, nl.sum(nl.square(nl.exp(t)), axis=1, keepdims=True))
    nl.store(out, value=acc)
    return out


@nki.jit
def copy_tile(x):
    """x copied as one [128, W] tile (the small sizes of the tensor curve)."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(x))
    return out
