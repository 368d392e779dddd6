"""Kernel cases shared by the reference and end-to-end tests: the kernel
(with its grid), the arguments and numpy's answer."""

import contextlib
import dataclasses
import io

import ml_dtypes
import numpy as np

import nkid.nki.language as nl
from kernels import elementwise as ew, layout, matmul as mm, norms

rng = np.random.default_rng(7)


def _r(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def printed(fn, *args):
    """fn(*args), and what it wrote to stdout meanwhile."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        out = fn(*args)
    return out, buf.getvalue()


@dataclasses.dataclass(repr=False, eq=False)
class Case:
    """A kernel, its arguments and numpy's answer (a tuple for several
    outputs), to be matched within rtol and atol."""
    name: str
    kernel: object
    args: list
    expected: object
    rtol: float = 1e-5
    atol: float = 1e-5

    def check(self, got):
        exp = self.expected
        if not isinstance(exp, tuple):
            got, exp = (got,), (exp,)
        assert len(got) == len(exp)
        for g, e in zip(got, exp):
            assert g.shape == e.shape, (g.shape, e.shape)
            assert g.dtype == e.dtype, (g.dtype, e.dtype)
            np.testing.assert_allclose(g.astype(np.float32), e.astype(np.float32),
                                       rtol=self.rtol, atol=self.atol)

    def __repr__(self):
        return self.name


def tier1():
    a, b = _r(256, 1024), _r(256, 1024)
    h1, h2 = _r(256, 1024, dtype=np.float16), _r(256, 1024, dtype=np.float16)
    q1, q2 = _r(512, 1024, dtype=np.float16), _r(512, 1024, dtype=np.float16)
    s = _r(128, 256)
    img = np.arange(2 * 6 * 8, dtype=np.float16).reshape(2, 6, 8)
    ints = np.arange(5 * 12, dtype=np.int8).reshape(5, 12)
    xT1, y1 = _r(128, 64), _r(128, 512)
    xT, y = _r(256, 256), _r(256, 1024)
    bf_x, bf_y = (_r(256, 256).astype(ml_dtypes.bfloat16), _r(256, 1024).astype(ml_dtypes.bfloat16))
    pos = np.abs(_r(128, 64)) + 0.5
    cases = [
        Case("add_tiled", ew.add_tiled, [a, b], a + b),
        Case("add_spmd", ew.add_spmd[2, 2], [h1, h2], h1 + h2, 1e-2, 1e-3),
        Case("add_two_cores", ew.add_spmd[nl.spmd_dim(2, nl.nc(2)), 2], [q1, q2], q1 + q2,
             1e-2, 1e-3),
        Case("scale_shift", ew.scale_shift, [s],
             (2 * s - 1 + s / 4).astype(np.float16), 1e-2, 1e-2),
        Case("exp_square_sum", ew.exp_square_sum, [s],
             (np.exp(s).sum(1, keepdims=True), (s * s).sum(1, keepdims=True)), 1e-4, 1e-3),
        Case("row_normalize", ew.row_normalize, [pos], pos / pos.sum(1, keepdims=True)),
        Case("psum_store", ew.psum_store, [s], s),
        Case("swap_blocks", layout.swap_blocks, [ints, (3, 4)],
             ints.reshape(5, 3, 4).transpose(0, 2, 1).reshape(5, 12), 0, 0),
        Case("pool_mean", layout.pool_mean, [img, 2],
             img.reshape(2, 3, 2, 4, 2).astype(np.float32).mean((2, 4)).astype(np.float16), 0, 0),
        Case("strided_pick", layout.strided_pick, [s], s[:, 1::2]),
        Case("mm_single", mm.mm_single, [xT1, y1], xT1.T @ y1, 1e-4, 1e-3),
        Case("mm_plain", mm.mm_plain, [xT1.T.copy(), y1[:, :256].copy()],
             xT1.T @ y1[:, :256], 1e-4, 1e-3),
        Case("mm_tiled", mm.mm_tiled, [xT, y], xT.T @ y, 1e-4, 1e-3),
        Case("mm_hoisted", mm.mm_hoisted, [xT, y], xT.T @ y, 1e-4, 1e-3),
        Case("mm_blocked", mm.mm_blocked, [xT, _r(256, 1024)], None, 1e-4, 1e-3),
        Case("mm_tiled_bf16", mm.mm_tiled, [bf_x, bf_y],
             (bf_x.astype(np.float32).T @ bf_y.astype(np.float32)).astype(ml_dtypes.bfloat16),
             2e-2, 2e-1),
    ]
    blk = cases[14]
    blk.expected = blk.args[0].T @ blk.args[1]
    return cases


def tier2():
    x = _r(200, 96)
    g = _r(96)
    ln_x, gam, bet = _r(256, 96), _r(96), _r(96)
    mu = ln_x.mean(1, keepdims=True)
    va = ln_x.var(1, keepdims=True)
    e = np.exp(x - x.max(1, keepdims=True))
    t = _r(128, 64)
    sq = _r(64, 32)
    pp, ff = np.mgrid[0:16, 0:8]
    base = _r(16, 8)
    return [
        Case("transposes", norms.transposes, [sq], (sq.T.copy(), sq.T.copy())),
        Case("iota_affine", norms.iota_affine, [base], base + (2 * pp + ff).astype(np.float32)),
        Case("masked_rows", layout.masked_rows, [x], x * 3),
        Case("rms_norm", norms.rms_norm, [x, g],
             x / np.sqrt((x * x).mean(1, keepdims=True) + 1e-6) * g, 1e-4, 1e-4),
        Case("softmax_rows", norms.softmax_rows, [x], e / e.sum(1, keepdims=True), 1e-4, 1e-5),
        Case("layer_norm_isa", norms.layer_norm_isa, [ln_x, 1e-5, gam, bet],
             (ln_x - mu) / np.sqrt(va + 1e-5) * gam + bet, 1e-4, 1e-4),
        Case("transpose_tile", norms.transpose_tile, [t], t.T.copy()),
        Case("select_relu", norms.select_relu, [t],
             (np.maximum(np.where(t > 0, t, 0.1 * t), np.maximum(t, 0)), t.max(1, keepdims=True)),
             1e-6, 1e-6),
    ]
