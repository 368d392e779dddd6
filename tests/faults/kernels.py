"""Kernels for make faults, make soak and the fuzz seeds: small, fast on
the cpu backend, with results numpy can check.

``affine(x, y)`` computes ``x * a + y`` with ``a`` baked into the IR: every
distinct ``a`` (or shape) is a distinct kernel, compiled and stored anew."""

import numpy as np

import nkid.nki.language as nl
from nkid.client import kernel_ref, to_wire
from nkid.tracer import trace

P = 128


def make_affine(a):
    def affine(x, y):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        rows, cols = x.shape
        for r in nl.affine_range(rows // P):
            part = slice(r * P, (r + 1) * P)
            xt = nl.load(x[part, 0:cols])
            yt = nl.load(y[part, 0:cols])
            nl.store(out[part, 0:cols], value=nl.add(nl.multiply(xt, a), yt))
        return out
    return affine


class Case:
    """One kernel with its inputs and the expected output."""

    def __init__(self, a, rows=128, cols=64, seed=0, options=""):
        self.a = float(a)
        rng = np.random.default_rng(seed)
        self.x = rng.standard_normal((rows, cols), dtype=np.float32)
        self.y = rng.standard_normal((rows, cols), dtype=np.float32)
        self.traced = trace(make_affine(self.a), (self.x, self.y), name="affine")
        self.options = options
        self.ref = kernel_ref(self.traced, options=options)
        self.inputs = [to_wire("x", self.x), to_wire("y", self.y)]
        self.want = self.x * np.float32(self.a) + self.y

    def check(self, got):
        """True when got (numpy) is the kernel's result."""
        return got.shape == self.want.shape and bool(
            np.allclose(got, self.want, rtol=1e-5, atol=1e-5))
