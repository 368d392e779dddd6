"""NKI 0.6 (the ``nki`` package's language, ``nkid.nki06``): kernels of our
own covering what the 0.6 tutorials and aws-neuron-sdk's nki/examples use,
each run through a real nkid (Run or Simulate) and compared to numpy."""

import ml_dtypes
import numpy as np
import pytest

from nkid import nki06 as nki
from nkid.errors import NKIError
import nkid.nki06.language as nl
import nkid.nki06.isa as nisa
import nkid.nki06.collectives as ncc

pytestmark = pytest.mark.usefixtures("nkid_socket")

RNG = np.random.default_rng(6)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


# ---------------------------------------------------------------- tiles, DMA, element-wise

@nki.jit
def add_tiled(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    M, N = a.shape
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            ta = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.sbuf)
            tb = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=ta, src=a[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512])
            nisa.dma_copy(dst=tb, src=b[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512])
            tc = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=tc, data1=ta, data2=tb, op=nl.add)
            nisa.dma_copy(dst=out[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], src=tc)
    return out


def test_add_tiled_run_and_simulate():
    a, b = rand(256, 1024), rand(256, 1024)
    np.testing.assert_allclose(add_tiled(a, b), a + b, rtol=1e-6)
    np.testing.assert_allclose(nki.simulate(add_tiled)(a, b), a + b, rtol=1e-6)


@nki.jit
def add_spmd(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i, j = nl.program_id(0), nl.program_id(axis=1)
    ta = nl.load(a[i * 128:(i + 1) * 128, j * 256:(j + 1) * 256])
    tb = nl.load(b[i * 128:(i + 1) * 128, j * 256:(j + 1) * 256])
    nl.store(out[i * 128:(i + 1) * 128, j * 256:(j + 1) * 256], value=nl.add(ta, tb))
    return out


def test_spmd_grid_program_id():
    a, b = rand(256, 512, dtype=np.float16), rand(256, 512, dtype=np.float16)
    out = add_spmd[2, 2](a, b)
    np.testing.assert_allclose(out.astype(np.float32), (a + b).astype(np.float32), rtol=2e-3)
    assert nl.num_programs is not None and nl.program_ndim is not None


def _shard_rows(rows):
    """(start, size) of this program's rows: plain Python (min(), an if),
    as nki-library's helpers compute their shards outside the kernel."""
    n, pid = nl.num_programs(0), nl.program_id(0)
    per = (rows + n - 1) // n
    start = pid * per
    size = min(per, rows - start)
    if pid == n - 1:
        size = rows - start
    return start, size


@nki.jit
def add_one_sharded(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    start, size = _shard_rows(x.shape[0])
    t = nl.ndarray((size, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[start:start + size, :])
    nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0)
    nisa.dma_copy(dst=out[start:start + size, :], src=t)
    return out


def test_program_id_on_a_grid_of_one_is_an_int():
    """kernel[1] (nki-library's topk[1], ...): program_id(0) is 0 there."""
    x = rand(96, 64)
    np.testing.assert_allclose(add_one_sharded[1](x), x + 1, rtol=1e-6)
    np.testing.assert_allclose(add_one_sharded(x), x + 1, rtol=1e-6)


# ---------------------------------------------------------------- matmul

@nki.jit
def matmul_tiled(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    res = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            ps = nl.ndarray((128, 512), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                lt = nl.ndarray((128, 128), dtype=lhsT.dtype, buffer=nl.sbuf)
                rt = nl.ndarray((128, 512), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=lt, src=lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                nisa.dma_copy(dst=rt, src=rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                nisa.nc_matmul(dst=ps, stationary=lt, moving=rt)
            sb = nl.ndarray((128, 512), dtype=res.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=sb, src=ps)
            nisa.dma_copy(dst=res[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], src=sb)
    return res


def test_matmul_tiled_accumulates_over_k():
    lhsT, rhs = rand(512, 256), rand(512, 1024)
    np.testing.assert_allclose(matmul_tiled(lhsT, rhs), lhsT.T @ rhs, rtol=1e-4, atol=1e-3)


@nki.jit
def matmul_hoisted(lhsT, rhs):
    """Tiles kept in Python lists indexed by the loop index: NKI 0.6 loops
    are Python loops (the kernel is traced again with them unrolled)."""
    K, M = lhsT.shape
    _, N = rhs.shape
    res = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    tiles = []
    for k in nl.affine_range(K // 128):
        t = nl.ndarray((128, M), dtype=lhsT.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=lhsT[k * 128:(k + 1) * 128, :])
        tiles.append(t)
    ps = nl.ndarray((M, N), nl.float32, buffer=nl.psum)
    for k in nl.affine_range(K // 128):
        rt = nl.ndarray((128, N), dtype=rhs.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=rt, src=rhs[k * 128:(k + 1) * 128, :])
        nisa.nc_matmul(ps, tiles[k], rt)
    sb = nl.ndarray((M, N), dtype=res.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=sb, src=ps)
    nisa.dma_copy(dst=res, src=sb)
    return res


def test_matmul_python_lists_unrolled():
    lhsT, rhs = rand(384, 128), rand(384, 256)
    np.testing.assert_allclose(matmul_hoisted(lhsT, rhs), lhsT.T @ rhs, rtol=1e-4, atol=1e-3)


@nki.jit
def matmul_accumulate_flags(a, b):
    out = nl.ndarray((2, 128, 64), nl.float32, buffer=nl.shared_hbm)
    ta = nl.ndarray((128, 128), nl.float32, buffer=nl.sbuf)
    tb = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=ta, src=a)
    nisa.dma_copy(dst=tb, src=b)
    ps = nl.ndarray((128, 64), nl.float32, buffer=nl.psum)
    nisa.nc_matmul(ps, ta, tb)                       # overwrite (first write)
    nisa.nc_matmul(ps, ta, tb)                       # auto: accumulates
    sb = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=sb, src=ps)
    nisa.dma_copy(dst=out[0], src=sb)
    nisa.nc_matmul(ps, ta, tb, accumulate=False)     # read since: overwrite
    nisa.nc_matmul(ps, ta, tb, accumulate=True)
    nisa.nc_matmul(ps, ta, tb, accumulate=True)
    nisa.tensor_copy(dst=sb, src=ps)
    nisa.dma_copy(dst=out[1], src=sb)
    return out


def test_matmul_accumulate_auto_and_explicit():
    a, b = rand(128, 128), rand(128, 64)
    out = nki.simulate(matmul_accumulate_flags)(a, b)
    ref = a.T @ b
    np.testing.assert_allclose(out[0], 2 * ref, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(out[1], 3 * ref, rtol=1e-4, atol=1e-3)


@nki.jit
def matmul_psum_outside(lhsT, rhs):
    """The PSUM tile declared outside every loop: each (m, n) is its own
    accumulation group (the zero goes before the k loop, inside n)."""
    K, M = lhsT.shape
    _, N = rhs.shape
    res = nl.ndarray((M, N), nl.float32, buffer=nl.shared_hbm)
    ps = nl.ndarray((128, 512), nl.float32, buffer=nl.psum)
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            for k in nl.affine_range(K // 128):
                lt = nl.ndarray((128, 128), nl.float32)
                rt = nl.ndarray((128, 512), nl.float32)
                nisa.dma_copy(dst=lt, src=lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                nisa.dma_copy(dst=rt, src=rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                nisa.nc_matmul(ps, lt, rt)
            sb = nl.ndarray((128, 512), nl.float32)
            nisa.tensor_copy(dst=sb, src=ps)
            nisa.dma_copy(dst=res[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], src=sb)
    return res


@nki.jit
def matmul_two_loop_group(lhsT, rhs):
    """One accumulation group over two nested loops (the zero moves out of
    both: nothing else touches the tile in them)."""
    K, M = lhsT.shape
    _, N = rhs.shape
    res = nl.ndarray((M, N), nl.float32, buffer=nl.shared_hbm)
    ps = nl.ndarray((M, N), nl.float32, buffer=nl.psum)
    for k in nl.affine_range(K // 256):
        for j in nl.affine_range(2):
            lt = nl.ndarray((128, M), nl.float32)
            rt = nl.ndarray((128, N), nl.float32)
            nisa.dma_copy(dst=lt, src=lhsT[k * 256 + j * 128:k * 256 + (j + 1) * 128, :])
            nisa.dma_copy(dst=rt, src=rhs[k * 256 + j * 128:k * 256 + (j + 1) * 128, :])
            nisa.nc_matmul(ps, lt, rt)
    sb = nl.ndarray((M, N), nl.float32)
    nisa.tensor_copy(dst=sb, src=ps)
    nisa.dma_copy(dst=res, src=sb)
    return res


def test_matmul_accumulation_groups():
    a, b = rand(512, 256), rand(512, 1024)
    np.testing.assert_allclose(matmul_psum_outside(a, b), a.T @ b, rtol=1e-4, atol=1e-3)
    a, b = rand(1024, 128), rand(1024, 256)
    np.testing.assert_allclose(matmul_two_loop_group(a, b), a.T @ b, rtol=1e-4, atol=1e-3)


@nki.jit
def matmul_language(x, y):
    out = nl.ndarray((x.shape[0], y.shape[1]), nl.float32, buffer=nl.shared_hbm)
    tx, ty = nl.load(x), nl.load(y)
    nl.store(out, value=nl.copy(nl.matmul(tx, ty, transpose_x=False)))
    t = nl.transpose(nl.load_transpose2d(x))
    nl.store(out, value=nl.copy(nl.matmul(t, ty)))
    return out


def test_language_matmul_transpose():
    x, y = rand(64, 128), rand(128, 96)
    np.testing.assert_allclose(matmul_language(x, y), x @ y, rtol=1e-4, atol=1e-3)


# ---------------------------------------------------------------- softmax, norms

@nki.jit
def softmax_isa(x):
    P, F = x.shape
    out = nl.ndarray((P, F), x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((P, F), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    mx = nl.ndarray((P, 1), nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=mx, op=nl.maximum, data=t, axis=1, negate=True)
    e = nl.ndarray((P, F), nl.float32, buffer=nl.sbuf)
    s = nl.ndarray((P, 1), nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=e, op=nl.exp, data=t, bias=mx, reduce_op=nl.add, reduce_res=s,
                    reduce_cmd=nisa.reduce_cmd.reset_reduce)
    r = nl.ndarray((P, 1), nl.float32, buffer=nl.sbuf)
    nisa.reciprocal(dst=r, data=s)
    y = nl.ndarray((P, F), x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=y, data=e, op0=nl.multiply, operand0=r)
    nisa.dma_copy(dst=out, src=y)
    return out


@nki.jit
def softmax_language(x):
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.softmax(nl.load(x)))
    return out


def np_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_softmax_isa_and_language():
    x = rand(128, 512)
    np.testing.assert_allclose(softmax_isa(x), np_softmax(x), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(softmax_language(x), np_softmax(x), rtol=1e-4, atol=1e-6)


@nki.jit
def layernorm(x, gamma):
    P, F = x.shape
    out = nl.ndarray((P, F), x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((P, F), nl.float32)
    nisa.dma_copy(dst=t, src=x)
    g = nl.ndarray((P, F), nl.float32)
    nisa.dma_copy(dst=g, src=gamma.broadcast_to((P, F)))
    stats = nl.ndarray((P, 6), nl.float32)
    nisa.bn_stats(dst=stats, data=t)
    mv = nl.ndarray((P, 2), nl.float32)
    nisa.bn_aggr(dst=mv, data=stats)
    rstd = nl.ndarray((P, 1), nl.float32)
    nisa.tensor_scalar(dst=rstd, data=mv[:, 1:2], op0=nl.add, operand0=1e-5,
                       op1=nl.power, operand1=-0.5)
    y = nl.ndarray((P, F), nl.float32)
    nisa.tensor_scalar(dst=y, data=t, op0=nl.subtract, operand0=mv[:, 0:1],
                       op1=nl.multiply, operand1=rstd)
    nisa.tensor_tensor(dst=y, data1=y, data2=g, op=nl.multiply)
    nisa.dma_copy(dst=out, src=y)
    return out


@nki.jit
def rmsnorm_language(x, w):
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    ms = nl.mean(nl.square(t), axis=1, keepdims=True)
    r = nl.rsqrt(nl.add(ms, 1e-6))
    y = nl.multiply(nl.multiply(t, r), nl.load(w).broadcast_to(x.shape))
    nl.store(out, y)
    return out


def test_layernorm_and_rmsnorm():
    x, g = rand(128, 256), rand(1, 256)
    mu = x.mean(1, keepdims=True)
    ref = (x - mu) / np.sqrt(x.var(1, keepdims=True) + 1e-5) * g
    np.testing.assert_allclose(layernorm(x, g), ref, rtol=1e-4, atol=1e-4)
    ref = x / np.sqrt((x * x).mean(1, keepdims=True) + 1e-6) * g
    np.testing.assert_allclose(rmsnorm_language(x, g), ref, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- reductions and activations

@nki.jit
def reductions(x):
    P = x.shape[0]
    out = nl.ndarray((P, 5), nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    o = nl.ndarray((P, 5), nl.float32)
    nisa.tensor_reduce(dst=o[:, 0:1], op=nl.add, data=t, axis=(1, 2))
    nisa.tensor_reduce(dst=o[:, 1:2], op=nl.maximum, data=t, axis=[1, 2])
    nisa.tensor_reduce(dst=o[:, 2:3], op=nl.minimum, data=t, axis=(1, 2), keepdims=True)
    nisa.tensor_reduce(dst=o[:, 3:4], op=nl.add, data=t, axis=(1, 2), negate=True)
    nisa.tensor_copy(dst=o[:, 4:5], src=nl.max(nl.sum(t, axis=2), axis=1, keepdims=True))
    nl.store(out, o)
    return out


def test_reductions():
    x = rand(64, 4, 32)
    out = reductions(x)
    np.testing.assert_allclose(out[:, 0], x.sum((1, 2)), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out[:, 1], x.max((1, 2)))
    np.testing.assert_allclose(out[:, 2], x.min((1, 2)))
    np.testing.assert_allclose(out[:, 3], -x.sum((1, 2)), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out[:, 4], x.sum(2).max(1), rtol=1e-4, atol=1e-4)


@nki.jit
def activations(x):
    out = nl.ndarray((5,) + x.shape, nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    y = nl.ndarray(x.shape, nl.float32)
    nisa.activation(dst=y, op=nl.gelu_apprx_tanh, data=t, scale=2.0, bias=0.5)
    nl.store(out[0], y)
    nisa.activation(dst=y, op=nl.relu, data=t)
    nl.store(out[1], y)
    nisa.exponential(dst=y, src=t, max_value=1.0)
    nl.store(out[2], y)
    nisa.activate2(dst=y, op=nl.prelu, data=t, imm0=2.0, imm1=1.0, op0=nl.multiply,
                   op1=nl.add, relu_param=0.1)
    nl.store(out[3], y)
    nl.store(out[4], nl.gelu_apprx_sigmoid_dx(t))
    return out


def test_activations():
    x = rand(128, 64)
    out = nki.simulate(activations)(x)
    z = 2 * x + 0.5
    gelu = 0.5 * z * (1 + np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z ** 3)))
    np.testing.assert_allclose(out[0], gelu, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out[1], np.maximum(x, 0))
    np.testing.assert_allclose(out[2], np.exp(x - 1), rtol=1e-5)
    v = 2 * x + 1
    np.testing.assert_allclose(out[3], np.where(v > 0, v, 0.1 * v), rtol=1e-5, atol=1e-6)
    s = 1 / (1 + np.exp(-1.702 * x))
    np.testing.assert_allclose(out[4], s + 1.702 * x * s * (1 - s), rtol=1e-4, atol=1e-5)


@nki.jit
def abs_minmax(x, y):
    out = nl.ndarray((2,) + x.shape, x.dtype, buffer=nl.shared_hbm)
    a, b = nl.load(x), nl.load(y)
    nl.store(out[0], nl.abs_max(a, b))
    nl.store(out[1], nl.abs_min(a, b))
    return out


def test_abs_max_abs_min():
    x, y = rand(32, 16), rand(32, 16)
    out = abs_minmax(x, y)
    np.testing.assert_array_equal(out[0], np.where(np.abs(x) > np.abs(y), x, y))
    np.testing.assert_array_equal(out[1], np.where(np.abs(x) < np.abs(y), x, y))


# ---------------------------------------------------------------- access patterns and views

@nki.jit
def maxpool_ap(x, pool):
    C, H, W = x.shape
    out = nl.ndarray((C, H // pool, W // pool), x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    v = t.ap([[H * W, C], [pool * W, H // pool], [pool, W // pool], [W, pool], [1, pool]])
    nl.store(out, nl.max(v, axis=[3, 4]))
    return out


@nki.jit
def views(x):
    P, A, B = x.shape
    t0 = nl.ndarray((128, 64), nl.float32)
    u = t0.slice(dim=1, start=8, end=24)
    assert u.get_pattern() == [[64, 128], [1, 16]] and u.offset == 8
    v = t0.ap(pattern=[[64, 128], [1, 16]], offset=8)
    assert v.get_pattern() == u.get_pattern() and v.offset == u.offset
    assert u.strides == (64, 1) and u.is_contiguous() and t0.is_contiguous()
    assert not t0.slice(1, 0, 64, 2).is_contiguous()
    assert not u.is_indirect() and u.permute((0, 1)).shape == (128, 16)
    w = t0.reshape((128, 8, 8))[:, 0:1, :].squeeze_dim(1)
    assert w.shape == (128, 8) and w.get_pattern() == [[64, 128], [1, 8]]
    out = nl.ndarray((4, P, A * B), x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((P, A, B), x.dtype)
    nisa.dma_copy(dst=t, src=x)
    nl.store(out[0], t.reshape((P, A * B)))                   # merge: affine on 0.6 tiles
    tt = nl.ndarray((P, B, A), x.dtype)
    nisa.tensor_copy(dst=tt, src=t.permute((0, 2, 1)))
    nl.store(out[1], tt.flatten_dims(1, 2))
    nl.store(out[2].reshape((P, A, B)), t.select(1, 0).expand_dim(1).broadcast(1, A))
    nl.store(out[3], t.reshape_dim(2, (B // 2, 2)).rearrange(
        ("p", "a", "b", "c"), ("p", ("a", "b", "c"))))
    return out


def test_access_patterns_and_views():
    x = rand(8, 12, 12)
    np.testing.assert_array_equal(maxpool_ap(x, 3), x.reshape(8, 4, 3, 4, 3).max((2, 4)))
    y = rand(16, 4, 6)
    out = views(y)
    np.testing.assert_array_equal(out[0], y.reshape(16, 24))
    np.testing.assert_array_equal(out[1], y.transpose(0, 2, 1).reshape(16, 24))
    np.testing.assert_array_equal(out[2], np.repeat(y[:, 0:1, :], 4, 1).reshape(16, 24))
    np.testing.assert_array_equal(out[3], y.reshape(16, 24))


@nki.jit
def scalar_offset_gather(a, idx):
    out = nl.ndarray((128, 256), a.dtype, buffer=nl.shared_hbm)
    b = nl.ndarray((1, 1), nl.int32)
    nisa.dma_copy(dst=b, src=idx)
    nisa.dma_copy(dst=out, src=a.ap([[a.shape[1], 128], [1, 256]], offset=0,
                                    scalar_offset=b, indirect_dim=0))
    return out


@nki.jit
def vector_offset_gather(a, rows):
    out = nl.ndarray((64, a.shape[1]), a.dtype, buffer=nl.shared_hbm)
    r = nl.ndarray((64, 1), nl.int32)
    nisa.dma_copy(dst=r, src=rows)
    sb = nl.ndarray((64, a.shape[1]), a.dtype)
    nisa.dma_copy(dst=sb, src=a.ap([[a.shape[1], 64], [1, a.shape[1]]], offset=0,
                                   vector_offset=r, indirect_dim=0))
    nisa.dma_copy(dst=out, src=sb)
    return out


def test_dynamic_scalar_and_vector_offsets():
    a = rand(512, 512)
    np.testing.assert_array_equal(scalar_offset_gather(a, np.array([[300]], np.int32)),
                                  a[300:428, 0:256])
    a = rand(128, 32)
    rows = RNG.integers(0, 128, (64, 1)).astype(np.int32)
    np.testing.assert_array_equal(vector_offset_gather(a, rows), a[rows[:, 0]])


@nki.jit
def causal_mask(x):
    P, F = x.shape
    out = nl.ndarray((2, P, F), nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    m = nl.ndarray((P, F), nl.float32)
    # keep x[p, f] where p - f >= 0, else -inf-ish
    nisa.affine_select(dst=m, pattern=[[-1, F]], channel_multiplier=1, on_true_tile=t,
                       on_false_value=-1e30, cmp_op=nl.greater_equal)
    nl.store(out[0], m)
    io = nl.ndarray((P, F), nl.int32)
    nisa.iota(io, [[2, F]], offset=3, channel_multiplier=F)
    nisa.tensor_copy(dst=m, src=io)
    nl.store(out[1], m)
    return out


def test_affine_select_and_iota():
    x = rand(64, 64)
    out = causal_mask(x)
    p, f = np.mgrid[0:64, 0:64]
    np.testing.assert_array_equal(out[0], np.where(p - f >= 0, x, np.float32(-1e30)))
    np.testing.assert_array_equal(out[1], 3 + 64 * p + 2 * f)


# ---------------------------------------------------------------- loops

@nki.jit
def fori_static(x):
    out = nl.ndarray((1, x.shape[1]), x.dtype, buffer=nl.shared_hbm)
    acc = nl.zeros((1, x.shape[1]), nl.float32)
    row = nl.ndarray((1, x.shape[1]), nl.float32)

    def body(i):
        nisa.dma_copy(dst=row, src=x.ap([[x.shape[1], 1], [1, x.shape[1]]],
                                        scalar_offset=i, indirect_dim=0))
        nisa.tensor_tensor(dst=acc, data1=acc, data2=row, op=nl.add)
    nl.fori_loop(1, x.shape[0], body, step=2)
    nisa.dma_copy(dst=out, src=acc)
    return out


@nki.jit
def fori_dynamic(x, ub):
    N = x.shape[1]
    out = nl.ndarray((1, N), nl.float32, buffer=nl.shared_hbm)
    u = nl.ndarray((1, 1), nl.int32)
    nisa.dma_copy(dst=u, src=ub)
    reg = nisa.register_alloc()
    nisa.register_load(reg, u)
    acc = nl.zeros((1, N), nl.float32)
    row = nl.ndarray((1, N), nl.float32)

    def body(i):
        nisa.dma_copy(dst=row, src=x.ap([[N, 1], [1, N]], scalar_offset=i, indirect_dim=0))
        nisa.tensor_tensor(dst=acc, data1=acc, data2=row, op=nl.add)
    nl.fori_loop(0, reg, body)
    nisa.dma_copy(dst=out, src=acc)
    return out


@nki.jit
def while_count(count, val):
    out = nl.ndarray((1, 2), nl.float32, buffer=nl.shared_hbm)
    v = nl.ndarray((1, 1), nl.float32)
    nisa.dma_copy(dst=v, src=val)
    acc = nl.zeros((1, 2), nl.float32)
    cnt = nl.ndarray((1, 1), nl.int32)
    nisa.dma_copy(dst=cnt, src=count)
    one = nl.ndarray((1, 1), nl.int32)
    nisa.memset(dst=one, value=1)
    reg = nisa.register_alloc()
    nisa.register_load(reg, cnt)
    seen = nisa.register_alloc(7)
    nisa.register_move(seen, reg)

    def body(r):
        nisa.tensor_tensor(dst=acc[:, 0:1], data1=acc[:, 0:1], data2=v, op=nl.add)
        nisa.tensor_tensor(dst=cnt, data1=cnt, data2=one, op=nl.subtract)
        nisa.register_load(r, cnt)
        return r
    nl.while_loop(reg, body)
    nisa.register_store(acc[:, 1:2], seen)
    nisa.dma_copy(dst=out, src=acc)
    return out


def test_fori_loop_static_and_dynamic():
    x = rand(9, 32)
    np.testing.assert_allclose(fori_static(x), x[1::2].sum(0, keepdims=True), rtol=1e-5)
    for ub in (0, 1, 6):
        np.testing.assert_allclose(fori_dynamic(x, np.array([[ub]], np.int32)),
                                   x[:ub].sum(0, keepdims=True), rtol=1e-5, atol=1e-6)


def test_while_loop_runs_count_times_and_not_at_zero():
    for n in (0, 1, 13):
        out = while_count(np.array([[n]], np.int32), np.array([[1.5]], np.float32))
        np.testing.assert_array_equal(out, [[1.5 * n, n]])
    from nkid._proto import nkir_pb2 as ir
    from nkid.tracer.pretty import format_kernel
    k = while_count.specialize((np.ones((1, 1), np.int32), np.ones((1, 1), np.float32)), {})
    assert ir.OP_DYN_LOOP in _kinds(k.kernel.body, set())
    assert "while while_cond" in format_kernel(k.kernel)


@nki.jit
def sequential_scan(x):
    P, F = x.shape
    out = nl.ndarray((P, F), nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((P, 1), nl.float32)
    res = nl.ndarray((P, F), nl.float32)
    t = nl.load(x)
    for i in nl.sequential_range(F):
        nisa.tensor_tensor(dst=acc, data1=acc, data2=t[:, i], op=nl.add)
        nisa.tensor_copy(dst=res[:, i], src=acc)
    with nl.no_reorder():
        nl.store(out, res)
    return out


@nki.jit
def cumulative(x):
    out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    r = nl.ndarray(x.shape, nl.float32)
    nisa.tensor_scalar_cumulative(dst=r, src=t, op0=nl.multiply, op1=nl.add, imm0=2.0,
                                  imm1=0.0)
    nl.store(out, r)
    return out


@nki.jit
def cumulative_ops(x):
    out = nl.ndarray((2,) + x.shape, nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    r = nl.ndarray(x.shape, nl.float32)
    nisa.tensor_scalar_cumulative(dst=r, src=t, op0=nl.add, op1=nl.subtract, imm0=1.0)
    nl.store(out[0], r)
    nisa.tensor_scalar_cumulative(dst=r, src=t, op0=nl.multiply, op1=nl.maximum, imm0=1.0,
                                  imm1=0.5, reduce_cmd=nisa.reduce_cmd.load_reduce)
    nl.store(out[1], r)
    return out


def test_sequential_range_and_cumulative():
    x = rand(16, 10)
    np.testing.assert_allclose(sequential_scan(x), np.cumsum(x, 1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(cumulative(x), np.cumsum(2 * x, 1), rtol=1e-5, atol=1e-5)
    out = cumulative_ops(x)
    reg = np.zeros(16, np.float32)
    mx = np.full(16, 0.5, np.float32)
    for i in range(10):
        reg = (x[:, i] + 1) - reg               # op1(op0(src[i], imm0), reg)
        mx = np.maximum(x[:, i], mx)
        np.testing.assert_allclose(out[0][:, i], reg, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(out[1][:, i], mx)


# ---------------------------------------------------------------- transposes, gathers, misc isa

@nki.jit
def transposes(x):
    P, F = x.shape
    out = nl.ndarray((2, F, P), x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    ps = nl.ndarray((F, P), nl.float32, buffer=nl.psum)
    nisa.nc_transpose(dst=ps, data=t)
    sb = nl.ndarray((F, P), x.dtype)
    nisa.tensor_copy(dst=sb, src=ps, engine=nisa.engine.vector)
    nl.store(out[0], sb)
    d = nl.ndarray((F, P), x.dtype)
    nisa.dma_transpose(dst=d, src=x)
    nl.store(out[1], d)
    return out


def test_transposes():
    x = rand(64, 32)
    out = transposes(x)
    np.testing.assert_array_equal(out[0], x.T)
    np.testing.assert_array_equal(out[1], x.T)


@nki.jit
def engine_aliases(x):
    P, F = x.shape
    out = nl.ndarray((3, F, P), x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    ps = nl.ndarray((F, P), x.dtype, buffer=nl.psum)
    nisa.nc_transpose(dst=ps, data=t, engine=nisa.tensor_engine)
    for i, eng in enumerate((nisa.scalar_engine, nisa.vector_engine)):
        sb = nl.ndarray((F, P), x.dtype)
        nisa.tensor_copy(dst=sb, src=ps, engine=eng)
        nl.store(out[i], sb)
    v = nl.ndarray((F, P), x.dtype)
    nisa.nc_transpose(dst=v, data=t[0:F, 0:P] if F == P else t, engine=nisa.vector_engine)
    g = nl.ndarray((F, P), x.dtype)
    nisa.tensor_scalar(dst=g, data=v, op0=nl.add, operand0=0.0, engine=nisa.gpsimd_engine)
    nl.store(out[2], g)
    return out


def test_engine_module_constants():
    """0.6's deprecated nisa.<name>_engine aliases (nki-library's
    mxfp_load_utils and conv1d pass engine=nisa.scalar_engine)."""
    assert nisa.tensor_engine == nisa.engine.tensor
    assert nisa.unknown_engine == nisa.engine.unknown
    x = rand(32, 32)
    out = engine_aliases(x)
    for i in range(3):
        np.testing.assert_array_equal(out[i], x.T)


@nki.jit
def optional_bias(x, bias=None):
    P, F = x.shape
    out = nl.ndarray((P, F), x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    has_bias = bias != None         # noqa: E711, as nki-library writes it
    if has_bias:
        b = nl.load(bias)
        nisa.tensor_tensor(dst=t, data1=t, data2=b, op=nl.add)
    if bias == None:                # noqa: E711
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
    nl.store(out, t)
    return out


def test_tensor_compared_with_none():
    """`t != None` / `t == None` on an optional tensor argument is a Python
    bool, as on 0.6's NkiTensor (no comparison operators), not an op."""
    x, b = rand(128, 64), rand(128, 64)
    np.testing.assert_allclose(optional_bias(x, b), x + b, rtol=1e-6)
    np.testing.assert_allclose(optional_bias(x), 2 * x, rtol=1e-6)


@nki.jit
def add_constant_file(x, path):
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    c = nl.load(nl.shared_constant(path))
    t = nl.load(x)
    nisa.tensor_tensor(dst=t, data1=t, data2=c, op=nl.add)
    nl.store(out, t)
    return out


def test_shared_constant_from_npy_file(tmp_path):
    """0.6: 'constant: ... a numpy array or a file path to a .npy file'
    (nki-library's rotational topk passes its rotation matrix's path)."""
    x, c = rand(32, 16), rand(32, 16)
    path = tmp_path / "c.npy"
    np.save(path, c)
    np.testing.assert_allclose(add_constant_file(x, str(path)), x + c, rtol=1e-6)
    c2 = rand(32, 16)
    np.save(path, c2)           # the same path, new values: traced again, not a stale trace
    np.testing.assert_allclose(add_constant_file(x, str(path)), x + c2, rtol=1e-6)
    np.testing.assert_allclose(add_constant_file(x, str(path)), x + c2, rtol=1e-6)
    with pytest.raises(NKIError, match="cannot read"):
        add_constant_file(x, str(tmp_path / "missing.npy"))


@nki.jit
def regroup(x):
    B, S, H = x.shape                              # (2, 8, 64)
    out = nl.ndarray((B, S, H), x.dtype, buffer=nl.shared_hbm)
    rows = x.reshape((B * S, H))                   # merges: a copy
    folded = rows.reshape((B * S * 2, H // 2))     # merges and splits at once
    t = nl.ndarray((B * S * 2, H // 2), x.dtype)
    nisa.dma_copy(dst=t, src=folded)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=3.0)
    o = out.reshape((B * S, H)).reshape((B * S * 2, H // 2))   # written: copied back
    nisa.dma_copy(dst=o, src=t)
    return out


def test_reshape_that_merges_and_splits_hbm():
    """[16, 64] -> [32, 32] of an HBM view (nki-library's cascaded max folds
    [B, N] into [B * f, N / f]): neither shape splits the other."""
    x = rand(2, 8, 64)
    np.testing.assert_allclose(regroup(x), 3 * x, rtol=1e-6)


def test_isa_constants_module_and_nki_dtype():
    """nki-library imports `from nki.isa import constants` and `from
    nki.isa.constants import oob_mode`, and annotates with nki.dtype."""
    import importlib
    c = importlib.import_module("nkid.nki06.isa.constants")
    assert c is nisa.constants
    assert c.dge_mode.hwdge is nisa.dge_mode.hwdge and c.oob_mode.skip is nisa.oob_mode.skip
    from nkid.nki06.isa.constants import engine
    assert engine is nisa.engine
    assert nki.dtype is nl.DType


@nki.jit
def shard_columns_ap(x):
    R, C = x.shape
    out = nl.ndarray((R, C), x.dtype, buffer=nl.shared_hbm)
    per = C // nl.num_programs(0)
    off = per * nl.program_id(0)                   # an offset of the program id
    t = nl.ndarray((R, per), x.dtype)
    nisa.dma_copy(dst=t, src=x.ap(pattern=[[C, R], [1, per]], offset=off))
    nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0)
    nisa.dma_copy(dst=out.ap(pattern=[[C, R], [1, per]], offset=off + 0), src=t)
    return out


def test_ap_offset_of_program_id():
    """.ap(offset=C_per_shard * program_id) (nki-library's
    find_nonzero_indices): the offset is affine in the program id."""
    x = rand(64, 32)
    np.testing.assert_allclose(shard_columns_ap[2](x), x + 1, rtol=1e-6)
    np.testing.assert_allclose(nki.simulate(shard_columns_ap[4])(x), x + 1, rtol=1e-6)


@nki.jit
def nonzero_3d(x):
    P, A, T = x.shape
    out = nl.ndarray((P, A * T + 1), nl.int32, buffer=nl.shared_hbm)
    t = nl.ndarray((P, A, T), nl.float32)
    nisa.dma_copy(dst=t, src=x)
    d = nl.ndarray((P, 1, A * T + 1), nl.int32)
    nisa.memset(dst=d, value=7)
    nisa.nonzero_with_count(dst=d, src=t, index_offset=3, padding_val=-1)
    nl.store(out, d.reshape((P, A * T + 1)))
    return out


def test_nonzero_with_count_free_dims():
    """nonzero_with_count counts a partition's free elements however many
    free dimensions hold them (0.6 asks dst one element more than src)."""
    x = (RNG.random((32, 2, 16)) < 0.4).astype(np.float32)
    out = nonzero_3d(x)
    for p in range(32):
        if p % 16:
            np.testing.assert_array_equal(out[p], 7)
            continue
        nz = np.nonzero(x[p].reshape(-1))[0] + 3
        want = np.full(33, -1, np.int64)
        want[:len(nz)] = nz
        want[32] = len(nz)
        np.testing.assert_array_equal(out[p], want)


@nki.jit
def misc_isa(x, idx):
    P, F = x.shape
    out = nl.ndarray((6, P, F), nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    ix = nl.load(idx)
    y = nl.ndarray((P, F), nl.float32)
    nisa.nc_n_gather(dst=y, data=t, indices=ix)
    nl.store(out[0], y)
    pred = nl.ndarray((P, F), nl.uint8)
    nisa.tensor_scalar(dst=pred, data=t, op0=nl.greater, operand0=0.0)
    nisa.memset(dst=y, value=-1.0)
    nisa.tensor_copy_predicated(dst=y, src=t, predicate=pred)
    nl.store(out[1], y)
    nisa.scalar_tensor_tensor(dst=y, data=t, op0=nl.multiply, operand0=3.0, op1=nl.add,
                              operand1=t)
    nl.store(out[2], y)
    red = nl.ndarray((P, 1), nl.float32)
    nisa.tensor_scalar_reduce(dst=y, data=t, op0=nl.add, operand0=1.0, reduce_op=nl.add,
                              reduce_res=red)
    nl.store(out[3], red.broadcast_to((P, F)))
    nisa.dma_compute(dst=y, srcs=[t, t, t], reduce_op=nl.add)
    nl.store(out[4], y)
    nisa.tensor_tensor_scan(dst=y, data0=t, data1=t, initial=0.0, op0=nl.multiply,
                            op1=nl.add)
    nl.store(out[5], y)
    return out


def test_misc_isa():
    x = rand(32, 16)
    idx = RNG.integers(0, 16, (32, 16)).astype(np.uint32)
    out = misc_isa(x, idx)
    np.testing.assert_array_equal(out[0], np.take_along_axis(x, idx.astype(np.int64), 1))
    np.testing.assert_array_equal(out[1], np.where(x > 0, x, -1))
    np.testing.assert_allclose(out[2], 4 * x, rtol=1e-6)
    np.testing.assert_allclose(out[3], np.repeat((x + 1).sum(1, keepdims=True), 16, 1),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[4], 3 * x, rtol=1e-6)
    ref = np.zeros_like(x)
    s = np.zeros(32, np.float32)
    for i in range(16):
        s = x[:, i] * s + x[:, i]
        ref[:, i] = s
    np.testing.assert_allclose(out[5], ref, rtol=1e-5, atol=1e-5)


@nki.jit
def top_values(x):
    P = x.shape[0]
    out = nl.ndarray((P, 16), nl.float32, buffer=nl.shared_hbm)
    idx = nl.ndarray((P, 16), nl.uint32, buffer=nl.shared_hbm)
    t = nl.load(x)
    v = nl.ndarray((P, 16), nl.float32)
    i = nl.ndarray((P, 16), nl.uint32)
    nisa.topk(val_dst=v, idx_dst=i, src=t, n=16)
    nl.store(out, v)
    nl.store(idx, i)
    m8 = nl.ndarray((P, 8), nl.float32)
    nisa.max8(dst=m8, src=t)
    f8 = nl.ndarray((P, 8), nl.uint32)
    nisa.nc_find_index8(dst=f8, data=t, vals=m8)
    r = nl.ndarray(x.shape, nl.float32)
    nisa.nc_match_replace8(dst=r, data=t, vals=m8, imm=0.0)
    return out, idx


def test_topk():
    x = RNG.permutation(64 * 40).reshape(64, 40).astype(np.float32)
    v, i = top_values(x)
    np.testing.assert_array_equal(v, -np.sort(-x, 1)[:, :16])
    np.testing.assert_array_equal(np.take_along_axis(x, i.astype(np.int64), 1), v)


@nki.jit
def random_bits(x):
    out = nl.ndarray((2,) + x.shape, nl.float32, buffer=nl.shared_hbm)
    seed = nl.ndarray((1, 1), nl.int32)
    nisa.memset(dst=seed, value=5)
    nisa.set_rng_seed(seed)
    state = nl.ndarray((128, 6), nl.uint32)
    nisa.memset(dst=state, value=5)
    nisa.rand_set_state(state)
    y = nl.ndarray(x.shape, nl.float32)
    nisa.rand2(dst=y, min=-2.0, max=3.0)
    nl.store(out[0], y)
    bits = nl.ndarray(x.shape, nl.uint16)
    nisa.rng(dst=bits)
    nl.store(out[1], nl.copy(bits, dtype=nl.float32))
    d = nl.ndarray(x.shape, nl.float32)
    nisa.dropout(dst=d, data=nl.load(x), prob=0.0)
    return out


def test_random_ranges():
    out = random_bits(np.ones((64, 128), np.float32))
    assert out[0].min() >= -2 and out[0].max() < 3 and out[0].std() > 1
    assert out[1].min() >= 0 and out[1].max() < 2 ** 16 and np.all(out[1] == np.floor(out[1]))
    assert out[1].max() > 2 ** 15 and len(np.unique(out[1])) > 1000
    again = random_bits(np.ones((64, 128), np.float32))
    np.testing.assert_array_equal(out, again)


# ---------------------------------------------------------------- collectives on one rank

@nki.jit
def one_rank(x):
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    tmp = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    ncc.all_reduce([x], [tmp], ncc.ReplicaGroup([[0]]), op=nl.add)
    ncc.all_gather([tmp], [out], [[0]], collective_dim=0)
    r = ncc.rank_id()
    sb = nl.ndarray((1, 1), nl.int32)
    nisa.register_store(sb, r)
    return out


def test_collectives_one_rank():
    x = rand(8, 16)
    np.testing.assert_array_equal(one_rank(x), x)


def test_collective_other_rank_refused():
    @nki.jit
    def two(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        ncc.all_reduce([x], [out], ncc.ReplicaGroup([[0, 1]]), op=nl.add)
        return out
    with pytest.raises(NKIError, match=r"one rank \(rank 0\).*test_nki06.py:\d+"):
        two(rand(8, 16))


# ---------------------------------------------------------------- precision and simulator switch

@nki.jit
def to_bf16(x):
    out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, nl.bfloat16)
    nisa.dma_copy(dst=t, src=x)
    u = nl.ndarray(x.shape, nl.bfloat16)
    nisa.tensor_scalar(dst=u, data=t, op0=nl.multiply, operand0=1.0)
    nisa.dma_copy(dst=out, src=u)
    return out


def test_simulate_precise_by_default(monkeypatch):
    x = (1 + RNG.random((4, 8)) * 1e-3).astype(np.float32)
    bf = x.astype(ml_dtypes.bfloat16).astype(np.float32)
    monkeypatch.delenv("NKI_PRECISE_FP", raising=False)
    np.testing.assert_array_equal(nki.simulate(to_bf16)(x), bf)
    monkeypatch.setenv("NKI_PRECISE_FP", "0")
    np.testing.assert_array_equal(nki.simulate(to_bf16)(x), x)
    monkeypatch.setenv("NKI_SIMULATOR", "1")
    np.testing.assert_array_equal(to_bf16(x), x)          # nki.jit -> simulate


def test_same_kernel_in_both_languages_keyed_apart():
    """One function traced by the legacy door and by the 0.6 door gets two
    traces (the memo keys the doors apart)."""
    from nkid import nki as legacy

    def k(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.exp(nl.load(a)))
        return out
    x = rand(4, 8)
    np.testing.assert_allclose(nki.jit(k)(x), np.exp(x), rtol=1e-6)
    with pytest.raises(NKIError, match="legacy"):
        legacy.baremetal(k)(x)
    assert isinstance(nki.jit(k), nki.Kernel)


# ---------------------------------------------------------------- loops: unrolled or NKIR loops

def _fresh(kernel):
    """A new nki.jit kernel of a copy of kernel's function (not memoized)."""
    import types
    f = kernel.func
    return nki.jit(types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__,
                                      f.__closure__))


def _kinds(ops, out):
    for op in ops:
        out.add(op.kind)
        _kinds(op.loop.body, out)
    return out


_kinds.__doc__ = "The op kinds of a body, loops' bodies included."


def test_python_loop_semantics_counter():
    """NKI 0.6 evaluates loops as Python does: a Python counter advances
    every trip of an affine_range."""
    @nki.jit
    def k(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        off = 0
        for i in nl.affine_range(x.shape[0] // 8):
            nl.store(out[off:off + 8, :], nl.exp(nl.load(x[i * 8:(i + 1) * 8, :])))
            off += 8
        return out
    x = rand(32, 16)
    np.testing.assert_allclose(k(x), np.exp(x), rtol=1e-6)


def test_large_trip_counts_trace_nkir_loops(monkeypatch):
    """Past UNROLL_TRIPS loop trips a kernel's loops are traced once each
    into NKIR loops; the results are the same."""
    from nkid._proto import nkir_pb2 as ir

    lhsT, rhs = rand(512, 256), rand(512, 1024)
    small = _fresh(matmul_tiled)
    kinds = _kinds(small.specialize((lhsT, rhs), {}, memo=False).kernel.body, set())
    assert ir.OP_LOOP not in kinds and ir.OP_MATMUL in kinds
    monkeypatch.setattr(nki, "UNROLL_OPS", 10)         # too many ops unrolled
    kinds = _kinds(_fresh(matmul_tiled).specialize((lhsT, rhs), {}, memo=False).kernel.body,
                   set())
    assert ir.OP_LOOP in kinds
    monkeypatch.setattr(nki, "UNROLL_TRIPS", 2)
    big = _fresh(matmul_tiled)
    kinds = _kinds(big.specialize((lhsT, rhs), {}, memo=False).kernel.body, set())
    assert ir.OP_LOOP in kinds
    np.testing.assert_allclose(big(lhsT, rhs), lhsT.T @ rhs, rtol=1e-4, atol=1e-3)
    a, b = rand(1024, 128), rand(1024, 256)
    np.testing.assert_allclose(_fresh(matmul_two_loop_group)(a, b), a.T @ b,
                               rtol=1e-4, atol=1e-3)
    a, b = rand(512, 256), rand(512, 1024)
    np.testing.assert_allclose(_fresh(matmul_psum_outside)(a, b), a.T @ b,
                               rtol=1e-4, atol=1e-3)
    x = rand(9, 32)
    np.testing.assert_allclose(_fresh(fori_static)(x), x[1::2].sum(0, keepdims=True),
                               rtol=1e-5)
    lhsT, rhs = rand(384, 128), rand(384, 256)
    np.testing.assert_allclose(_fresh(matmul_hoisted)(lhsT, rhs), lhsT.T @ rhs,
                               rtol=1e-4, atol=1e-3)


def test_named_instructions_and_schedule():
    @nki.jit()
    def k(t):
        x = nl.ndarray(t.shape, t.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x, src=t)
        a = nl.ndarray(t.shape, t.dtype, buffer=nl.sbuf)
        b = nl.ndarray(t.shape, t.dtype, buffer=nl.sbuf)
        c = nl.ndarray(t.shape, t.dtype, buffer=nl.sbuf)
        ia = nisa.reciprocal(dst=a, data=x, name="recip")
        ib = nisa.tensor_scalar(dst=b, data=x, op0=nl.add, operand0=1, name="plus1")
        assert isinstance(ib, nisa.NkiInstruction) and ib.depends_on(ia) is ib
        nisa.tensor_tensor(dst=c, data1=a, data2=b, op=nl.add)
        out = nl.ndarray(t.shape, t.dtype, buffer=nl.hbm)
        nisa.dma_copy(dst=out, src=c)
        return out
    x = rand(16, 8) + 4
    s = k.with_schedule([("plus1", "recip")]).with_schedule([("plus1", ["recip"])])
    assert s.schedule == [("plus1", ("recip",)), ("plus1", ("recip",))]
    np.testing.assert_allclose(s(x), 1 / x + x + 1, rtol=1e-5)
    with pytest.raises(ValueError, match="pairs"):
        k.with_schedule(["plus1"])


def test_jit_kernel_called_from_a_kernel_runs_inline():
    @nki.jit
    def inner(t, out):
        nisa.activation(dst=t, op=nl.exp, data=t)
        nisa.dma_copy(dst=out, src=t)

    def helper(t):
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)

    @nki.jit
    def outer(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        helper(t)
        inner(t, out)
        return out
    x = rand(8, 16)
    np.testing.assert_allclose(outer(x), np.exp(2 * x), rtol=1e-5)


@nki.jit
def deprecated_dynamic_loops(x, count):
    """NKI 0.5's forms, deprecated (not removed) in 0.6: ``for i in
    nl.dynamic_range(reg)`` and ``while reg:``."""
    N = x.shape[1]
    out = nl.ndarray((2, N), nl.float32, buffer=nl.shared_hbm)
    c = nl.ndarray((1, 1), nl.int32)
    nisa.dma_copy(dst=c, src=count)
    ub = nisa.register_alloc()
    nisa.register_load(ub, c)
    acc = nl.zeros((2, N), nl.float32)
    row = nl.ndarray((1, N), nl.float32)
    for i in nl.dynamic_range(ub):
        nisa.dma_copy(dst=row, src=x.ap([[N, 1], [1, N]], scalar_offset=i, indirect_dim=0))
        nisa.tensor_tensor(dst=acc[0:1, :], data1=acc[0:1, :], data2=row, op=nl.add)
    one = nl.ndarray((1, 1), nl.int32)
    nisa.memset(dst=one, value=1)
    reg = nisa.register_alloc()
    nisa.register_load(reg, c)
    while reg:
        nisa.tensor_scalar(dst=acc[1:2, :], data=acc[1:2, :], op0=nl.add, operand0=1.0)
        nisa.tensor_tensor(dst=c, data1=c, data2=one, op=nl.subtract)
        nisa.register_load(reg, c)
    nisa.dma_copy(dst=out, src=acc)
    return out


def test_deprecated_dynamic_range_and_while():
    x = rand(8, 16)
    for n in (0, 3, 8):
        out = deprecated_dynamic_loops(x, np.array([[n]], np.int32))
        np.testing.assert_allclose(out[0], x[:n].sum(0), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(out[1], n)


@nki.jit
def psum_banks(a, b):
    """A PSUM tensor of four banks, (P, 4, 512) float32, each bank a
    matmul's destination."""
    out = nl.ndarray((128, 2048), nl.float32, buffer=nl.shared_hbm)
    ta = nl.load(a)
    ps = nl.ndarray((128, 4, 512), nl.float32, buffer=nl.psum)
    for i in nl.affine_range(4):
        tb = nl.load(b[:, i * 512:(i + 1) * 512])
        nisa.nc_matmul(ps[:, i, :], ta, tb)
    sb = nl.ndarray((128, 4, 512), nl.float32)
    nisa.tensor_copy(dst=sb, src=ps)
    nl.store(out, sb.reshape((128, 2048)))
    return out


def test_psum_tensor_of_several_banks():
    a, b = rand(128, 128), rand(128, 2048)
    np.testing.assert_allclose(psum_banks(a, b), a.T @ b, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(_fresh(psum_banks)(a, b), a.T @ b, rtol=1e-4, atol=1e-3)


def test_matmul_transpose_mode():
    @nki.jit
    def k(a):
        out = nl.ndarray((a.shape[1], a.shape[0]), nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        ident = nl.ndarray((a.shape[0], a.shape[0]), nl.float32)
        nisa.dma_copy(dst=ident, src=nl.shared_identity_matrix(a.shape[0], dtype=nl.float32))
        ps = nl.ndarray((a.shape[1], a.shape[0]), nl.float32, buffer=nl.psum)
        nisa.nc_matmul(ps, t, ident, is_transpose=True)
        nl.store(out, nl.copy(ps))
        return out
    x = rand(64, 96)
    x[3, 5] = np.nan
    out = k(x)
    np.testing.assert_array_equal(out, x.T)     # NaN stays where it was, nowhere else


@nki.jit
def identity_in_sbuf(x):
    d, F = x.shape
    out = nl.ndarray((2, d, F), nl.float32, buffer=nl.shared_hbm)
    ident = nl.shared_identity_matrix(d, dtype=nl.float32)
    # the even then odd columns of the identity, as nki-library's RoPE
    # builds its interleave permutation (core/embeddings/rope.py)
    perm = nl.ndarray((d, d), nl.float32)
    nisa.tensor_copy(dst=perm.reshape((d, 2, d // 2)),
                     src=ident.ap(pattern=[[d, d], [1, 2], [2, d // 2]]))
    t = nl.load(x)
    for i, m in enumerate((ident, perm)):
        ps = nl.ndarray((d, F), nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=ps, stationary=m, moving=t)
        sb = nl.ndarray((d, F), nl.float32)
        nisa.tensor_copy(dst=sb, src=ps)
        nl.store(out[i], sb)
    return out


def test_shared_identity_matrix_is_an_sbuf_tile():
    """0.6: "Create an identity matrix in SBUF" (nl.shared_identity_matrix)."""
    x = rand(64, 96)
    out = identity_in_sbuf(x)
    np.testing.assert_allclose(out[0], x, rtol=1e-6)
    p = np.eye(64, dtype=np.float32).reshape(64, 32, 2).transpose(0, 2, 1).reshape(64, 64)
    np.testing.assert_allclose(out[1], p.T @ x, rtol=1e-6)


def _bf16_matmul(a, b):
    ta = nl.ndarray(a.shape, a.dtype)
    tb = nl.ndarray(b.shape, b.dtype)
    nisa.dma_copy(dst=ta, src=a)
    nisa.dma_copy(dst=tb, src=b)
    ps = nl.ndarray((a.shape[1], b.shape[1]), nl.bfloat16, buffer=nl.psum)
    nisa.nc_matmul(ps, ta, tb)
    r = nl.ndarray(ps.shape, nl.bfloat16)
    nisa.tensor_copy(dst=r, src=ps)
    out = nl.ndarray(ps.shape, nl.bfloat16, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=r)
    return out


def test_matmul_bfloat16_dst_from_neuroncore_v4(monkeypatch):
    """nc_matmul's dst is float32 up to NeuronCore-v3 and float32 or
    bfloat16 from v4 (trn3, the default target): the fp32 sum rounded once."""
    a = rand(128, 64).astype(ml_dtypes.bfloat16)
    b = rand(128, 32).astype(ml_dtypes.bfloat16)
    want = (a.astype(np.float32).T @ b.astype(np.float32)).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(nki.jit(_bf16_matmul)(a, b), want)
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2")
    with pytest.raises(Exception, match="Expected operand 'dst' of 'matmul' to have dtype"
                       " float32, but got bfloat16 instead"):
        nki.jit(_bf16_matmul)(a, b)


def test_dma_copy_between_layouts():
    @nki.jit
    def k(a):
        out = nl.ndarray((4, 32, 16), a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((32, 64), a.dtype)
        nisa.dma_copy(dst=t, src=a)                  # HBM [2048] -> [32, 64]
        nisa.dma_copy(dst=out, src=t)                # [32, 64] -> HBM [4, 32, 16]
        return out
    x = rand(2048)
    np.testing.assert_array_equal(k(x), x.reshape(4, 32, 16))


def test_language_positional_dtype():
    @nki.jit
    def k(a, b):
        out = nl.ndarray((3,) + a.shape, nl.float32, buffer=nl.shared_hbm)
        x, y = nl.load(a, nl.float32), nl.load(b)
        nl.store(out[0], nl.add(x, y, nl.float32))
        nl.store(out[1], nl.exp(x, nl.float32))
        nl.store(out[2], nl.sum(x, 1, nl.float32, True).broadcast_to(a.shape))
        t = nl.ndarray(a.shape, nl.float32)
        nisa.tensor_tensor(dst=t, data1=x, data2=y, op=nl.add)       # still an ALU op
        nisa.activation(dst=t, op=nl.exp, data=x)                    # and an activation
        return out
    a, b = rand(4, 8), rand(4, 8)
    out = k(a, b)
    np.testing.assert_allclose(out[0], a + b, rtol=1e-6)
    np.testing.assert_allclose(out[1], np.exp(a), rtol=1e-6)
    np.testing.assert_allclose(out[2], np.repeat(a.sum(1, keepdims=True), 8, 1), rtol=1e-5)


def test_jax_arrays_in_and_out():
    """nki.jit and nki.simulate on JAX arrays: nkid runs the kernel on host
    copies and hands the results back as JAX arrays."""
    jnp = pytest.importorskip("jax.numpy")
    x = jnp.asarray(rand(4, 8))
    for call in (add_spmd[1, 1], nki.simulate(add_spmd[1, 1])):
        out = call(jnp.zeros((128, 256), jnp.float32), jnp.ones((128, 256), jnp.float32))
        assert type(out).__module__.startswith("jax")
        np.testing.assert_array_equal(np.asarray(out), 1.0)
    out = softmax_language(x)
    np.testing.assert_allclose(np.asarray(out), np_softmax(np.asarray(x)), rtol=1e-5)


@nki.jit
def writes_input_and_returns(a, scratch):
    """Returns an output and also writes its second argument."""
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    nl.store(scratch, nl.exp(t))
    nl.store(out, nl.add(t, 1.0))
    return out


def test_written_inputs_copied_back():
    x = rand(8, 16)
    for call in (writes_input_and_returns, nki.simulate(writes_input_and_returns)):
        for _ in range(3):                       # warm calls too
            s = np.zeros_like(x)
            out = call(x, s)
            np.testing.assert_allclose(out, x + 1, rtol=1e-6)
            np.testing.assert_allclose(s, np.exp(x), rtol=1e-6)


def test_matmul_interleaved_groups():
    """Two accumulation groups into two halves of one PSUM tile, their
    matmuls interleaved (an unrolled k loop around an n loop)."""
    @nki.jit
    def k(lhsT, rhs):
        K, M = lhsT.shape
        out = nl.ndarray((M, 512), nl.float32, buffer=nl.shared_hbm)
        ps = nl.ndarray((M, 512), nl.float32, buffer=nl.psum)
        for kk in range(K // 128):
            lt = nl.load(lhsT[kk * 128:(kk + 1) * 128, :])
            for n in range(2):
                rt = nl.load(rhs[kk * 128:(kk + 1) * 128, n * 256:(n + 1) * 256])
                nisa.nc_matmul(ps[:, n * 256:(n + 1) * 256], lt, rt)
        nl.store(out, nl.copy(ps))
        return out
    a, b = rand(384, 64), rand(384, 512)
    np.testing.assert_allclose(k(a, b), a.T @ b, rtol=1e-4, atol=1e-3)
