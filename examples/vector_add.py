"""Element-wise addition of two [R, C] matrices, one [128, 512] tile at a
time, with the tiles walked by two affine loops. R must be a multiple of
128 and C of 512."""

import numpy as np

from nkid import nki
import nkid.nki.language as nl

TILE_P = nl.tile_size.pmax      # 128 partitions
TILE_F = 512


@nki.jit
def vector_add(x, y):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    rows, cols = x.shape
    for r in nl.affine_range(rows // TILE_P):
        for c in nl.affine_range(cols // TILE_F):
            part = slice(r * TILE_P, (r + 1) * TILE_P)
            free = slice(c * TILE_F, (c + 1) * TILE_F)
            xt = nl.load(x[part, free])
            yt = nl.load(y[part, free])
            nl.store(out[part, free], value=nl.add(xt, yt))
    return out


if __name__ == "__main__":
    rng = np.random.default_rng(7)
    x = rng.standard_normal((512, 2048), dtype=np.float32)
    y = rng.standard_normal((512, 2048), dtype=np.float32)
    got = vector_add(x, y)
    print("max |nkid - numpy| =", float(np.max(np.abs(got - (x + y)))))
