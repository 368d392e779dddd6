"""Idioms of NKI's own examples and reference kernels (aws-neuron-sdk's
general/nki/test, nki-samples' tutorials and reference/) that nkid once
refused, each in a kernel of our own: a kernel named test_* in a pytest
file, reshapes of HBM tensors that merge dimensions (adaptive average
pooling, nearest resize), and a tensor-engine transpose fed straight to
nc_matmul (flash attention backward)."""

import inspect
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from nkid import nki
from nkid.errors import NkidError
import nkid.nki.isa as nisa
import nkid.nki.language as nl

rng = np.random.default_rng(1415)


def _line(func, text):
    src, start = inspect.getsourcelines(func)
    return start + next(i for i, s in enumerate(src) if text in s)


# -- a kernel named test_* is not a pytest test

def test_kernel_named_test_is_not_collected_by_pytest(nkid_socket, tmp_path):
    # NKI's test_nki_nl_broadcast.py names its kernel test_nl_broadcast
    (tmp_path / "test_example.py").write_text(textwrap.dedent('''
        import unittest
        import numpy as np
        import nkid.nki as nki
        import nkid.nki.language as nl

        @nki.jit(mode="simulation")
        def test_nl_double(in_tensor):
            out = nl.ndarray(in_tensor.shape, in_tensor.dtype, buffer=nl.shared_hbm)
            nl.store(out, nl.multiply(nl.load(in_tensor), 2.0))
            return out

        class TestDouble(unittest.TestCase):
            def test_double(self):
                a = np.arange(64, dtype=np.float32).reshape(4, 16)
                np.testing.assert_array_equal(test_nl_double(a), 2 * a)
    '''))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        str(tmp_path / "test_example.py")],
                       cwd=str(tmp_path), capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, NKID_SOCKET=nkid_socket))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 passed" in r.stdout and "error" not in r.stdout.lower(), r.stdout


# -- reshapes of HBM tensors that merge dimensions

def pool_rows(x):
    """Mean over the last two axes of x (N, C, H, W), with N * C rows of
    128 partitions: the merged (N * C) view is read in tiles."""
    N, C, H, W = x.shape
    out = nl.ndarray((N, C, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    xf = x.reshape(shape=(N * C, H, W))
    of = out.reshape(shape=(N * C, 1))
    for t in nl.affine_range(N * C // 128):
        tile = nl.load(xf[t * 128:(t + 1) * 128, :, :])
        s = nl.sum(tile, axis=[1, 2])
        nl.store(of[t * 128:(t + 1) * 128, :], nl.multiply(s, 1.0 / (H * W)))
    return out


def test_merging_reshape_of_param_and_output(nkid_socket):
    x = rng.standard_normal((2, 192, 5, 7)).astype(np.float32)
    got = nki.simulate_kernel(pool_rows, x)
    np.testing.assert_allclose(got, x.mean(axis=(2, 3))[:, :, None], rtol=1e-5, atol=1e-6)


def gather_pixels(img, idx):
    """img (B, H, W, C) seen as (B, H * W, C); rows gathered by an index
    tile, masked past n, stored through a merged view of the output."""
    B, H, W, C = img.shape
    n = idx.shape[0]
    out = nl.ndarray((B, n // 4, 4, C), dtype=img.dtype, buffer=nl.shared_hbm)
    flat = img.reshape(shape=(B, H * W, C))
    oflat = out.reshape(shape=(B, n, C))
    i_p = nl.arange(128)[:, None]
    i_c = nl.arange(C)[None, :]
    for b in nl.affine_range(B):
        for t in nl.affine_range((n + 127) // 128):
            it = nl.load(idx[t * 128 + i_p, 0], mask=(t * 128 + i_p < n))
            g = nl.load(flat[b, it[i_p, 0], i_c], mask=(t * 128 + i_p < n))
            nl.store(oflat[b, t * 128 + i_p, i_c], value=g, mask=(t * 128 + i_p < n))
    return out


def test_merging_reshape_indirect_gather_and_masked_store(nkid_socket):
    img = rng.standard_normal((2, 6, 10, 24)).astype(np.float32)
    n = 200
    idx = rng.integers(0, 60, (n, 1)).astype(np.int32)
    got = nki.simulate_kernel(gather_pixels, img, idx)
    want = img.reshape(2, 60, 24)[:, idx[:, 0], :].reshape(2, n // 4, 4, 24)
    np.testing.assert_array_equal(got, want)


def scale_in_place(x):
    """Writes the kernel argument through a merged view (SPMD: program p
    scales rows p * 64 ... of the merged view)."""
    A, B, F = x.shape
    xf = x.reshape(shape=(A * B, F))
    p = nl.program_id(0)
    t = nl.load(xf[p * 64:(p + 1) * 64, :])
    nl.store(xf[p * 64:(p + 1) * 64, :], nl.multiply(t, 3.0))


def test_merging_reshape_written_in_place_under_a_grid(nkid_socket):
    x = rng.standard_normal((4, 32, 16)).astype(np.float32)
    want = x * 3
    nki.simulate_kernel(nki.jit(scale_in_place)[2], x)
    np.testing.assert_allclose(x, want, rtol=1e-6)


def test_merging_reshape_and_original_both_used_is_refused(nkid_socket):
    def k(x):
        out = nl.ndarray((4, 8, 16), dtype=x.dtype, buffer=nl.shared_hbm)
        of = out.reshape(shape=(32, 16))
        nl.store(of, nl.load(x))
        nl.store(out[0], nl.load(x[0:8, :]))
        return out
    x = rng.standard_normal((32, 16)).astype(np.float32)
    with pytest.raises(NotImplementedError) as e:
        nki.simulate_kernel(k, x)
    msg = str(e.value)
    assert "`out` and its reshape (which merges dimensions) are both used" in msg
    assert "test_nki_examples.py:%d" % _line(k, "of = out.reshape") in msg


def test_merging_reshape_inside_a_loop_is_refused(nkid_socket):
    def k(x):
        out = nl.ndarray((2, 128, 4), dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(2):
            xf = x[i].reshape(shape=(128, 4))
            nl.store(out[i], nl.load(xf))
        return out
    x = rng.standard_normal((2, 2, 64, 4)).astype(np.float32)
    with pytest.raises(NotImplementedError) as e:
        nki.simulate_kernel(k, x)
    assert "merges dimensions" in str(e.value)
    assert "outside loops and branches" in str(e.value)
    assert "test_nki_examples.py:%d" % _line(k, "xf = x[i].reshape") in str(e.value)


def test_merging_reshape_of_an_sbuf_tile_is_still_refused(nkid_socket):
    def k(x):
        out = nl.ndarray((128, 32), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        nl.store(out, t.reshape((128, 32)))
        return out
    x = rng.standard_normal((128, 4, 8)).astype(np.float32)
    with pytest.raises(NotImplementedError, match="merges dimensions"):
        nki.simulate_kernel(k, x)


# -- a tensor-engine transpose straight into nc_matmul

def transposed_matmul(a, b):
    """out = a @ b with a [128, K] transposed on the tensor engine (a PSUM
    result) and passed to nc_matmul as the stationary."""
    out = nl.ndarray((a.shape[0], b.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    aT = nisa.nc_transpose(nl.load(a))
    nl.store(out, nisa.nc_matmul(aT, nl.load(b)))
    return out


def test_nc_transpose_result_as_matmul_operand(nkid_socket):
    a = rng.standard_normal((128, 96)).astype(np.float32)
    b = rng.standard_normal((96, 256)).astype(np.float32)
    got = nki.simulate_kernel(transposed_matmul, a, b)
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)


def test_psum_tile_the_kernel_placed_is_still_refused_by_matmul(nkid_socket):
    def k(a, b):
        out = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.shared_hbm)
        p = nl.ndarray((96, 128), dtype=nl.float32, buffer=nl.psum)
        p[...] = nisa.nc_transpose(nl.load(a))
        nl.store(out, nisa.nc_matmul(p, nl.load(b)))
        return out
    a = rng.standard_normal((128, 96)).astype(np.float32)
    b = rng.standard_normal((96, 256)).astype(np.float32)
    with pytest.raises(NkidError) as e:
        nki.simulate_kernel(k, a, b)
    assert ("Expected operand 'stationary' of 'matmul' to be in address space 'sbuf',"
            " but got a tile in 'psum' instead") in str(e.value)


# -- neuronxcc internals that NKI's reference kernels import

def test_internal_modules_reference_kernels_import(nkid_socket):
    # nki-samples' reference/util and rmsnorm_quant import these
    from nkid.nki.compiler.backends.neuron.tensor import local_tile
    from nkid.nki.compiler.backends.neuron.indexing import TileIndex
    from nkid.nki.language.constants import sizeinbytes
    assert sizeinbytes(np.float32) == 4 and sizeinbytes(nl.float8_e4m3) == 1
    assert sizeinbytes(nl.bfloat16) == 2

    seen = {}

    def k(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        i = nl.arange(x.shape[0])[:, None]
        t = nl.load(x)
        seen["index"] = isinstance(i, TileIndex)
        seen["tile"] = isinstance(t, local_tile)
        nl.store(out, t)
        return out
    x = rng.standard_normal((8, 4)).astype(np.float32)
    np.testing.assert_array_equal(nki.simulate_kernel(k, x), x)
    assert seen == {"index": True, "tile": True}


# -- operand masking (NKI's "lhs_T[i_lhs_f <= 64]"), which rmsnorm_quant uses

def masked_matmul(a, b):
    """a [K, M] (lhsT), b [K, N]; only rows m < 40 of a^T, columns n < 300
    of b and contraction k < 100 take part; the rest of out stays 7."""
    K, M = a.shape
    N = b.shape[1]
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    res = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    res[...] = nl.full((M, N), 7.0, dtype=nl.float32)
    i_k = nl.arange(K)[:, None]
    i_m = nl.arange(M)[None, :]
    i_n = nl.arange(N)[None, :]
    at = nl.load(a)
    bt = nl.load(b)
    p = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    p[...] = nl.full((M, N), 7.0, dtype=nl.float32)
    p[...] = nisa.nc_matmul(at[(i_m < 40) & (i_k < 100)], bt[i_n < 300])
    nl.store(out, p)
    return out


def test_operand_masking_of_nc_matmul(nkid_socket):
    a = rng.standard_normal((128, 64)).astype(np.float32)
    b = rng.standard_normal((128, 512)).astype(np.float32)
    got = nki.simulate_kernel(masked_matmul, a, b)
    want = np.full((64, 512), 7.0, dtype=np.float32)
    want[:40, :300] = a[:100, :40].T @ b[:100, :300]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_operand_masking_outside_matmul_is_refused(nkid_socket):
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        i_f = nl.arange(a.shape[1])[None, :]
        nl.store(out, nl.exp(t[i_f < 3]))
        return out
    with pytest.raises(ValueError) as e:
        nki.simulate_kernel(k, np.zeros((4, 8), np.float32))
    assert "operand masking (tile[mask]) is only supported for the operands of matmul" \
        in str(e.value)
    assert "test_nki_examples.py:%d" % _line(k, "nl.exp(t[i_f < 3])") in str(e.value)


# -- a store into one element of an HBM tensor (flash attention backward's dsinks)

def store_element_sums(x):
    """out[b, h] = sum of x[b, h] ([128, 4]), through a partition reduction."""
    B, H = x.shape[0], x.shape[1]
    out = nl.ndarray((B, H), dtype=nl.float32, buffer=nl.shared_hbm)
    for b in nl.affine_range(B):
        for h in nl.affine_range(H):
            rows = nl.sum(nl.load(x[b, h]), axis=1)                 # [128]
            nl.store(out[b, h], value=nisa.tensor_partition_reduce(np.add, rows))
    return out


def test_store_into_one_element_of_an_hbm_tensor(nkid_socket):
    x = rng.standard_normal((2, 3, 128, 4)).astype(np.float32)
    got = nki.simulate_kernel(store_element_sums, x)
    np.testing.assert_allclose(got, x.sum(axis=(2, 3)), rtol=1e-4, atol=1e-4)
