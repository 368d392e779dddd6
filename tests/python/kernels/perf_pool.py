"""Adaptive average pooling over NCHW, written for this project after the
algorithm nki-samples' reference kernel describes (src/nki_samples/reference/
vision.py, adaptive_avg_pool2d_kernel, aws-neuron/nki-samples@0898a77): the
N x C planes in tiles of up to 128 partitions; per output element, its
window copied into SBUF by DMA (in pieces of at most 128 x 128), summed on
VectorE into an fp32 accumulator, divided by its size; one store per tile.
The unit test of that kernel publishes its measured latency (p99) for nine
shapes on the hardware, the pooling family of docs/model.md "Validation"
(perf_tutorials.POOL_PUBLISHED). A numpy reference checks it
(tests/python/test_model.py)."""

import numpy as np

from nkid import nki
import nkid.nki.isa as nisa
import nkid.nki.language as nl

#: the most rows or columns of a window one DMA copies
PIECE = 128


def _bounds(n, out):
    """Window i of `out` over `n`: [n i / out, ceil(n (i + 1) / out))."""
    return [(i * n // out, ((i + 1) * n + out - 1) // out) for i in range(out)]


@nki.jit
def adaptive_avg_pool2d(x, oh, ow):
    n, c, h, w = x.shape
    planes = n * c
    tp = min(planes, nl.tile_size.pmax)
    ntiles = (planes + tp - 1) // tp
    rows, cols = _bounds(h, oh), _bounds(w, ow)
    wh = min(max(b - a for a, b in rows), PIECE)
    ww = min(max(b - a for a, b in cols), PIECE)
    out = nl.ndarray((n, c, oh, ow), dtype=x.dtype, buffer=nl.shared_hbm)
    src = x.reshape((planes, h, w))
    dst = out.reshape((planes, oh, ow))
    window = nl.zeros((ntiles, nl.par_dim(tp), wh, ww), dtype=x.dtype, buffer=nl.sbuf)
    pooled = nl.zeros((ntiles, nl.par_dim(tp), oh, ow), dtype=x.dtype, buffer=nl.sbuf)
    for t in nl.affine_range(ntiles):
        p0 = t * tp
        ip = nl.arange(tp)[:, None, None] + p0
        for i in nl.static_range(oh):
            for j in nl.static_range(ow):
                (r0, r1), (c0, c1) = rows[i], cols[j]
                acc = nl.zeros((tp, 1), dtype=nl.float32, buffer=nl.sbuf)
                for a in range(r0, r1, PIECE):          # pieces: unrolled
                    ph = min(PIECE, r1 - a)
                    for b in range(c0, c1, PIECE):
                        pw = min(PIECE, c1 - b)
                        nisa.dma_copy(src=src[p0:p0 + tp, a:a + ph, b:b + pw],
                                      dst=window[t, :, 0:ph, 0:pw],
                                      mask=(ip < planes))
                        part = nl.sum(window[t, :, 0:ph, 0:pw], axis=[-2, -1])
                        acc[:, :] = acc[:, :] + part
                pooled[t, :, i, j] = nl.divide(acc, (r1 - r0) * (c1 - c0))
        nl.store(dst[p0:p0 + tp, :, :], value=pooled[t], mask=(ip < planes))
    return out


def args(shape, out, dtype):
    """Placeholder arguments of one case: an NCHW input of `shape` and
    `dtype`, the output's (OH, OW) `out` (an int: square)."""
    import nkid.nki.typing as nt
    oh, ow = (out, out) if isinstance(out, int) else out
    return (nt.tensor[list(shape), getattr(nl, dtype)], oh, ow)


def reference(x, oh, ow):
    """numpy: the mean of each window (PyTorch's AdaptiveAvgPool2d)."""
    n, c, h, w = x.shape
    out = np.empty((n, c, oh, ow), dtype=np.float64)
    for i, (r0, r1) in enumerate(_bounds(h, oh)):
        for j, (c0, c1) in enumerate(_bounds(w, ow)):
            out[:, :, i, j] = x[:, :, r0:r1, c0:c1].astype(np.float64).mean(axis=(2, 3))
    return out.astype(x.dtype)
