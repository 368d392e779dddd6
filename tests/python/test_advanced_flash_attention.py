"""A flash-attention forward pass on the cpu backend: per 128-row query
tile, the keys and values stream in blocks of 512 and the softmax is kept
online (running maximum, running sum, rescaled accumulator), so no score
row is ever complete in memory.  Checked against numpy's attention."""

import numpy as np
import pytest

from nkid import nki
import nkid.nki.isa as nisa
import nkid.nki.language as nl

KV_BLOCK = 512
Q_TILE = 128


@nki.jit
def flash_attention_fwd(q, k, v):
    """softmax(q.T @ k / sqrt(d)) @ v.  q [d, Sq], k [d, Skv] (d on the
    partitions, <= 128), v [Skv, d]; returns [Sq, d] in q's dtype."""
    d, seq_q = q.shape
    seq_kv = k.shape[1]
    out = nl.ndarray((seq_q, d), dtype=q.dtype, buffer=nl.shared_hbm)
    scale = 1.0 / float(d) ** 0.5
    n_blocks = seq_kv // KV_BLOCK
    n_sub = KV_BLOCK // 128

    for qi in nl.affine_range(seq_q // Q_TILE):
        q_tile = nl.load(q[:, nl.ds(qi * Q_TILE, Q_TILE)])             # [d, 128]
        run_max = nl.full((Q_TILE, 1), -3.0e38, dtype=nl.float32)
        run_sum = nl.zeros((Q_TILE, 1), dtype=nl.float32)
        acc = nl.zeros((Q_TILE, d), dtype=nl.float32)

        for kb in nl.sequential_range(n_blocks):
            k_blk = nl.load(k[:, nl.ds(kb * KV_BLOCK, KV_BLOCK)])       # [d, 512]
            s = nisa.nc_matmul(q_tile, k_blk)                          # PSUM [128, 512]
            s_scaled = nl.multiply(s, scale, dtype=nl.float32)
            blk_max = nl.max(s_scaled, axis=1, keepdims=True)
            new_max = nl.maximum(run_max, blk_max)
            # exp(s - new_max) and its row sum; the old state rescaled
            neg_max = nl.negative(new_max)
            p = nisa.activation(op=np.exp, data=s_scaled, bias=neg_max, scale=1.0)
            correction = nl.exp(nl.subtract(run_max, new_max))
            run_sum[...] = nl.add(nl.multiply(run_sum, correction), nl.sum(p, axis=1,
                                                                            keepdims=True))
            pv = nl.zeros((Q_TILE, d), dtype=nl.float32, buffer=nl.psum)
            for j in nl.affine_range(n_sub):
                p_t = nisa.nc_transpose(p[:, nl.ds(j * 128, 128)])      # [128 kv, 128 q]
                p_t_sb = nl.copy(p_t, dtype=q.dtype)
                v_sub = nl.load(v[nl.ds(kb * KV_BLOCK + j * 128, 128), :])
                pv += nisa.nc_matmul(p_t_sb, v_sub)                     # [128 q, d]
            acc[...] = nl.add(nl.multiply(acc, correction), pv)
            run_max[...] = new_max

        o = nl.divide(acc, run_sum, dtype=q.dtype)
        nl.store(out[nl.ds(qi * Q_TILE, Q_TILE), :], value=o)
    return out


def numpy_attention(q, k, v):
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    s = q.T @ k / np.sqrt(q.shape[0])
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v


@pytest.mark.parametrize("d,seq_q,seq_kv", [(64, 256, 1024), (128, 128, 2048)])
def test_flash_attention_matches_numpy(nkid_socket, d, seq_q, seq_kv):
    rng = np.random.default_rng(d + seq_kv)
    q = rng.uniform(-1, 1, (d, seq_q)).astype(np.float32)
    k = rng.uniform(-1, 1, (d, seq_kv)).astype(np.float32)
    v = rng.uniform(-1, 1, (seq_kv, d)).astype(np.float32)
    got = flash_attention_fwd(q, k, v)
    np.testing.assert_allclose(got, numpy_attention(q, k, v), rtol=2e-4, atol=2e-5)
    sim = nki.simulate_kernel(flash_attention_fwd, q, k, v)
    np.testing.assert_allclose(sim, got, rtol=1e-6, atol=1e-7)


def test_flash_attention_online_softmax_survives_large_logits(nkid_socket):
    """Logits far above exp's range in later blocks: the running maximum
    rescales what came before instead of overflowing."""
    rng = np.random.default_rng(8)
    d, seq = 64, 1024
    q = rng.uniform(-1, 1, (d, 128)).astype(np.float32)
    k = rng.uniform(-1, 1, (d, seq)).astype(np.float32)
    k[:, 700:] *= 60.0                   # block 2 dwarfs block 1
    v = rng.uniform(-1, 1, (seq, d)).astype(np.float32)
    got = flash_attention_fwd(q, k, v)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, numpy_attention(q, k, v), rtol=1e-3, atol=1e-4)


def test_flash_attention_in_bfloat16(nkid_socket):
    import ml_dtypes
    rng = np.random.default_rng(9)
    d, seq = 64, 512
    q, k = (rng.uniform(-1, 1, (d, n)).astype(ml_dtypes.bfloat16) for n in (256, seq))
    v = rng.uniform(-1, 1, (seq, d)).astype(ml_dtypes.bfloat16)
    got = flash_attention_fwd(q, k, v)
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(got.astype(np.float32), numpy_attention(q, k, v),
                               rtol=3e-2, atol=3e-2)
