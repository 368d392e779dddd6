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
    """One kernel (``x * a + y`` on [rows, cols]) with its inputs and the
    expected output; traced on first use of ``ref`` (a check of a stored
    kernel by its key needs no trace)."""

    def __init__(self, a, rows=128, cols=64, seed=0, options=""):
        self.a = float(a)
        self.rows, self.cols, self.seed = rows, cols, seed
        rng = np.random.default_rng(seed)
        self.x = rng.standard_normal((rows, cols), dtype=np.float32)
        self.y = rng.standard_normal((rows, cols), dtype=np.float32)
        self.options = options
        self.inputs = [to_wire("x", self.x), to_wire("y", self.y)]
        self.want = self.x * np.float32(self.a) + self.y
        self._traced = None

    @property
    def traced(self):
        if self._traced is None:
            self._traced = trace(make_affine(self.a), (self.x, self.y), name="affine")
        return self._traced

    @property
    def ref(self):
        return kernel_ref(self.traced, options=self.options)

    def check(self, got):
        """True when got (numpy) is the kernel's result."""
        return got.shape == self.want.shape and bool(
            np.allclose(got, self.want, rtol=1e-5, atol=1e-5))


def make_spin(n):
    """A kernel that computes for a while on small inputs: n passes of exp
    over one [128, 512] tile (about 0.1 ms each on the cpu backend)."""
    def spin(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(n):
            xt = nl.load(x[0:P, 0:512])
            nl.store(out[0:P, 0:512], value=nl.exp(xt))
        return out
    return spin


class Spin:
    """A kernel that runs for about ``seconds`` (measured by make faults)."""

    def __init__(self, n):
        self.x = np.zeros((P, 512), dtype=np.float32)
        self.traced = trace(make_spin(n), (self.x,), name="spin")
        self.ref = kernel_ref(self.traced)
        self.inputs = [to_wire("x", self.x)]
