"""nki.isa instructions that reduce, with the engines' accumulator registers:
activation (reduce_cmd, reduce_res), activation_reduce, tensor_scalar_reduce,
tensor_partition_reduce, range_select and select_reduce, each against
numpy, and their documented limits."""

import numpy as np
import pytest

import nkid
from nkid import nki
import nkid.nki.isa as nisa
import nkid.nki.language as nl

from isa_helpers import rng, tile_kernel, row_reduced, assert_refused

FP32_MIN = np.finfo(np.float32).min


# ---------------------------------------------------------------- activation

@nki.jit
def exp_row_sums(x):
    """exp(x - 1) and its row sums through activation_reduce."""
    bias = nl.full((x.shape[0], 1), -1.0, nl.float32)
    return row_reduced(x, lambda r: nisa.activation_reduce(op=nl.exp, data=nl.load(x), bias=bias,
                                                           reduce_op=nl.add, reduce_res=r))


def test_activation_reduce_sums_each_partition(nkid_socket):
    x = rng().standard_normal((128, 300)).astype(np.float32)
    y, s = exp_row_sums(x)
    ref = np.exp(x - 1.0)
    np.testing.assert_allclose(y, ref, rtol=1e-5)
    np.testing.assert_allclose(s[:, 0], ref.sum(axis=1), rtol=1e-4)


@nki.jit(platform_target="trn2")
def chained_max(x):
    """The scalar engine's registers across three activations: reset, then
    two that accumulate, read out at the end; the tiles are written whole
    (max needs NeuronCore-v3: on v2 the registers only add)."""
    out = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.shared_hbm)
    ys = nl.ndarray((x.shape[0], 3 * 64), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    acc = nl.ndarray((x.shape[0], 1), dtype=nl.float32)
    y = nl.ndarray((x.shape[0], 3 * 64), dtype=nl.float32)
    y[:, 0:64] = nisa.activation(nl.square, t[:, 0:64], reduce_op=nl.max,
                                 reduce_cmd=nisa.reduce_cmd.reset_reduce)
    y[:, 64:128] = nisa.activation(nl.square, t[:, 64:128], reduce_op=nl.max,
                                   reduce_cmd=nisa.reduce_cmd.reduce)
    y[:, 128:192] = nisa.activation(nl.square, t[:, 128:192], reduce_op=nl.max,
                                    reduce_cmd=nisa.reduce_cmd.reduce, reduce_res=acc)
    nl.store(out, acc)
    nl.store(ys, y)
    return out, ys


def test_activation_accumulates_across_instructions(nkid_socket):
    x = rng(1).standard_normal((64, 192)).astype(np.float32)
    m, y = chained_max(x)
    np.testing.assert_allclose(y, x * x, rtol=1e-6)
    np.testing.assert_allclose(m[:, 0], (x * x).max(axis=1), rtol=1e-6)


def test_activation_reduce_add_only_on_neuroncore_v2(nkid_socket):
    @nki.jit
    def k(x):
        out = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.shared_hbm)
        r = nl.ndarray((x.shape[0], 1), dtype=nl.float32)
        nisa.activation_reduce(op=nl.exp, data=nl.load(x), reduce_op=nl.max, reduce_res=r)
        nl.store(out, r)
        return out

    x = np.zeros((8, 16), np.float32)
    with pytest.raises(nkid.NkidError) as e:
        k(x)
    assert "unsupported reduce_op" in str(e.value)
    assert "test_isa_reduce.py:" in str(e.value)
    # trn2 allows max
    out = nki.jit(k.func, platform_target="trn2")(x)
    np.testing.assert_allclose(out[:, 0], np.ones(8))


def test_reduce_res_must_be_one_element_per_partition(nkid_socket):
    @nki.jit
    def k(x):
        out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        r = nl.ndarray((x.shape[0], 2), dtype=nl.float32)
        nl.store(out, nisa.activation_reduce(op=nl.exp, data=nl.load(x), reduce_op=nl.add,
                                             reduce_res=r))
        return out

    with pytest.raises(nkid.NKIError, match=r"reduce_res must be a tile of shape \(8, 1\)"):
        k(np.zeros((8, 16), np.float32))


# ---------------------------------------------------------------- vector engine

@nki.jit
def scaled_row_min(x, s):
    """x * s[p] and its row minimum through tensor_scalar_reduce."""
    return row_reduced(x, lambda r: nisa.tensor_scalar_reduce(
        data=nl.load(x), op0=np.multiply, operand0=nl.load(s), reduce_op=np.min, reduce_res=r))


def test_tensor_scalar_reduce(nkid_socket):
    g = rng(2)
    x = g.standard_normal((100, 70)).astype(np.float32)
    s = g.standard_normal((100, 1)).astype(np.float32)
    y, m = scaled_row_min(x, s)
    np.testing.assert_allclose(y, x * s, rtol=1e-6)
    np.testing.assert_allclose(m[:, 0], (x * s).min(axis=1), rtol=1e-6)


@nki.jit
def column_sums(x):
    """Sum over the partitions of [P, 32, 4] (GpSimd)."""
    out = nl.ndarray((1,) + x.shape[1:], dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nisa.tensor_partition_reduce(np.add, nl.load(x)))
    return out


@nki.jit
def column_max(x):
    out = nl.ndarray((1, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nisa.tensor_partition_reduce(nl.maximum, nl.load(x)))
    return out


@nki.jit
def column_bits(x):
    out = nl.ndarray((2, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out[0:1, :], nisa.tensor_partition_reduce(np.bitwise_or, t))
    nl.store(out[1:2, :], nisa.tensor_partition_reduce(np.bitwise_and, t))
    return out


def test_tensor_partition_reduce(nkid_socket):
    g = rng(3)
    x = g.standard_normal((96, 32, 4)).astype(np.float32)
    np.testing.assert_allclose(column_sums(x), x.sum(axis=0, keepdims=True), rtol=1e-4,
                               atol=1e-5)
    y = g.standard_normal((128, 50)).astype(np.float32)
    np.testing.assert_array_equal(column_max(y), y.max(axis=0, keepdims=True))
    b = g.integers(0, 1 << 12, (16, 20)).astype(np.int32)
    out = column_bits(b)
    np.testing.assert_array_equal(out[0], np.bitwise_or.reduce(b, axis=0))
    np.testing.assert_array_equal(out[1], np.bitwise_and.reduce(b, axis=0))


def test_tensor_partition_reduce_rejects_other_ops(nkid_socket):
    k = tile_kernel(lambda t: nisa.tensor_partition_reduce(np.subtract, t),
                    shape=lambda x: (1, x.shape[1]))
    assert_refused(k, nkid.NkidError, "unsupported operator .* 'tensor_partition_reduce'",
                   np.zeros((4, 4), np.float32))


# ---------------------------------------------------------------- range_select

def _range_ref(x, b0, b1, start, op0, op1):
    i = start + np.arange(x.shape[1])[None, :]
    return np.where(op0(i, b0) & op1(i, b1), x, FP32_MIN)


@nki.jit(platform_target="trn2")
def window(x, lo, hi, start):
    """Keep the columns i of each row with lo[p] <= start + i < hi[p]."""
    return row_reduced(x, lambda r: nisa.range_select(
        on_true_tile=nl.load(x), comp_op0=np.greater_equal, comp_op1=np.less,
        bound0=nl.load(lo), bound1=nl.load(hi), reduce_cmd=nisa.reduce_cmd.reset_reduce,
        reduce_res=r, reduce_op=np.max, range_start=start), dtype=nl.float32)


def test_range_select_with_reduction(nkid_socket):
    g = rng(4)
    x = g.standard_normal((128, 200)).astype(np.float32)
    lo = g.integers(0, 150, (128, 1)).astype(np.float32)
    hi = lo + g.integers(1, 60, (128, 1)).astype(np.float32)
    out, mx = window(x, lo, hi, 10)
    ref = _range_ref(x, lo, hi, 10, np.greater_equal, np.less)
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(mx[:, 0], ref.max(axis=1))


@nki.jit(platform_target="trn2")
def window_chunks(x, lo, hi):
    """Three range_selects over column chunks sharing the vector registers."""
    out = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    b0 = nl.load(lo)
    b1 = nl.load(hi)
    r = nl.ndarray((x.shape[0], 1), dtype=nl.float32)
    w = x.shape[1] // 3
    for c in range(3):
        cmd = nisa.reduce_cmd.reset_reduce if c == 0 else nisa.reduce_cmd.reduce
        nisa.range_select(on_true_tile=t[:, c * w:(c + 1) * w], comp_op0=np.greater_equal,
                          comp_op1=np.less_equal, bound0=b0, bound1=b1, reduce_cmd=cmd,
                          reduce_res=r if c == 2 else None, range_start=c * w)
    nl.store(out, r)
    return out


def test_range_select_chained_over_chunks(nkid_socket):
    g = rng(5)
    x = g.standard_normal((64, 96)).astype(np.float32)
    lo = np.full((64, 1), 20, np.float32)
    hi = np.full((64, 1), 70, np.float32)
    ref = _range_ref(x, lo, hi, 0, np.greater_equal, np.less_equal).max(axis=1)
    np.testing.assert_array_equal(window_chunks(x, lo, hi)[:, 0], ref)


def test_range_select_needs_neuroncore_v3(nkid_socket):
    x = np.zeros((4, 8), np.float32)
    b = np.zeros((4, 1), np.float32)
    trn1 = nki.jit(window.func)
    with pytest.raises(nkid.NkidError) as e:
        trn1(x, b, b, 0)
    assert "'range_select' is only available on NeuronCore-v3 and beyond" in str(e.value)


def test_range_select_limits(nkid_socket):
    x = np.zeros((4, 8), np.float32)
    b = np.zeros((4, 1), np.float32)

    def between(bound_dtype=None, **kw):
        """A range_select of x between the bounds b (loaded as bound_dtype),
        both comparisons np.less, but for what kw gives."""
        @nki.jit(platform_target="trn2")
        def k(x, b):
            out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
            t = nl.load(b) if bound_dtype is None else nl.load(b, dtype=bound_dtype)
            args = dict(on_true_tile=nl.load(x), comp_op0=np.less, comp_op1=np.less,
                        bound0=t, bound1=t)
            args.update(kw)
            nl.store(out, nisa.range_select(**args))
            return out
        return k

    for k, error, match in [
            (between(on_false_value=0.0), nkid.NKIError, "must be the FP32_MIN bit pattern"),
            (between(comp_op0=np.add), nkid.NkidError, "unsupported operator .* 'comp_op0'"),
            (between(nl.bfloat16), nkid.NkidError, "'bound0' of 'range_select' must be float32")]:
        assert_refused(k, error, match, x, b)


# ---------------------------------------------------------------- select_reduce

@nki.jit
def masked_max(pred, x, fill):
    """dst = pred ? x : fill[p], and each row's max."""
    def select(r):
        dst = nl.ndarray(x.shape, dtype=nl.float32)
        nisa.select_reduce(dst=dst, predicate=nl.load(pred), on_true=nl.load(x),
                           on_false=nl.load(fill), reduce_cmd=nisa.reduce_cmd.reset_reduce,
                           reduce_res=r, reduce_op=nl.max)
        return dst
    return row_reduced(x, select, dtype=nl.float32)


@nki.jit
def masked_reverse(pred, x):
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    dst = nl.ndarray(x.shape, dtype=nl.float32)
    nisa.select_reduce(dst=dst, predicate=nl.load(pred), on_true=nl.load(x),
                       on_false=-5.0, reverse_pred=True)
    nl.store(out, dst)
    return out


def test_select_reduce(nkid_socket):
    g = rng(6)
    x = g.standard_normal((128, 64)).astype(np.float32)
    p = g.integers(0, 2, (128, 64)).astype(np.uint8)
    f = g.standard_normal((128, 1)).astype(np.float32)
    out, mx = masked_max(p, x, f)
    ref = np.where(p != 0, x, f)
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(mx[:, 0], ref.max(axis=1))
    np.testing.assert_array_equal(masked_reverse(p, x), np.where(p == 0, x, -5.0))


def test_select_reduce_predicate_dtype(nkid_socket):
    x = np.zeros((4, 8), np.float32)
    with pytest.raises(nkid.NkidError,
                       match="'predicate' of 'select_reduce' must be int8, uint8, int16"):
        masked_reverse(x, x)


# ---------------------------------------------------------------- tensor_reduce

@nki.jit
def neg_row_max(x):
    """-max over the last two axes of [P, 4, 8], kept as [P, 1, 1]."""
    out = nl.ndarray((x.shape[0], 1, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, nisa.tensor_reduce(np.max, nl.load(x), axis=(1, 2), negate=True,
                                     keepdims=True))
    return out


def test_tensor_reduce_negate_keepdims(nkid_socket):
    x = rng(7).standard_normal((50, 4, 8)).astype(np.float32)
    np.testing.assert_array_equal(neg_row_max(x), -x.max(axis=(1, 2), keepdims=True))
