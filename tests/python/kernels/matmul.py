"""Matrix multiplication kernels, from a single tile to blocked loops."""

from nkid import nki
import nkid.nki.isa as nisa
import nkid.nki.language as nl

TK = nl.tile_size.pmax                  # contraction tile (partitions)
TM = nl.tile_size.gemm_stationary_fmax  # stationary free size
TN = nl.tile_size.gemm_moving_fmax      # moving free size


def mm_out(xT, y):
    """K, M and N of [K, M]^T @ [K, N], and its [M, N] result in HBM."""
    K, M = xT.shape
    _, N = y.shape
    return K, M, N, nl.ndarray((M, N), dtype=xT.dtype, buffer=nl.shared_hbm)


def tile_grids():
    """The index grids of a stationary [TK, TM], a moving [TK, TN] and a
    result [TM, TN] tile."""
    return nl.mgrid[0:TK, 0:TM], nl.mgrid[0:TK, 0:TN], nl.mgrid[0:TM, 0:TN]


def load_block(t, b, n, width):
    """Block b of n column tiles `width` wide of t [K, F], all of K, in SBUF:
    [n, K / TK, TK, width] (stationary tiles: TM wide; moving: TN)."""
    K = t.shape[0]
    it = nl.mgrid[0:TK, 0:width]
    blk = nl.ndarray((n, K // TK, nl.par_dim(TK), width), dtype=t.dtype, buffer=nl.sbuf)
    for i in nl.affine_range(n):
        for k in nl.affine_range(K // TK):
            blk[i, k, it.p, it.x] = nl.load(t[k * TK + it.p, (b * n + i) * width + it.x])
    return blk


def block_product(a_blk, b_blk, i, j, k_range=nl.affine_range):
    """Stationary tile i of a_blk times moving tile j of b_blk, summed over K
    in k_range order: a [TM, TN] tile in PSUM."""
    ia, ib, _ = tile_grids()
    acc = nl.zeros((TM, TN), nl.float32, buffer=nl.psum)
    for k in k_range(a_blk.shape[1]):
        acc += nl.matmul(a_blk[i, k, ia.p, ia.x], b_blk[j, k, ib.p, ib.x], transpose_x=True)
    return acc


@nki.jit
def mm_single(xT, y):
    """[K=128, M=64]^T @ [128, 512] in one matmul."""
    z = nl.ndarray((xT.shape[1], y.shape[1]), dtype=xT.dtype, buffer=nl.shared_hbm)
    kx, mx = nl.mgrid[0:xT.shape[0], 0:xT.shape[1]]
    ky, ny = nl.mgrid[0:y.shape[0], 0:y.shape[1]]
    a = nl.load(xT[kx, mx])
    b = nl.load(y[ky, ny])
    acc = nl.matmul(a, b, transpose_x=True)
    nl.store(z, value=nl.copy(acc, dtype=z.dtype))
    return z


@nki.jit
def mm_plain(x, y):
    """x [M<=128, K<=128] @ y [K, N<=512] without transpose_x."""
    z = nl.ndarray((x.shape[0], y.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.matmul(nl.load(x), nl.load(y))
    nl.store(z, value=acc)
    return z


@nki.jit
def mm_tiled(xT, y):
    """Tiled [K, M]^T @ [K, N] with a PSUM accumulator per output tile."""
    K, M, N, z = mm_out(xT, y)
    for m in nl.affine_range(M // TM):
        for n in nl.affine_range(N // TN):
            acc = nl.zeros((TM, TN), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TK):
                a = nl.ndarray((TK, TM), dtype=xT.dtype, buffer=nl.sbuf)
                b = nl.ndarray((TK, TN), dtype=y.dtype, buffer=nl.sbuf)
                a[...] = nl.load(xT[k * TK:(k + 1) * TK, m * TM:(m + 1) * TM])
                b[...] = nl.load(y[k * TK:(k + 1) * TK, n * TN:(n + 1) * TN])
                acc += nl.matmul(a[...], b[...], transpose_x=True)
            out = nl.copy(acc, dtype=z.dtype)
            nl.store(z[m * TM:(m + 1) * TM, n * TN:(n + 1) * TN], value=out)
    return z


@nki.jit
def mm_hoisted(xT, y):
    """Loads hoisted out of the inner loop into par_dim tile arrays."""
    K, M, N, z = mm_out(xT, y)
    ia, ib, iz = tile_grids()
    for m in nl.affine_range(M // TM):
        a_all = nl.ndarray((K // TK, nl.par_dim(TK), TM), dtype=xT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(K // TK):
            a_all[k, ia.p, ia.x] = nl.load(xT[k * TK + ia.p, m * TM + ia.x])
        for n in nl.affine_range(N // TN):
            b_all = nl.ndarray((K // TK, nl.par_dim(TK), TN), dtype=y.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(K // TK):
                b_all[k, ib.p, ib.x] = nl.load(y[k * TK + ib.p, n * TN + ib.x])
            acc = nl.zeros((TM, TN), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TK):
                acc[...] += nisa.nc_matmul(a_all[k, ia.p, ia.x], b_all[k, ib.p, ib.x])
            nl.store(z[m * TM + iz.p, n * TN + iz.x], value=nl.copy(acc, dtype=z.dtype))
    return z


@nki.jit
def mm_blocked(xT, y, bm=2, bn=2):
    """Free dimensions blocked by bm x bn tiles; results accumulated in SBUF."""
    K, M, N, z = mm_out(xT, y)
    iz = nl.mgrid[0:TM, 0:TN]
    for mb in nl.affine_range(M // (TM * bm)):
        a_blk = load_block(xT, mb, bm, TM)
        for nb in nl.affine_range(N // (TN * bn)):
            b_blk = load_block(y, nb, bn, TN)
            res = nl.zeros((bm, bn, nl.par_dim(TM), TN), dtype=nl.float32, buffer=nl.sbuf)
            for i in nl.affine_range(bm):
                for j in nl.affine_range(bn):
                    acc = block_product(a_blk, b_blk, i, j, nl.sequential_range)
                    res[i, j, iz.p, iz.x] += acc[iz.p, iz.x]
                    nl.store(z[(mb * bm + i) * TM + iz.p, (nb * bn + j) * TN + iz.x],
                             value=res[i, j, iz.p, iz.x])
    return z
