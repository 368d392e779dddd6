"""A fused Mamba (selective state space) layer on the cpu backend: the
discretized recurrence h[t] = exp(delta[t] * A) * h[t - 1] + delta[t] *
u[t] * B[t] runs as one nisa.tensor_tensor_scan per state along the
sequence, and y[t] = sum over states of C[t] * h[t].  Channels sit on the
partitions, the sequence on the free axis.  Checked against numpy.

Needs nisa.tensor_tensor_scan (issue 14, part A): skipped, saying so, only
while nkid.nki.isa has no tensor_tensor_scan."""

import numpy as np
import pytest

from nkid import nki
import nkid.nki.isa as nisa
import nkid.nki.language as nl

pytestmark = pytest.mark.skipif(
    not hasattr(nisa, "tensor_tensor_scan"),
    reason="nkid.nki.isa has no tensor_tensor_scan yet (issue 14, part A)")


@nki.jit
def mamba_layer(delta, u, A, B, C):
    """delta, u: [batch, channels, seq]; A: [channels, states];
    B, C: [batch, states, seq].  Returns y [batch, channels, seq]."""
    batch, channels, seq = u.shape
    states = A.shape[1]
    P = nl.tile_size.pmax
    y_out = nl.ndarray(u.shape, dtype=u.dtype, buffer=nl.shared_hbm)

    for b in nl.affine_range(batch):
        for ct in nl.affine_range((channels + P - 1) // P):
            rows = nl.arange(P)[:, None]
            cols = nl.arange(seq)[None, :]
            valid = ct * P + rows < channels
            d_t = nl.load(delta[b, ct * P + rows, cols], mask=valid)
            u_t = nl.load(u[b, ct * P + rows, cols], mask=valid)
            a_t = nl.load(A[ct * P + rows, nl.arange(states)[None, :]], mask=valid)
            du = nl.multiply(d_t, u_t, mask=valid)
            y = nl.zeros((P, seq), dtype=nl.float32)
            for s in nl.affine_range(states):
                # exp(delta * A[:, s]): A's column scales the activation
                dA = nisa.activation(op=np.exp, data=d_t, scale=a_t[:, s], mask=valid)
                b_row = nl.load(B[b, s, nl.arange(seq)[None, :]])        # [1, seq]
                c_row = nl.load(C[b, s, nl.arange(seq)[None, :]])
                dBu = nl.multiply(du, b_row.broadcast_to((P, seq)), mask=valid)
                h = nisa.tensor_tensor_scan(dA, dBu, initial=0.0, op0=np.multiply,
                                            op1=np.add, mask=valid)
                y[rows, cols] = nl.add(y, nl.multiply(h, c_row.broadcast_to((P, seq)),
                                                      mask=valid), mask=valid)
            nl.store(y_out[b, ct * P + rows, cols], value=y, mask=valid)
    return y_out


def numpy_mamba(delta, u, A, B, C):
    delta, u, A, B, C = (x.astype(np.float64) for x in (delta, u, A, B, C))
    batch, channels, seq = u.shape
    y = np.zeros_like(u)
    for b in range(batch):
        h = np.zeros((channels, A.shape[1]))
        for t in range(seq):
            dA = np.exp(delta[b, :, t, None] * A)
            h = dA * h + (delta[b, :, t] * u[b, :, t])[:, None] * B[b, None, :, t]
            y[b, :, t] = h @ C[b, :, t]
    return y


@pytest.mark.parametrize("batch,channels,states,seq", [(1, 128, 8, 64), (2, 200, 4, 96)])
def test_mamba_layer_matches_numpy(nkid_socket, batch, channels, states, seq):
    rng = np.random.default_rng(channels + seq)
    delta = rng.uniform(0.01, 0.2, (batch, channels, seq)).astype(np.float32)
    u = rng.standard_normal((batch, channels, seq)).astype(np.float32)
    A = -rng.uniform(0.5, 2.0, (channels, states)).astype(np.float32)
    B = rng.standard_normal((batch, states, seq)).astype(np.float32)
    C = rng.standard_normal((batch, states, seq)).astype(np.float32)
    got = mamba_layer(delta, u, A, B, C)
    np.testing.assert_allclose(got, numpy_mamba(delta, u, A, B, C), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(nki.simulate_kernel(mamba_layer, delta, u, A, B, C), got)
