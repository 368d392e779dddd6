"""A matrix multiplication that places every tile itself (NKI's direct
allocation): A's tiles are transposed on the Tensor Engine against an
identity of the kernel's own (nl.shared_constant), the product
accumulates in PSUM banks chosen by ncc.psum.mod_alloc, SBUF tiles are
double buffered by ncc.sbuf.mod_alloc, the epilogue adds a bias through
nisa.activation.  Checked against numpy, and a variant whose buffers
collide is refused before it runs."""

import numpy as np
import pytest

from nkid import nki, NKIError
import nkid.nki.isa as nisa
import nkid.nki.language as nl
import nkid.nki.compiler as ncc
from nkid.nki.language import par_dim

T = 128
N = 512


def _matmul_bias(a, b, bias, c_addr):
    """C = A @ B + bias: A [M, K], B [K, N], bias [1, N] (N = 512)."""
    M, K = a.shape
    mt, kt = M // T, K // T
    c = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    ident = nl.shared_constant(np.identity(T, dtype=np.int8), dtype=nl.float32)

    addr = 0
    ident_sb = nl.ndarray((par_dim(T), T), dtype=nl.float32,
                          buffer=ncc.sbuf.mod_alloc(base_addr=addr))
    addr += T * 4
    zero = nl.ndarray((par_dim(T), 1), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=addr))
    addr += 4
    bias_sb = nl.ndarray((par_dim(T), N), dtype=nl.float32,
                         buffer=ncc.sbuf.mod_alloc(base_addr=addr))
    addr += N * 4
    b_sb = nl.ndarray((kt, par_dim(T), N), dtype=nl.float32,
                      buffer=ncc.sbuf.mod_alloc(base_addr=addr, num_free_tiles=(kt,)))
    addr += kt * N * 4
    a_sb = nl.ndarray((kt, par_dim(T), T), dtype=nl.float32,
                      buffer=ncc.sbuf.mod_alloc(base_addr=addr, num_free_tiles=(2,)))
    addr += 2 * T * 4
    a_t_sb = nl.ndarray((kt, par_dim(T), T), dtype=nl.float32,
                        buffer=ncc.sbuf.mod_alloc(base_addr=addr, num_free_tiles=(2,)))
    addr += 2 * T * 4
    c_sb = nl.ndarray((mt, par_dim(T), N), dtype=nl.float32,
                      buffer=ncc.sbuf.mod_alloc(base_addr=c_addr, num_free_tiles=(2,)))
    a_t_ps = nl.ndarray((kt, par_dim(T), T), dtype=nl.float32,
                        buffer=ncc.psum.mod_alloc(base_bank=0, num_bank_tiles=(2,)))
    c_ps = nl.ndarray((mt, par_dim(T), N), dtype=nl.float32,
                      buffer=ncc.psum.mod_alloc(base_bank=2, num_bank_tiles=(2,)))

    ident_sb[...] = nl.load(ident)
    zero[...] = 0.0
    bias_sb[...] = nl.load(bias).broadcast_to((T, N))
    for k in nl.affine_range(kt):
        b_sb[k] = nl.load(b[nl.ds(k * T, T), :])
    for m in nl.affine_range(mt):
        for k in nl.affine_range(kt):
            a_sb[k] = nl.load(a[nl.ds(m * T, T), nl.ds(k * T, T)])
            a_t_ps[k] = nisa.nc_matmul(a_sb[k], ident_sb)       # A tile transposed
            a_t_sb[k] = nl.copy(a_t_ps[k])
            c_ps[m] += nisa.nc_matmul(a_t_sb[k], b_sb[k])
        c_sb[m] = nisa.activation(op=nl.copy, data=c_ps[m], bias=zero)
        c_sb[m] = nl.add(c_sb[m], bias_sb)
        nl.store(c[nl.ds(m * T, T), :], value=c_sb[m])
    return c


@nki.jit
def allocated_matmul(a, b, bias):
    return _matmul_bias(a, b, bias, c_addr=96 * 1024)


@nki.jit
def colliding_matmul(a, b, bias):
    return _matmul_bias(a, b, bias, c_addr=T * 4 + 4 + 16)    # on top of bias_sb


@pytest.mark.parametrize("M,K", [(256, 256), (128, 384)])
def test_allocated_matmul_matches_numpy(nkid_socket, M, K):
    rng = np.random.default_rng(M * K)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    bias = rng.standard_normal((1, N)).astype(np.float32)
    got = allocated_matmul(a, b, bias)
    np.testing.assert_allclose(got, a.astype(np.float64) @ b + bias, rtol=1e-4, atol=1e-4)


def test_colliding_buffers_are_refused_before_running():
    z = np.zeros
    with pytest.raises(NKIError, match=r"allocation of tensor `c_sb` \(ncc.sbuf.mod_alloc"
                       r"\(base_addr=532, num_free_tiles=\(2,\)\), .*\) overlaps tensor"
                       r" `bias_sb` .* \(lifetime conflict\) \(test_advanced_alloc.py:\d+\)"):
        nki.simulate_kernel(colliding_matmul, z((128, 128), np.float32),
                            z((128, N), np.float32), z((1, N), np.float32))
