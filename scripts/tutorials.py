"""Run NKI's tutorial kernels through nkid, from a checkout of nki-samples.

    .venv/bin/python scripts/tutorials.py [--simulate] /path/to/nki-samples [NAME ...]

Each tutorial module is copied into a scratch directory with only its
`neuronxcc.nki` imports renamed to `nkid.nki`, then checked against numpy
the way the tutorial checks itself: modules with a numpy check in their
`__main__` run as scripts; the matrix multiplication kernels (whose own
check needs torch) are called with bf16 numpy inputs and compared with
numpy at the tutorial's tolerance. With --simulate every kernel is called
through nki.simulate_kernel(kernel[grid], *args) instead. Needs a running nkid ($NKID_SOCKET).
The tutorials are not part of this repository; point this at a checkout.
"""

import importlib
import os
import re
import runpy
import shutil
import sys
import tempfile
import time

import numpy as np

TUT = "src/nki_samples/tutorials"

# name -> (directory, module, how to check)
TUTORIALS = {
    "tensor_addition": ("tensor_addition", "tensor_addition_nki_kernels", "main"),
    "tensor_addition_spmd": ("tensor_addition", "spmd_tensor_addition_nki_kernels", "main"),
    "tensor_addition_nc2": ("tensor_addition", "spmd_multiple_nc_tensor_addition_nki_kernels", "main"),
    "transpose2d": ("transpose2d", "transpose2d_nki_kernels", "main"),
    "average_pool2d": ("average_pool2d", "average_pool2d_nki_kernels", "main"),
    "matmul": ("matrix_multiplication", "matrix_multiplication_nki_kernels", "matmul"),
}


def rename_imports(text):
    """Rename neuronxcc.nki imports to nkid.nki, and nothing else."""
    return re.sub(r"\bneuronxcc\.nki\b", "nkid.nki", text)


def stage(checkout, subdir, scratch):
    src = os.path.join(checkout, TUT, subdir)
    dst = os.path.join(scratch, subdir)
    if not os.path.isdir(dst):
        os.makedirs(dst)
        for f in os.listdir(src):
            if f.endswith(".py"):
                with open(os.path.join(src, f)) as fh:
                    text = rename_imports(fh.read())
                with open(os.path.join(dst, f), "w") as fh:
                    fh.write(text)
    return dst


def check_main(path):
    runpy.run_path(path, run_name="__main__")


def simulate_checks(name, mod):
    """The tutorial's own check, each kernel called by simulate_kernel."""
    from nkid import nki
    import nkid.nki.language as nl
    sim = nki.simulate_kernel
    rng = np.random.default_rng(0)
    if name.startswith("tensor_addition"):
        shape = (512, 2048) if name.endswith("nc2") else (256, 1024)
        a = rng.random(shape).astype(np.float16)
        b = rng.random(shape).astype(np.float16)
        k = mod.nki_tensor_add_kernel_
        gx, gy = shape[0] // 128, shape[1] // 512
        if name.endswith("nc2"):
            out = sim(k[nl.spmd_dim(gx // 2, nl.nc(2)), gy], a, b)
        else:
            out = sim(k[gx, gy], a, b)
        assert np.allclose(a + b, out, atol=1e-4, rtol=1e-2)
    elif name == "transpose2d":
        P, X, Y = 5, 3, 4
        a = np.arange(P * X * Y, dtype=np.int8).reshape((P, X * Y))
        out = sim(mod.tensor_transpose2D_kernel_, a, (X, Y))
        want = np.transpose(a.reshape(P, X, Y), (0, 2, 1)).reshape(P, X * Y)
        assert np.allclose(want, out)
    elif name == "average_pool2d":
        x = np.arange(2 * 6 * 6, dtype=np.float16).reshape(2, 6, 6)
        out = sim(mod.tensor_avgpool_kernel, x, 2)
        assert (out == mod.np_average_pool_2D(x, 2)).all()
    else:
        raise KeyError(name)


def check_matmul(mod, call):
    import ml_dtypes
    bf16 = ml_dtypes.bfloat16
    rng = np.random.default_rng(0)
    lhs = rng.random((64, 128), dtype=np.float32).astype(bf16)
    rhs = rng.random((128, 512), dtype=np.float32).astype(bf16)
    want = (lhs.astype(np.float32) @ rhs.astype(np.float32)).astype(bf16)
    got = call(mod.nki_matmul_basic_, np.ascontiguousarray(lhs.T), rhs)
    assert np.allclose(want.astype(np.float32), got.astype(np.float32),
                       atol=1e-4, rtol=1e-2), "nki_matmul_basic_ differs"
    print("  nki_matmul_basic_: match")
    lhs = rng.random((4096, 1024), dtype=np.float32).astype(bf16)
    rhs = rng.random((1024, 2048), dtype=np.float32).astype(bf16)
    want = (lhs.astype(np.float32) @ rhs.astype(np.float32)).astype(bf16)
    lhsT = np.ascontiguousarray(lhs.T)
    for name in ("nki_matmul_tiled_", "nki_matmul_hoist_load_",
                 "nki_matmul_block_free_dimension_",
                 "nki_matmul_fully_optimized_"):
        t0 = time.perf_counter()
        got = call(getattr(mod, name), lhsT, rhs)
        ok = np.allclose(want.astype(np.float32), got.astype(np.float32),
                         atol=1e-4, rtol=1e-2)
        print("  %s: %s (%.0f ms)" % (name, "match" if ok else "DIFFER",
                                      1e3 * (time.perf_counter() - t0)))
        assert ok, name + " differs"


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    simulate = "--simulate" in argv
    argv = [a for a in argv if a != "--simulate"]
    checkout, names = argv[1], argv[2:] or list(TUTORIALS)
    scratch = tempfile.mkdtemp(prefix="nkid-tutorials.")
    failed = []
    try:
        for name in names:
            subdir, module, how = TUTORIALS[name]
            d = stage(checkout, subdir, scratch)
            sys.path.insert(0, d)
            print("%s (%s):" % (name, module))
            try:
                mod = importlib.import_module(module)
                if how == "matmul":
                    if simulate:
                        from nkid import nki
                        check_matmul(mod, nki.simulate_kernel)
                    else:
                        check_matmul(mod, lambda k, *a: k(*a))
                elif simulate:
                    simulate_checks(name, mod)
                else:
                    check_main(os.path.join(d, module + ".py"))
                print("  PASS")
            except Exception as e:  # report every tutorial, then fail
                print("  FAIL: %s: %s" % (type(e).__name__, e))
                failed.append(name)
            finally:
                sys.path.remove(d)
    finally:
        shutil.rmtree(scratch)
    print("tutorials: %d passed, %d failed%s" % (
        len(names) - len(failed), len(failed),
        (": " + " ".join(failed)) if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
