"""Stable Diffusion style self-attention (small head dimension) on the cpu
backend: Q, K, V [seq, d] with d <= 128; Q and K are transposed on the
Tensor Engine so the contraction runs over the partitions, the whole
score row of a query tile is kept in SBUF, softmax in fp32 with the
products in bfloat16 (mixed precision), the reciprocal of the row sums
scales the output.  Checked against numpy."""

import ml_dtypes
import numpy as np
import pytest

from nkid import nki
import nkid.nki.isa as nisa
import nkid.nki.language as nl

T = 128


@nki.jit
def sd_attention(q_ref, k_ref, v_ref, mixed_precision=True):
    seq, d = q_ref.shape
    assert d <= 128 and seq % T == 0
    pe = nl.bfloat16 if mixed_precision else nl.float32
    out = nl.ndarray((seq, d), dtype=q_ref.dtype, buffer=nl.shared_hbm)
    n = seq // T
    scale = 1.0 / float(d) ** 0.5

    # K transposed once: [d, seq], and V tiles [128, d] in the PE dtype
    k_t = nl.ndarray((d, seq), dtype=pe)
    v_tiles = nl.ndarray((n, nl.par_dim(T), d), dtype=pe)
    for j in nl.affine_range(n):
        k_tile = nl.load(k_ref[nl.ds(j * T, T), :], dtype=pe)
        k_t[:, nl.ds(j * T, T)] = nl.copy(nisa.nc_transpose(k_tile), dtype=pe)
        v_tiles[j, :, :] = nl.load(v_ref[nl.ds(j * T, T), :], dtype=pe)

    for i in nl.affine_range(n):
        q_tile = nl.load(q_ref[nl.ds(i * T, T), :], dtype=pe)
        q_t = nl.copy(nisa.nc_transpose(nl.multiply(q_tile, scale, dtype=pe)), dtype=pe)
        scores = nl.ndarray((T, seq), dtype=nl.float32)
        for c in nl.affine_range(seq // 512 if seq >= 512 else 1):
            w = 512 if seq >= 512 else seq
            scores[:, nl.ds(c * w, w)] = nisa.nc_matmul(q_t, k_t[:, nl.ds(c * w, w)])
        neg_max = nl.negative(nisa.tensor_reduce(np.max, scores, axis=1, keepdims=True))
        probs = nisa.activation(op=np.exp, data=scores, bias=neg_max)
        inv_sum = nl.reciprocal(nl.sum(probs, axis=1, keepdims=True))
        probs_pe = nl.copy(probs, dtype=pe)
        o = nl.zeros((T, d), dtype=nl.float32, buffer=nl.psum)
        for j in nl.affine_range(n):
            p_t = nl.copy(nisa.nc_transpose(probs_pe[:, nl.ds(j * T, T)]), dtype=pe)
            o += nisa.nc_matmul(p_t, v_tiles[j, :, :])
        nl.store(out[nl.ds(i * T, T), :], value=nl.multiply(o, inv_sum, dtype=q_ref.dtype))
    return out


def numpy_attention(q, k, v):
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    s = q @ k.T / np.sqrt(q.shape[1])
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v


@pytest.mark.parametrize("seq,d,mixed", [(512, 64, True), (1024, 40, True), (256, 128, False)])
def test_sd_attention_matches_numpy(nkid_socket, seq, d, mixed):
    rng = np.random.default_rng(seq + d)
    q, k, v = (rng.uniform(-1, 1, (seq, d)).astype(np.float32) for _ in range(3))
    got = sd_attention(q, k, v, mixed_precision=mixed)
    tol = 2e-2 if mixed else 1e-4
    np.testing.assert_allclose(got, numpy_attention(q, k, v), rtol=tol, atol=tol)


def test_sd_attention_bfloat16_io(nkid_socket):
    rng = np.random.default_rng(77)
    q, k, v = (rng.uniform(-1, 1, (256, 64)).astype(ml_dtypes.bfloat16) for _ in range(3))
    got = sd_attention(q, k, v)
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(got.astype(np.float32), numpy_attention(q, k, v), rtol=3e-2,
                               atol=3e-2)
