"""Causal (decoder) attention on the cpu backend: scores of a query tile
against keys past its position are replaced by nl.fp32.min through
nisa.affine_select on the affine predicate q_pos - k_pos >= 0, and key
tiles wholly in the future are never computed.  Checked against numpy.

Needs nisa.affine_select (issue 14, part A): skipped, saying so, only
while nkid.nki.isa has no affine_select."""

import numpy as np
import pytest

from nkid import nki
import nkid.nki.isa as nisa
import nkid.nki.language as nl

pytestmark = pytest.mark.skipif(
    not hasattr(nisa, "affine_select"),
    reason="nkid.nki.isa has no affine_select yet (issue 14, part A)")

T = 128


@nki.jit
def causal_attention(q, k, v):
    """q, k: [d, S] (d on the partitions); v: [S, d]. Returns [S, d]."""
    d, seq = q.shape
    out = nl.ndarray((seq, d), dtype=q.dtype, buffer=nl.shared_hbm)
    n = seq // T
    scale = 1.0 / float(d) ** 0.5
    i_q = nl.arange(T)[:, None]
    i_k = nl.arange(T)[None, :]
    for qi in nl.affine_range(n):
        q_tile = nl.load(q[:, nl.ds(qi * T, T)])
        scores = nl.ndarray((T, seq), dtype=nl.float32)
        for ki in nl.affine_range(n):
            s = nl.multiply(nisa.nc_matmul(q_tile, nl.load(k[:, nl.ds(ki * T, T)])), scale)
            # position qi*T + i_q may see position ki*T + i_k when not later
            scores[:, nl.ds(ki * T, T)] = nisa.affine_select(
                pred=(qi * T + i_q - (ki * T + i_k) >= 0), on_true_tile=s,
                on_false_value=nl.fp32.min)
        m = nl.max(scores, axis=1, keepdims=True)
        p = nl.exp(nl.subtract(scores, m))
        total = nl.sum(p, axis=1, keepdims=True)
        o = nl.zeros((T, d), dtype=nl.float32, buffer=nl.psum)
        for ki in nl.affine_range(n):
            p_t = nl.copy(nisa.nc_transpose(p[:, nl.ds(ki * T, T)]))
            o += nisa.nc_matmul(p_t, nl.load(v[nl.ds(ki * T, T), :]))
        nl.store(out[nl.ds(qi * T, T), :], value=nl.divide(o, total, dtype=q.dtype))
    return out


def numpy_causal_attention(q, k, v):
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    s = q.T @ k / np.sqrt(q.shape[0])
    s[np.triu(np.ones(s.shape, bool), 1)] = -np.inf
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v


@pytest.mark.parametrize("d,seq", [(64, 256), (128, 512)])
def test_causal_attention_matches_numpy(nkid_socket, d, seq):
    rng = np.random.default_rng(seq)
    q, k = (rng.uniform(-1, 1, (d, seq)).astype(np.float32) for _ in range(2))
    v = rng.uniform(-1, 1, (seq, d)).astype(np.float32)
    got = causal_attention(q, k, v)
    want = numpy_causal_attention(q, k, v)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-5)
    # the first query sees only the first key: its output is v[0]
    np.testing.assert_allclose(got[0], v[0], rtol=1e-5)
