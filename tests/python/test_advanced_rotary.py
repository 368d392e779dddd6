"""Rotary position embedding (RoPE) on the cpu backend: q and k [batch,
heads, seq, head_dim] rotated by cos/sin tables [batch, seq, head_dim],
x * cos + rotate_half(x) * sin with rotate_half(x) = [-x2, x1]; one
program per (batch, head), sequence tiles of 128 rows with a mask on the
last one.  Checked against numpy."""

import ml_dtypes
import numpy as np
import pytest

from nkid import nki
import nkid.nki.language as nl

P = 128


@nki.jit
def rotary(q, k, cos, sin):
    """Returns [2, batch, heads, seq, head_dim]: rotated q, then k."""
    b = nl.program_id(0)
    h = nl.program_id(1)
    seq, dim = q.shape[2], q.shape[3]
    half = dim // 2
    out = nl.ndarray((2,) + tuple(q.shape), dtype=q.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(P)[:, None]
    i_lo = nl.arange(half)[None, :]
    for t in nl.affine_range((seq + P - 1) // P):
        rows = t * P + i_p
        ok = rows < seq
        c_lo = nl.load(cos[b, rows, i_lo], mask=ok)
        c_hi = nl.load(cos[b, rows, half + i_lo], mask=ok)
        s_lo = nl.load(sin[b, rows, i_lo], mask=ok)
        s_hi = nl.load(sin[b, rows, half + i_lo], mask=ok)
        for which, src in enumerate((q, k)):
            x1 = nl.load(src[b, h, rows, i_lo], mask=ok)
            x2 = nl.load(src[b, h, rows, half + i_lo], mask=ok)
            lo = nl.subtract(nl.multiply(x1, c_lo, mask=ok), nl.multiply(x2, s_lo, mask=ok),
                             mask=ok)
            hi = nl.add(nl.multiply(x2, c_hi, mask=ok), nl.multiply(x1, s_hi, mask=ok),
                        mask=ok)
            nl.store(out[which, b, h, rows, i_lo], value=lo, mask=ok)
            nl.store(out[which, b, h, rows, half + i_lo], value=hi, mask=ok)
    return out


def rope_tables(batch, seq, dim, base=10000.0):
    inv = 1.0 / base ** (np.arange(0, dim, 2) / dim)
    pos = np.arange(seq)[None, :, None] + np.arange(batch)[:, None, None] * 3
    freqs = pos * inv[None, None, :]
    emb = np.concatenate([freqs, freqs], axis=-1)
    return np.cos(emb).astype(np.float32), np.sin(emb).astype(np.float32)


def numpy_rope(x, cos, sin):
    half = x.shape[-1] // 2
    rot = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos[:, None] + rot * sin[:, None]


@pytest.mark.parametrize("batch,heads,seq,dim", [(2, 3, 128, 64), (1, 2, 300, 128)])
def test_rotary_matches_numpy(nkid_socket, batch, heads, seq, dim):
    rng = np.random.default_rng(seq)
    q = rng.standard_normal((batch, heads, seq, dim)).astype(np.float32)
    k = rng.standard_normal((batch, heads, seq, dim)).astype(np.float32)
    cos, sin = rope_tables(batch, seq, dim)
    got = rotary[batch, heads](q, k, cos, sin)
    np.testing.assert_allclose(got[0], numpy_rope(q, cos, sin), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], numpy_rope(k, cos, sin), rtol=1e-5, atol=1e-5)


def test_rotary_preserves_norms_in_bfloat16(nkid_socket):
    rng = np.random.default_rng(3)
    q = rng.standard_normal((1, 1, 128, 64)).astype(ml_dtypes.bfloat16)
    cos, sin = rope_tables(1, 128, 64)
    got = rotary[1, 1](q, q, cos.astype(ml_dtypes.bfloat16), sin.astype(ml_dtypes.bfloat16))
    n_in = np.linalg.norm(q.astype(np.float32), axis=-1)
    n_out = np.linalg.norm(got[0].astype(np.float32), axis=-1)
    np.testing.assert_allclose(n_out, n_in, rtol=2e-2)
