"""The demo's kernels: each runs through nkid (nki.jit on numpy arguments,
then nki.simulate_kernel) and is compared with numpy."""

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))

from nkid import nki  # noqa: E402
from vector_add import vector_add  # noqa: E402
from matmul import matmul  # noqa: E402


def show(name, got, want, seconds, atol):
    err = float(np.max(np.abs(got.astype(np.float32) - want.astype(np.float32))))
    ok = np.allclose(got.astype(np.float32), want.astype(np.float32), atol=atol, rtol=1e-3)
    print("  %-34s %-18s max|err| %.2e  %7.1f ms  %s" % (
        name, "x".join(map(str, got.shape)) + " " + str(got.dtype), err,
        seconds * 1e3, "match" if ok else "DIFFERS"))
    return ok


def timed(fn, *args):
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0


def main():
    rng = np.random.default_rng(2026)
    ok = True

    x = rng.standard_normal((1024, 2048), dtype=np.float32)
    y = rng.standard_normal((1024, 2048), dtype=np.float32)
    got, s = timed(vector_add, x, y)
    ok &= show("vector_add (baremetal)", got, x + y, s, 1e-6)
    got, s = timed(vector_add, x, y)
    ok &= show("vector_add (again: traced once)", got, x + y, s, 1e-6)
    got, s = timed(nki.simulate_kernel, vector_add, x, y)
    ok &= show("vector_add (simulate_kernel)", got, x + y, s, 1e-6)

    a = rng.standard_normal((512, 1024), dtype=np.float32)
    b = rng.standard_normal((1024, 1024), dtype=np.float32)
    a_t = np.ascontiguousarray(a.T)
    got, s = timed(matmul, a_t, b)
    ok &= show("matmul 512x1024x1024 (baremetal)", got, a @ b, s, 1e-3)
    got, s = timed(nki.simulate_kernel, matmul, a_t, b)
    ok &= show("matmul (simulate_kernel)", got, a @ b, s, 1e-3)

    print("all kernels match numpy" if ok else "SOME KERNELS DIFFER")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
