"""Layer normalization with the Vector Engine's statistics instructions:
nisa.bn_stats on each 512-wide chunk of a row, nisa.bn_aggr over all the
chunks' statistics for mean and variance, then (x - mean) * rsqrt(var +
eps) * gamma + beta.  Rows not a multiple of 128 take the mask path.
Checked against numpy."""

import numpy as np
import pytest

from nkid import nki
import nkid.nki.isa as nisa
import nkid.nki.language as nl

P = 128
FMAX = nl.tile_size.bn_stats_fmax


@nki.jit
def layernorm(x, gamma, beta, eps=1e-5):
    rows, width = x.shape
    assert width % FMAX == 0
    chunks = width // FMAX
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    g = nl.load(gamma.reshape((1, width))).broadcast_to((P, width))
    b_ = nl.load(beta.reshape((1, width))).broadcast_to((P, width))
    i_p = nl.arange(P)[:, None]
    i_f = nl.arange(width)[None, :]
    for t in nl.affine_range((rows + P - 1) // P):
        ok = t * P + i_p < rows
        xt = nl.load(x[t * P + i_p, i_f], mask=ok, dtype=nl.float32)
        stats = nl.ndarray((P, 6 * chunks), dtype=nl.float32)
        for c in nl.affine_range(chunks):
            stats[:, nl.ds(6 * c, 6)] = nisa.bn_stats(xt[:, nl.ds(c * FMAX, FMAX)], mask=ok)
        mv = nisa.bn_aggr(stats, mask=ok)                     # [P, 2]: mean, variance
        rstd = nl.rsqrt(nl.add(mv[:, 1], eps, mask=ok), mask=ok)
        y = nisa.tensor_scalar(xt, op0=np.subtract, operand0=mv[:, 0], op1=np.multiply,
                               operand1=rstd, mask=ok)
        y = nl.add(nl.multiply(y, g, mask=ok), b_, mask=ok)
        nl.store(out[t * P + i_p, i_f], value=y, mask=ok)
    return out


def numpy_layernorm(x, gamma, beta, eps=1e-5):
    x = x.astype(np.float64)
    m = x.mean(axis=1, keepdims=True)
    v = x.var(axis=1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * gamma + beta


@pytest.mark.parametrize("rows,width", [(128, 512), (300, 2048), (77, 1024)])
def test_layernorm_matches_numpy(nkid_socket, rows, width):
    rng = np.random.default_rng(rows + width)
    x = (rng.standard_normal((rows, width)) * 3 + 5).astype(np.float32)
    gamma = rng.uniform(0.5, 1.5, width).astype(np.float32)
    beta = rng.standard_normal(width).astype(np.float32)
    got = layernorm(x, gamma, beta)
    np.testing.assert_allclose(got, numpy_layernorm(x, gamma, beta), rtol=1e-4, atol=1e-4)


def test_layernorm_of_constant_rows_is_beta(nkid_socket):
    x = np.full((128, 512), 7.0, np.float32)
    beta = np.linspace(-1, 1, 512).astype(np.float32)
    got = layernorm(x, np.ones(512, np.float32), beta, eps=1e-3)
    np.testing.assert_allclose(got, np.broadcast_to(beta, x.shape), atol=1e-6)
