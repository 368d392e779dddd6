"""Indirect (dynamic) indexing: an HBM tensor indexed by the values of an
SBUF integer tile, for nl.load, nl.store, assignments and nl.atomic_rmw;
nl.gather_flattened; out-of-bounds indices at run time; NKI's errors for
the uses it refuses."""

import inspect

import numpy as np
import pytest

import nkid
from nkid import nki, NKIError, NKISyntaxError
import nkid.nki.isa as nisa
import nkid.nki.language as nl

rng = np.random.default_rng(1414)


def _line(func, text):
    src, start = inspect.getsourcelines(func)
    return start + next(i for i, s in enumerate(src) if text in s)


def gather_rows(data, idx):
    out = nl.ndarray((idx.shape[0], data.shape[1]), dtype=data.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(idx.shape[0])[:, None]
    i_f = nl.arange(data.shape[1])[None, :]
    it = nl.load(idx[i_p])
    t = nl.load(data[it[i_p, 0], i_f])
    nl.store(out, value=t)
    return out


def gather_rows_tile_form(data, idx):
    out = nl.ndarray((idx.shape[0], data.shape[1]), dtype=data.dtype, buffer=nl.shared_hbm)
    it = nl.load(idx)
    nl.store(out, value=nl.load(data[it, nl.arange(data.shape[1])[None, :]]))
    return out


@pytest.mark.parametrize("kernel", [gather_rows, gather_rows_tile_form])
def test_indirect_load_gathers_rows(nkid_socket, kernel):
    data = rng.standard_normal((200, 96)).astype(np.float32)
    idx = rng.integers(0, 200, 128).astype(np.int32)
    idx2 = idx.reshape(128, 1) if kernel is gather_rows_tile_form else idx
    np.testing.assert_array_equal(nki.simulate_kernel(kernel, data, idx2), data[idx])


def test_indirect_load_converts_dtype_and_index_dtypes(nkid_socket):
    def k(data, idx):
        out = nl.ndarray((64, 32), dtype=nl.float32, buffer=nl.shared_hbm)
        it = nl.load(idx)
        t = nl.load(data[it, nl.arange(32)[None, :]], dtype=nl.float32)
        nl.store(out, value=t)
        return out
    data = rng.standard_normal((100, 32)).astype(np.float16)
    for dt in (np.int32, np.uint16, np.int8):
        idx = rng.integers(0, 100, (64, 1)).astype(dt)
        got = nki.simulate_kernel(k, data, idx)
        np.testing.assert_array_equal(got, data[idx[:, 0]].astype(np.float32))


def test_indirect_load_from_iota_indices_in_a_loop(nkid_socket):
    def k(data):
        out = nl.ndarray((4, 32, 64), dtype=data.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(4):
            idx = nisa.iota(3 * nl.arange(32)[:, None] + i, dtype=nl.int32)
            nl.store(out[i], value=nl.load(data[idx, nl.arange(64)[None, :]]))
        return out
    data = rng.standard_normal((100, 64)).astype(np.float32)
    got = nki.simulate_kernel(k, data)
    for i in range(4):
        np.testing.assert_array_equal(got[i], data[3 * np.arange(32) + i])


def scatter_rows(src, idx, base):
    out = nl.ndarray(base.shape, dtype=base.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(base))
    it = nl.load(idx)
    i_f = nl.arange(src.shape[1])[None, :]
    nl.store(out[it, i_f], value=nl.load(src))
    return out


def test_indirect_store_scatters_rows(nkid_socket):
    src = rng.standard_normal((64, 48)).astype(np.float32)
    base = np.full((128, 48), -1.0, np.float32)
    idx = rng.permutation(128)[:64].astype(np.int32).reshape(64, 1)
    got = nki.simulate_kernel(scatter_rows, src, idx, base)
    want = base.copy()
    want[idx[:, 0]] = src
    np.testing.assert_array_equal(got, want)


def test_indirect_assignments(nkid_socket):
    def k(data, idx):
        out = nl.ndarray((data.shape[0] + 8, data.shape[1]), dtype=data.dtype,
                         buffer=nl.shared_hbm)
        it = nl.load(idx)
        i_f = nl.arange(data.shape[1])[None, :]
        t = nl.ndarray((idx.shape[0], data.shape[1]), dtype=data.dtype, buffer=nl.sbuf)
        t[...] = data[it, i_f]                  # a load
        nl.store(out, value=nl.zeros(out.shape, dtype=out.dtype))
        out[it, i_f] = nl.multiply(t, 2.0)      # a store
        return out
    data = rng.standard_normal((64, 32)).astype(np.float32)
    idx = np.arange(64, dtype=np.int32).reshape(64, 1)[::-1].copy()
    got = nki.simulate_kernel(k, data, idx)
    np.testing.assert_array_equal(got[:64], 2 * data)


def test_atomic_rmw_adds_and_accumulates_duplicates(nkid_socket):
    def k(base, idx, value):
        out = nl.ndarray(base.shape, dtype=base.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(base))
        it = nl.load(idx)
        nl.atomic_rmw(out[it, nl.arange(base.shape[1])[None, :]], value=nl.load(value),
                      op=np.add)
        return out
    base = rng.standard_normal((16, 64)).astype(np.float32)
    idx = rng.integers(0, 16, (128, 1)).astype(np.int32)        # many repeats
    value = rng.standard_normal((128, 64)).astype(np.float32)
    got = nki.simulate_kernel(k, base, idx, value)
    want = base.astype(np.float64).copy()
    np.add.at(want, idx[:, 0], value)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_indirect_load_under_a_mask_skips_masked_rows(nkid_socket):
    def k(data, idx):
        out = nl.ndarray((128, 16), dtype=data.dtype, buffer=nl.shared_hbm)
        i_p = nl.arange(128)[:, None]
        i_f = nl.arange(16)[None, :]
        it = nl.load(idx)
        t = nl.full((128, 16), 7.0, dtype=nl.float32)
        t[i_p, i_f] = nl.load(data[it[i_p, 0], i_f], mask=(i_p < 100))
        nl.store(out, value=t)
        return out
    data = rng.standard_normal((100, 16)).astype(np.float32)
    idx = np.concatenate([np.arange(100), np.full(28, 10 ** 6)]).astype(np.int32)
    got = nki.simulate_kernel(k, data, idx.reshape(128, 1))
    np.testing.assert_array_equal(got[:100], data)
    assert np.all(got[100:] == 7.0)             # out of range, but masked off


def test_index_out_of_bounds_fails_naming_index_and_tensor(nkid_socket):
    """NKI's simulator raises numpy's IndexError for the flat element; the
    message names the run-time index, the tensor and the kernel's line."""
    data = rng.standard_normal((128, 32)).astype(np.float32)
    idx = 3 * np.arange(64, dtype=np.int32)     # 189 > 127
    with pytest.raises(IndexError) as e:
        nki.simulate_kernel(gather_rows, data, idx)
    assert str(e.value) == "index 4128 is out of bounds for axis 0 with size 4096"
    msg = e.value.message
    assert "run-time index 129 on dimension 0 of tensor `data` exceeds its size 128" in msg
    assert "test_lang_indirect.py:%d" % _line(gather_rows, "nl.load(data[") in msg
    neg = np.arange(64, dtype=np.int32) - 1
    with pytest.raises(IndexError) as e:
        nki.baremetal(gather_rows)(data, neg)
    assert "run-time index -1 on dimension 0 of tensor `data`" in e.value.message


def test_store_index_out_of_bounds_fails(nkid_socket):
    src = np.ones((64, 8), np.float32)
    with pytest.raises(IndexError, match="index 512 is out of bounds for axis 0 with size 512"):
        nki.simulate_kernel(scatter_rows, src, np.arange(64, dtype=np.int32).reshape(64, 1)
                            + 1, np.zeros((64, 8), np.float32))


def test_out_of_bounds_skip_mode(nkid_socket):
    """nisa.dma_copy's oob_mode.skip on the same indexed views: out-of-range
    indices neither read nor write."""
    def load_skip(data):
        out = nl.ndarray((64, 32), dtype=data.dtype, buffer=nl.shared_hbm)
        idx = nisa.iota(3 * nl.arange(64)[:, None], dtype=nl.int32)
        t = nl.full((64, 32), -1.0, dtype=data.dtype)
        nisa.dma_copy(dst=t, src=data[idx, nl.arange(32)[None, :]],
                      oob_mode=nisa.oob_mode.skip)
        nl.store(out, value=t)
        return out

    def store_skip(src):
        out = nl.ndarray((128, 32), dtype=src.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.full((128, 32), -1.0, dtype=src.dtype))
        idx = nisa.iota(3 * nl.arange(64)[:, None], dtype=nl.int32)
        nisa.dma_copy(dst=out[idx, nl.arange(32)[None, :]], src=nl.load(src),
                      oob_mode=nisa.oob_mode.skip)
        return out
    data = rng.standard_normal((128, 32)).astype(np.float32)
    got = nki.simulate_kernel(load_skip, data)
    n = len(range(0, 128, 3))
    np.testing.assert_array_equal(got[:n], data[::3])
    assert np.all(got[n:] == -1.0)
    src = rng.standard_normal((64, 32)).astype(np.float32)
    got = nki.simulate_kernel(store_skip, src)
    want = np.full((128, 32), -1.0, np.float32)
    want[::3] = src[:n]
    np.testing.assert_array_equal(got, want)


def load_rows_at(data, idx):
    """A load of data's rows at the indices the tile idx holds."""
    it = nl.load(idx)
    nl.load(data[it, nl.arange(8)[None, :]])
    return data


def test_indices_varying_along_a_free_dimension_are_refused():
    with pytest.raises(NKISyntaxError, match=r"Dynamic indexing for load/store only supports"
                       r" the indirect indexing to be on the partition or block dimension."
                       r" \(err_indirect_indices_free_dim\) \(test_lang_indirect.py:\d+\)"):
        nki.simulate_kernel(load_rows_at, np.zeros((16, 8), np.float32),
                            np.zeros((16, 8), np.int32))


def test_float_indices_are_refused():
    with pytest.raises(TypeError, match="indirect indices must be an integer tile, got"
                       " float32 `it`"):
        nki.simulate_kernel(load_rows_at, np.zeros((16, 8), np.float32),
                            np.zeros((16, 1), np.float32))


def test_indirect_view_in_other_apis_is_refused():
    def transpose(data, idx):
        it = nl.load(idx)
        nl.load_transpose2d(data[it, nl.arange(8)[None, :]])
        return data

    def on_chip(data, idx):
        it = nl.load(idx)
        t = nl.load(data)
        u = nl.ndarray((16, 8), dtype=data.dtype, buffer=nl.sbuf)
        u[...] = t[it, nl.arange(8)[None, :]]
        return data

    def compute(data, idx):
        it = nl.load(idx)
        t = nl.load(data)
        nl.exp(t[it, nl.arange(8)[None, :]])
        return data
    args = (np.zeros((16, 8), np.float32), np.zeros((16, 1), np.int32))
    with pytest.raises(NKISyntaxError, match=r"err_indirect_indices_are_not_supported_with"
                       r"_nki_api\) \(test_lang_indirect.py:\d+\)"):
        nki.simulate_kernel(transpose, *args)
    with pytest.raises(NKISyntaxError, match="copying indirect memory references is not"
                       r" natively supported.*err_copy_dynamic_indirect_indices_not_natively"):
        nki.simulate_kernel(on_chip, *args)
    with pytest.raises(NKIError, match="err_indirect_indices_are_not_supported_with_nki_api"):
        nki.simulate_kernel(compute, *args)


def test_atomic_rmw_needs_an_indirect_destination_and_np_add():
    def plain(x):
        nl.atomic_rmw(x, value=nl.load(x), op=np.add)
        return x

    def maximum(x, idx):
        it = nl.load(idx)
        nl.atomic_rmw(x[it, nl.arange(4)[None, :]], value=nl.load(x), op=np.maximum)
        return x
    with pytest.raises(NKIError, match="atomic_rmw only supports indirect dynamic indexing"):
        nki.simulate_kernel(plain, np.zeros((4, 4), np.float32))
    with pytest.raises(NKIError, match="nl.atomic_rmw only supports np.add"):
        nki.simulate_kernel(maximum, np.zeros((4, 4), np.float32), np.zeros((4, 1), np.int32))


def gather_flat(data, indices):
    out = nl.ndarray(indices.shape, dtype=data.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.gather_flattened(data=nl.load(data), indices=nl.load(indices)))
    return out


def test_gather_flattened_matches_take_along_axis(nkid_socket):
    data = rng.standard_normal((32, 64)).astype(np.float32)
    idx = rng.integers(0, 64, (32, 10)).astype(np.uint32)
    got = nki.simulate_kernel(gather_flat, data, idx)
    np.testing.assert_array_equal(got, np.take_along_axis(data, idx.astype(np.int64), -1))


def test_gather_flattened_flattens_free_dims(nkid_socket):
    data = np.arange(1, 9, dtype=np.float32).reshape(2, 2, 2)
    idx = np.array([[[0, 1], [1, 3]], [[3, 3], [1, 0]]], np.uint32)
    got = nki.simulate_kernel(gather_flat, data, idx)
    np.testing.assert_array_equal(got, [[[1, 2], [2, 4]], [[8, 8], [6, 5]]])


def test_gather_flattened_out_of_bounds_is_garbage_not_a_crash(nkid_socket):
    data = rng.standard_normal((4, 8)).astype(np.float32)
    idx = np.array([[0, 8, 2 ** 31, 7]] * 4, np.uint32)
    got = nki.simulate_kernel(gather_flat, data, idx)
    np.testing.assert_array_equal(got[:, [0, 3]], data[:, [0, 7]])
    assert np.all(np.isnan(got[:, [1, 2]]))


def test_gather_flattened_needs_integer_indices():
    with pytest.raises(NKIError, match="indices of nl.gather_flattened must be uint32, got"
                       " float32"):
        nki.simulate_kernel(gather_flat, np.zeros((4, 8), np.float32),
                            np.zeros((4, 2), np.float32))
