"""nki.isa element-wise instructions beyond tensor_tensor/tensor_scalar:
tensor_tensor_scan, scalar_tensor_tensor, tensor_copy_predicated, dropout,
affine_select and sequence_bounds, against numpy, with their limits."""

import numpy as np
import pytest

import nkid
from nkid import nki
import nkid.nki.isa as nisa
import nkid.nki.language as nl

from isa_helpers import rng, tile_kernel, assert_refused


# ---------------------------------------------------------------- scan

def scan_ref(a, b, init, op0, op1):
    out = np.empty(a.shape, np.float64)
    s = np.broadcast_to(np.asarray(init, np.float64).reshape(-1), (a.shape[0],)).copy()
    for i in range(a.shape[1]):
        s = op1(op0(a[:, i], s), b[:, i])
        out[:, i] = s
    return out


@nki.jit
def decay_scan(a, b):
    """h[i] = a[i] * h[i-1] + b[i] over two chunks, the second starting from
    the first's last column (a selective-scan recurrence)."""
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    ta = nl.load(a)
    tb = nl.load(b)
    h = nl.ndarray(a.shape, dtype=nl.float32)
    half = a.shape[1] // 2
    h[:, 0:half] = nisa.tensor_tensor_scan(ta[:, 0:half], tb[:, 0:half], initial=0.0,
                                           op0=np.multiply, op1=np.add)
    h[:, half:] = nisa.tensor_tensor_scan(ta[:, half:], tb[:, half:],
                                          initial=h[:, half - 1], op0=np.multiply,
                                          op1=np.add)
    nl.store(out, h)
    return out


def test_tensor_tensor_scan_recurrence(nkid_socket):
    g = rng(1)
    a = g.uniform(0.5, 1.0, (128, 256)).astype(np.float32)
    b = g.standard_normal((128, 256)).astype(np.float32)
    ref = scan_ref(a, b, 0.0, np.multiply, np.add)
    np.testing.assert_allclose(decay_scan(a, b), ref, rtol=1e-4, atol=1e-4)


@nki.jit
def running_max_minus(a, b, init):
    """s = max(s, a[i]) - b[i] with reversed operands of the subtract."""
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, nisa.tensor_tensor_scan(nl.load(a), nl.load(b), nl.load(init),
                                          np.maximum, np.subtract, reverse1=True))
    return out


def test_tensor_tensor_scan_other_ops(nkid_socket):
    g = rng(2)
    a = g.standard_normal((40, 64)).astype(np.float32)
    b = g.standard_normal((40, 64)).astype(np.float32)
    init = g.standard_normal((40, 1)).astype(np.float32)
    ref = scan_ref(a, b, init, np.maximum, lambda t, c: c - t)
    np.testing.assert_allclose(running_max_minus(a, b, init), ref, rtol=1e-5, atol=1e-5)


def test_tensor_tensor_scan_bad_initial(nkid_socket):
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        nl.store(out, nisa.tensor_tensor_scan(t, t, t, np.multiply, np.add))
        return out

    with pytest.raises(nkid.NKIError,
                       match=r"'initial' of 'tensor_tensor_scan' must be a scalar or a tile "
                             r"of shape \(8, 1\), got a tile of shape \[8, 4\]"):
        k(np.zeros((8, 4), np.float32))


def test_tensor_tensor_scan_not_both_psum(nkid_socket):
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        p = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.psum)
        p[...] = nl.load(a)
        nl.store(out, nisa.tensor_tensor_scan(p, p, 0.0, np.multiply, np.add))
        return out

    with pytest.raises(nkid.NkidError,
                       match="'data0' and 'data1' of 'tensor_tensor_scan' cannot both be in "
                             "PSUM"):
        k(np.zeros((8, 4), np.float32))


# ---------------------------------------------------------------- scalar_tensor_tensor

@nki.jit
def centered_product(x, m, y):
    """(x - m[p]) * y and (m[p] / x) + y in one instruction each."""
    o1 = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    o2 = nl.ndarray(x.shape, dtype=nl.bfloat16, buffer=nl.shared_hbm)
    tx, tm, ty = nl.load(x), nl.load(m), nl.load(y)
    nl.store(o1, nisa.scalar_tensor_tensor(data=tx, op0=np.subtract, operand0=tm,
                                           op1=np.multiply, operand1=ty))
    nl.store(o2, nisa.scalar_tensor_tensor(data=tx, op0=np.divide, operand0=tm,
                                           reverse0=True, op1=np.add, operand1=ty,
                                           dtype=nl.bfloat16))
    return o1, o2


def test_scalar_tensor_tensor(nkid_socket):
    g = rng(3)
    x = g.uniform(1, 2, (128, 96)).astype(np.float32)
    m = g.standard_normal((128, 1)).astype(np.float32)
    y = g.standard_normal((128, 96)).astype(np.float32)
    o1, o2 = centered_product(x, m, y)
    np.testing.assert_allclose(o1, (x - m) * y, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(o2.astype(np.float32), m / x + y, rtol=1e-2, atol=1e-2)


def test_scalar_tensor_tensor_operand1_shape(nkid_socket):
    k = tile_kernel(lambda t: nisa.scalar_tensor_tensor(data=t, op0=np.add, operand0=1.0,
                                                        op1=np.add, operand1=t[:, 0:2]),
                    dtype=nl.float32)
    assert_refused(k, nkid.NKIError, "'operand1' \\[8, 2\\] of 'scalar_tensor_tensor'"
                   " must have the same number of partitions", np.zeros((8, 4), np.float32))


# ---------------------------------------------------------------- predicated copy

@nki.jit
def copy_where(src, pred, dst0):
    out = nl.ndarray(src.shape, dtype=src.dtype, buffer=nl.shared_hbm)
    d = nl.load(dst0)
    nisa.tensor_copy_predicated(src=nl.load(src), dst=d, predicate=nl.load(pred))
    nl.store(out, d)
    return out


@nki.jit
def fill_where_not(pred, dst0):
    out = nl.ndarray(dst0.shape, dtype=dst0.dtype, buffer=nl.shared_hbm)
    d = nl.load(dst0)
    nisa.tensor_copy_predicated(src=7.5, dst=d, predicate=nl.load(pred), reverse_pred=True)
    nl.store(out, d)
    return out


def test_tensor_copy_predicated(nkid_socket):
    g = rng(4)
    src = g.standard_normal((128, 80)).astype(np.float32)
    dst = g.standard_normal((128, 80)).astype(np.float32)
    pred = g.integers(0, 2, (128, 80)).astype(np.uint8)
    np.testing.assert_array_equal(copy_where(src, pred, dst), np.where(pred != 0, src, dst))
    np.testing.assert_array_equal(fill_where_not(pred, dst), np.where(pred == 0, 7.5, dst))
    # a bool predicate (stored as uint8 bytes) is accepted too
    bpred = pred.astype(np.bool_)
    np.testing.assert_array_equal(copy_where(src, bpred, dst), np.where(bpred, src, dst))


def test_tensor_copy_predicated_limits(nkid_socket):
    x = np.zeros((8, 4), np.float32)
    with pytest.raises(nkid.NkidError, match="'predicate' of 'tensor_copy_predicated' must "
                                             "be uint8, uint16 or uint32, got float32"):
        copy_where(x, x, x)
    with pytest.raises(nkid.NkidError, match="must share the same data type"):
        copy_where(x.astype(np.float16), x.astype(np.uint8), x)


# ---------------------------------------------------------------- dropout

@nki.jit
def drop(x, rate):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nisa.dropout(nl.load(x), prob=rate))
    return out


@nki.jit
def drop_rows(x, rates):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nisa.dropout(nl.load(x), prob=nl.load(rates)))
    return out


def test_dropout_rates_and_reproducibility(nkid_socket):
    x = rng(5).uniform(1, 2, (128, 512)).astype(np.float32)
    y = drop(x, 0.3)
    kept = y != 0
    np.testing.assert_array_equal(y[kept], x[kept])
    assert abs(1 - kept.mean() - 0.3) < 0.01
    np.testing.assert_array_equal(drop(x, 0.3), y)           # same stream every run
    np.testing.assert_array_equal(drop(x, 0.0), x)
    assert not drop(x, 1.0).any()
    rates = np.linspace(0, 1, 128, dtype=np.float32).reshape(128, 1)
    z = drop_rows(x, rates)
    frac = (z == 0).mean(axis=1)
    assert frac[0] == 0 and frac[-1] == 1
    assert np.abs(frac - rates[:, 0]).max() < 0.1


def test_dropout_limits(nkid_socket):
    x = np.ones((8, 4), np.float32)
    with pytest.raises(nkid.NKIError, match="prob of 'dropout' must be between 0.0 and 1.0"):
        drop(x, 1.5)
    with pytest.raises(nkid.NkidError, match="'prob' of 'dropout' must be float32 for integer"
                                             " data, got bfloat16"):
        drop_rows(np.ones((8, 4), np.int32), np.ones((8, 1), nl.bfloat16))


# ---------------------------------------------------------------- affine_select

@nki.jit
def causal(x):
    """Keep the lower triangle (key <= query) of [128, 128] score tiles."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    iq = nl.arange(128)[:, None]
    ik = nl.arange(128)[None, :]
    for t in nl.affine_range(x.shape[0] // 128):
        s = nl.load(x[t * 128 + iq, ik])
        nl.store(out[t * 128 + iq, ik],
                 nisa.affine_select(pred=(t * 128 + iq >= ik + 64), on_true_tile=s,
                                    on_false_value=-9984.0))
    return out


def test_affine_select_causal_with_loop_offset(nkid_socket):
    x = rng(6).standard_normal((256, 128)).astype(np.float32)
    q = np.arange(256)[:, None]
    k = np.arange(128)[None, :]
    np.testing.assert_array_equal(causal(x), np.where(q >= k + 64, x, np.float32(-9984.0)))


def _select_8x4(pred):
    """A kernel keeping the elements of an [8, 4] x where pred(i, j) holds
    (i, j: the partition and free indices), 0.0 elsewhere."""
    def compute(t):
        i = nl.arange(8)[:, None]
        j = nl.arange(4)[None, :]
        return nisa.affine_select(pred=pred(i, j), on_true_tile=t, on_false_value=0.0)
    return tile_kernel(compute)


def test_affine_select_one_comparison_only(nkid_socket):
    assert_refused(_select_8x4(lambda i, j: (i > j) & (i < 6)), nkid.NKIError,
                   "it can't be multiple masks combined", np.zeros((8, 4), np.float32))


def test_affine_select_int32_is_refused(nkid_socket):
    assert_refused(_select_8x4(lambda i, j: i > j), nkid.NkidError,
                   "must be a float or 8-bit/16-bit integer tile, got int32",
                   np.zeros((8, 4), np.int32))


# ---------------------------------------------------------------- sequence_bounds

def bounds_ref(ids):
    n = ids.shape[1]
    lo = np.zeros(n)
    hi = np.zeros(n)
    x = ids[0]
    for i in range(n):
        lo[i] = n if x[i] == 0 else (lo[i - 1] if i and x[i] == x[i - 1] else i)
    for i in range(n - 1, -1, -1):
        hi[i] = -1 if x[i] == 0 else (hi[i + 1] if i < n - 1 and x[i] == x[i + 1] else i + 1)
    return np.stack([lo, hi])[None]


@nki.jit
def segments(ids):
    out = nl.ndarray((1, 2, ids.shape[1]), dtype=ids.dtype, buffer=nl.shared_hbm)
    nl.store(out, nisa.sequence_bounds(segment_ids=nl.load(ids)))
    return out


def test_sequence_bounds(nkid_socket):
    ids = np.array([[0, 1, 1, 1, 2, 2, 0, 0, 3, 4, 4, 0, 5]], np.float32)
    np.testing.assert_array_equal(segments(ids), bounds_ref(ids))
    ids32 = np.sort(rng(7).integers(0, 6, (1, 64))).astype(np.int32)
    np.testing.assert_array_equal(segments(ids32), bounds_ref(ids32))


def test_sequence_bounds_one_partition(nkid_socket):
    with pytest.raises(nkid.NKIError, match="the partition dimension must always be 1"):
        segments(np.zeros((2, 8), np.float32))
    with pytest.raises(nkid.NkidError, match="'segment_ids' of 'sequence_bounds' must be "
                                             "float32 or int32, got float16"):
        segments(np.zeros((1, 8), np.float16))


# ---------------------------------------------------------------- copies, reciprocal

@nki.jit
def copies(x):
    """tensor_copy on each engine that copies, and reciprocal."""
    out = nl.ndarray((x.shape[0], 4 * x.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    w = x.shape[1]
    nl.store(out[:, 0:w], nisa.tensor_copy(t, engine=nisa.vector_engine))
    nl.store(out[:, w:2 * w], nisa.tensor_copy(t, engine=nisa.scalar_engine))
    nl.store(out[:, 2 * w:3 * w], nisa.tensor_copy(t, dtype=nl.bfloat16,
                                                   engine=nisa.gpsimd_engine))
    nl.store(out[:, 3 * w:4 * w], nisa.reciprocal(t))
    return out


def test_tensor_copy_engines_and_reciprocal(nkid_socket):
    import ml_dtypes
    x = rng(8).uniform(0.5, 2, (64, 16)).astype(np.float32)
    out = copies(x)
    np.testing.assert_array_equal(out[:, :16], x)
    np.testing.assert_array_equal(out[:, 16:32], x)
    np.testing.assert_array_equal(out[:, 32:48], x.astype(ml_dtypes.bfloat16).astype(np.float32))
    np.testing.assert_allclose(out[:, 48:], 1 / x, rtol=1e-6)
