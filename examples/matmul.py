"""C = A @ B for A [M, K], B [K, N] given as A^T [K, M] (the contraction
axis on the partitions, as the PE array wants it). Each [128, 512] block of
C accumulates K/128 products in PSUM, then leaves through SBUF."""

import numpy as np

from nkid import nki
import nkid.nki.language as nl


@nki.jit
def matmul(a_t, b):
    k_dim, m_dim = a_t.shape
    _, n_dim = b.shape
    c = nl.ndarray((m_dim, n_dim), dtype=a_t.dtype, buffer=nl.shared_hbm)
    TK, TM, TN = 128, 128, 512
    for m in nl.affine_range(m_dim // TM):
        for n in nl.affine_range(n_dim // TN):
            acc = nl.zeros((TM, TN), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(k_dim // TK):
                a_tile = nl.load(a_t[k * TK:(k + 1) * TK, m * TM:(m + 1) * TM])
                b_tile = nl.load(b[k * TK:(k + 1) * TK, n * TN:(n + 1) * TN])
                acc += nl.matmul(a_tile, b_tile, transpose_x=True)
            nl.store(c[m * TM:(m + 1) * TM, n * TN:(n + 1) * TN],
                     value=nl.copy(acc, dtype=c.dtype))
    return c


if __name__ == "__main__":
    rng = np.random.default_rng(7)
    a = rng.standard_normal((256, 384), dtype=np.float32)
    b = rng.standard_normal((384, 1024), dtype=np.float32)
    got = matmul(np.ascontiguousarray(a.T), b)
    print("max |nkid - numpy| =", float(np.max(np.abs(got - a @ b))))
