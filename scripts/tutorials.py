"""Run NKI's tutorial kernels through nkid, from a checkout of nki-samples.

    .venv/bin/python scripts/tutorials.py [--simulate] /path/to/nki-samples [NAME ...]

Each tutorial module is copied into a scratch directory with only its
`neuronxcc.nki` imports renamed to `nkid.nki`, then checked against numpy
the way the tutorial checks itself, at its tolerance: modules with a numpy
check in their `__main__` run as scripts; rmsnorm, softmax, layernorm and
the matrix multiplication kernels (whose own checks need torch) are called
with numpy inputs and compared with the numpy form of their torch check;
attention v1 and v2 run test_attention.py's accuracy check. With --simulate every kernel is called
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
    "rmsnorm": ("rmsnorm", "rmsnorm_nki_kernels", "rmsnorm"),
    "softmax": ("softmax", "softmax_nki_kernels", "softmax"),
    "layernorm": ("layernorm", "layernorm_nki_kernel", "layernorm"),
    "attention_v1": ("attention_fwd_performance", "test_attention", "attention"),
    "attention_v2": ("attention_fwd_performance", "test_attention", "attention"),
}


def stub_torch_xla():
    """softmax_nki_kernels imports torch_xla.core.xla_model without using it
    in the kernel: an empty stand-in module satisfies the import."""
    import types
    for name in ("torch_xla", "torch_xla.core", "torch_xla.core.xla_model"):
        sys.modules.setdefault(name, types.ModuleType(name))
    sys.modules["torch_xla.core"].xla_model = sys.modules["torch_xla.core.xla_model"]


def check_rmsnorm(mod, call):
    """rmsnorm's own __main__ check (atol=1e-4, rtol=1e-2), also on a row
    count that is not a multiple of 128 (the kernel's masks)."""
    for rows in (128, 300):
        a = np.random.rand(rows, 512).astype(np.float32)
        g = np.random.rand(512).astype(np.float32)
        out = call(mod.nki_rmsnorm_kernel, a, g)
        want = a * (1.0 / np.sqrt(np.mean(a * a, axis=1).reshape(a.shape[0], 1))) * g
        assert np.allclose(want, out, atol=1e-4, rtol=1e-2), "rmsnorm %d rows" % rows
        print("  nki_rmsnorm_kernel [%d, 512]: match" % rows)


def check_softmax(mod, call):
    """softmax_torch.py's check (naive softmax, rtol=atol=1e-5) on its
    logits, and on a [300, 1000] random input."""
    for x in (np.array([[1.0, 2.0, 3.0, 4.0, 5.0], [5.0, 4.0, 3.0, 2.0, 1.0]], np.float32),
              np.random.rand(300, 1000).astype(np.float32)):
        e = np.exp(x)
        want = e / e.sum(-1, keepdims=True)
        out = call(mod.nki_softmax_kernel, x)
        assert np.allclose(want, out, rtol=1e-5, atol=1e-5), "softmax %s" % (x.shape,)
        print("  nki_softmax_kernel %s: match" % (list(x.shape),))


def check_layernorm(mod, call):
    """layernorm_torch.py's check of both kernels against the reference
    (atol=1e-3, rtol=1e-2), on shapes that exercise the row mask and
    bn_stats' masked last chunk."""
    for rows, cols in ((256, 1024), (300, 1000)):
        x = np.random.rand(rows, cols).astype(np.float32)
        g = np.random.rand(cols).astype(np.float32)
        b = np.random.rand(cols).astype(np.float32)
        eps = 1e-5
        mean = x.mean(-1, keepdims=True)
        var = x.var(-1, keepdims=True)
        want = (x - mean) / np.sqrt(var + eps) * g + b
        for name in ("nki_layernorm_kernel_v1", "nki_layernorm_kernel_v2"):
            out = call(getattr(mod, name), x, eps, g, b)
            assert np.allclose(want, out, atol=1e-3, rtol=1e-2), "%s %dx%d" % (name, rows, cols)
            print("  %s [%d, %d]: match" % (name, rows, cols))


def check_attention(name, mod, simulate):
    """test_attention.py's accuracy check (float32, seqlen 128, atol=1e-2):
    importing the module already ran it for v1 through nki.jit."""
    from nkid import nki
    version = mod.attn_fwd_v1 if name.endswith("v1") else mod.attn_fwd_v2
    if not simulate:
        mod.test_attn_tutorial("accuracy", version)
    else:
        import nkid.nki.language as nl
        q, k, v = (nl.static_cast((np.random.random_sample([128, 128]) - 0.5) * 2, nl.float32)
                   for _ in range(3))
        out = nki.simulate_kernel(version, q, k, v)
        assert np.allclose(out, mod.numpy_attention(q, k, v), atol=1e-2)
    print("  %s: match" % version.__name__)


def rename_imports(text):
    """Rename neuronxcc.nki imports to nkid.nki, and nothing else."""
    text = re.sub(r"\bfrom neuronxcc import nki\b", "from nkid import nki", text)
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
                if how == "softmax":
                    stub_torch_xla()
                mod = importlib.import_module(module)
                from nkid import nki
                call = nki.simulate_kernel if simulate else (lambda k, *a: k(*a))
                if how == "rmsnorm":
                    check_rmsnorm(mod, call)
                elif how == "softmax":
                    check_softmax(mod, call)
                elif how == "layernorm":
                    check_layernorm(mod, call)
                elif how == "attention":
                    check_attention(name, mod, simulate)
                elif how == "matmul":
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
