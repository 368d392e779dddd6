"""Kernels that move data around with index arithmetic."""

from nkid import nki
import nkid.nki.language as nl


@nki.jit
def swap_blocks(src, dims):
    """Each row of src is a row-major [a, b] matrix; write it as [b, a]."""
    dst = nl.ndarray(src.shape, dtype=src.dtype, buffer=nl.shared_hbm)
    a, b = dims
    rows = src.shape[0]
    tile = nl.load(src)
    p = nl.arange(rows)[:, None, None]
    u = nl.arange(a)[None, :, None]
    v = nl.arange(b)[None, None, :]
    moved = nl.ndarray((rows, a * b), dtype=src.dtype)
    moved[p, v * a + u] = nl.copy(tile[p, u * b + v])
    nl.store(dst, value=moved)
    return dst


@nki.jit
def pool_mean(img, k):
    """k x k average pooling of a [C, H, W] image (C <= 128)."""
    c, h, w = img.shape
    out = nl.ndarray((c, h // k, w // k), dtype=img.dtype, buffer=nl.shared_hbm)
    ch, oh, dh, ow, dw = nl.mgrid[0:c, 0:h // k, 0:k, 0:w // k, 0:k]
    t = nl.load(img)
    s = nl.sum(t[ch, k * oh + dh, k * ow + dw], axis=[2, 4])
    nl.store(out, value=s / (k * k))
    return out


@nki.jit
def strided_pick(x):
    """out[:, j] = x[:, 2*j + 1]: a strided gather with mgrid .p/.x."""
    out = nl.ndarray((x.shape[0], x.shape[1] // 2), dtype=x.dtype, buffer=nl.shared_hbm)
    g = nl.mgrid[0:x.shape[0], 0:x.shape[1] // 2]
    t = nl.load(x[g.p, 2 * g.x + 1])
    nl.store(out[g.p, g.x], value=t)
    return out


@nki.jit
def masked_rows(x):
    """Copy a [N, 64] tensor, N not a multiple of 128, using masks."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    n = x.shape[0]
    ip = nl.arange(128)[:, None]
    jf = nl.arange(x.shape[1])[None, :]
    for t in nl.affine_range((n + 127) // 128):
        row = t * 128 + ip
        v = nl.load(x[row, jf], mask=(row < n))
        nl.store(out[row, jf], value=v * 3, mask=(row < n) & (jf >= 0))
    return out
