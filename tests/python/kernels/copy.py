"""A copy kernel for tensor-transfer tests and benchmarks: load and store
[128, 512] tiles."""

from nkid import nki
import nkid.nki.language as nl


@nki.jit
def copy_tiles(x):
    """x copied tile by tile; x is [R*128, C*512]."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for r in nl.affine_range(x.shape[0] // 128):
        for c in nl.affine_range(x.shape[1] // 512):
            t = nl.load(x[r * 128:(r + 1) * 128, c * 512:(c + 1) * 512])
            nl.store(out[r * 128:(r + 1) * 128, c * 512:(c + 1) * 512], value=t)
    return out
