"""Element-wise kernels: tiled, SPMD and multi-core tensor addition."""

from nkid import nki
import nkid.nki.language as nl

ROWS = nl.tile_size.pmax
COLS = 512


@nki.jit
def add_tiled(x, y):
    """x + y for [R*128, C*512] inputs, one tile per loop iteration."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for r in nl.affine_range(x.shape[0] // ROWS):
        for c in nl.affine_range(x.shape[1] // COLS):
            xt = nl.load(x[r * ROWS:(r + 1) * ROWS, c * COLS:(c + 1) * COLS])
            yt = nl.load(y[r * ROWS:(r + 1) * ROWS, nl.ds(c * COLS, COLS)])
            nl.store(out[r * ROWS:(r + 1) * ROWS, c * COLS:(c + 1) * COLS], value=nl.add(xt, yt))
    return out


@nki.jit
def add_spmd(x, y):
    """x + y with one [128, 512] tile per program of a 2-D launch grid."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    rows = nl.program_id(0) * ROWS + nl.arange(ROWS)[:, None]
    cols = nl.program_id(1) * COLS + nl.arange(COLS)[None, :]
    xt = nl.load(x[rows, cols])
    total = xt + nl.load(y[rows, cols])
    nl.store(out[rows, cols], value=total)
    return out


def add_two_cores(x, y):
    """Launch add_spmd over both NeuronCores of a trn2 logical core."""
    gx = x.shape[0] // (ROWS * 2)
    gy = x.shape[1] // COLS
    return add_spmd[nl.spmd_dim(gx, nl.nc(2)), gy](x, y)


@nki.jit
def scale_shift(x):
    """2 * x - 1 + x / 4 on one tile, scalars on both sides, float16 out."""
    out = nl.ndarray(x.shape, dtype=nl.float16, buffer=nl.shared_hbm)
    t = nl.load(x)
    r = 2 * t - 1.0
    r = r + t / 4
    nl.store(out, value=nl.copy(r, dtype=nl.float16))
    return out


@nki.jit
def exp_square_sum(x):
    """Row sums of exp(x) and of x*x: two [P, 1] outputs."""
    s1 = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.shared_hbm)
    s2 = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    e = nl.sum(nl.exp(t), axis=1)
    q = nl.sum(nl.square(t), axis=[1], keepdims=True)
    nl.store(s1, value=e)
    nl.store(s2, value=q)
    return s1, s2


@nki.jit
def row_normalize(x):
    """x / rowsum(x): a [P] reduction result broadcast against [P, N]."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    s = nl.sum(t, axis=1)
    nl.store(out, value=t / s)
    return out


@nki.jit
def psum_store(x):
    """Copy through PSUM and store straight from PSUM."""
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    p = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.psum)
    p[...] = nl.copy(t)
    nl.store(out, value=p)
    return out


@nki.jit
def wide_partition(x):
    """A 256-partition tile: NKI rejects it (partition dim <= 128)."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    big = nl.load(x[0:256, 0:64])
    nl.store(out[0:256, 0:64], value=big)
    return out


@nki.jit
def print_tile(x):
    """device_print of a loaded tile."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.device_print("tile t:", t)
    nl.store(out, value=t)
    return out
