"""nki.isa top-8 and cross-partition instructions: max8, nc_find_index8,
nc_match_replace8 and nc_stream_shuffle against numpy (a top-k kernel
among them), with their limits."""

import numpy as np
import pytest

import nkid
from nkid import nki
import nkid.nki.isa as nisa
import nkid.nki.language as nl

from isa_helpers import rng, tile_kernel, assert_refused


def distinct(shape, seed):
    """Rows of distinct values (ties would make "first occurrence" matter)."""
    g = rng(seed)
    n = int(np.prod(shape[1:]))
    return np.stack([g.permutation(n) for _ in range(shape[0])]).reshape(shape).astype(
        np.float32) / n


@nki.jit
def top8(x):
    """The 8 largest values of each row and their indices."""
    vals = nl.ndarray((x.shape[0], 8), dtype=x.dtype, buffer=nl.shared_hbm)
    idx = nl.ndarray((x.shape[0], 8), dtype=nl.uint32, buffer=nl.shared_hbm)
    t = nl.load(x)
    m = nisa.max8(src=t)
    nl.store(vals, m)
    nl.store(idx, nisa.nc_find_index8(data=t, vals=m))
    return vals, idx


def test_max8_and_find_index8(nkid_socket):
    x = distinct((100, 300), 1)
    vals, idx = top8(x)
    order = np.argsort(-x, axis=1)[:, :8]
    np.testing.assert_array_equal(vals, np.take_along_axis(x, order, axis=1))
    np.testing.assert_array_equal(idx, order)
    assert idx.dtype == np.uint32


@nki.jit
def top16(x):
    """The 16 largest of each row: max8, knock them out, max8 again (a
    top-k in the way of NKI's docs)."""
    vals = nl.ndarray((x.shape[0], 16), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    res = nl.ndarray((x.shape[0], 16), dtype=x.dtype)
    m1 = nisa.max8(src=t)
    res[:, 0:8] = m1
    rest = nisa.nc_match_replace8(data=t, vals=m1, imm=-1e30)
    res[:, 8:16] = nisa.max8(src=rest)
    nl.store(vals, res)
    return vals


def test_top16_through_match_replace8(nkid_socket):
    x = distinct((64, 50), 2)
    np.testing.assert_array_equal(top16(x), -np.sort(-x, axis=1)[:, :16])


@nki.jit
def knock_out(x, imm):
    """nc_match_replace8 of a 3-D tile in place, with the indices."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    where = nl.ndarray((x.shape[0], 8), dtype=nl.uint32, buffer=nl.shared_hbm)
    t = nl.load(x)
    m = nisa.max8(src=t)
    idx = nl.ndarray((x.shape[0], 8), dtype=nl.uint32)
    t[...] = nisa.nc_match_replace8(data=t, vals=m, imm=imm, dst_idx=idx)
    nl.store(out, t)
    nl.store(where, idx)
    return out, where


def test_match_replace8_3d_in_place_with_indices(nkid_socket):
    x = distinct((32, 4, 6), 3)
    out, where = knock_out(x, 0.0)
    flat = x.reshape(32, -1)
    order = np.argsort(-flat, axis=1)[:, :8]
    ref = flat.copy()
    np.put_along_axis(ref, order, 0.0, axis=1)
    np.testing.assert_array_equal(out, ref.reshape(x.shape))
    np.testing.assert_array_equal(where, order)


@nki.jit
def replace_dups(x, v):
    """Each value of v replaces the next not-yet-replaced occurrence."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    where = nl.ndarray((x.shape[0], 8), dtype=nl.uint32, buffer=nl.shared_hbm)
    idx = nl.ndarray((x.shape[0], 8), dtype=nl.uint32)
    nl.store(out, nisa.nc_match_replace8(data=nl.load(x), vals=nl.load(v), imm=-7.0,
                                         dst_idx=idx))
    nl.store(where, idx)
    return out, where


def test_match_replace8_sequential_over_duplicates(nkid_socket):
    x = np.array([[5, 1, 5, 2, 5, 3, 9, 9, 0, 4]], np.float32)
    v = np.array([[5, 5, 9, 1, 2, 3, 4, 0]], np.float32)
    out, where = replace_dups(x, v)
    np.testing.assert_array_equal(where[0], [0, 2, 6, 1, 3, 5, 9, 8])
    np.testing.assert_array_equal(out[0], [-7, -7, -7, -7, 5, -7, -7, 9, -7, -7])


def test_top8_limits(nkid_socket):
    with pytest.raises(nkid.NkidError, match="the number of elements per partition of 'max8' "
                                             "must be between 8 and 16384, got 7"):
        top8(np.zeros((4, 7), np.float32))

    bad_dtype = tile_kernel(
        lambda t: nisa.nc_find_index8(data=t, vals=nisa.max8(src=t), dtype=nl.int32),
        shape=lambda x: (x.shape[0], 8), dtype=nl.int32)
    assert_refused(bad_dtype, nkid.NKIError, "dtype of 'nc_find_index8' must be uint16 or "
                   "uint32, got int32", np.zeros((4, 16), np.float32))
    bad_vals = tile_kernel(lambda t: nisa.nc_match_replace8(data=t, vals=t[:, 0:4], imm=0.0))
    assert_refused(bad_vals, nkid.NKIError, "'vals' of 'nc_match_replace8' must have 4 "
                   "partitions of exactly 8 elements", np.zeros((4, 16), np.float32))


# ---------------------------------------------------------------- stream shuffle

@nki.jit
def shuffle(x, mask):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    d = nl.full(x.shape, -1.0, dtype=x.dtype)
    nisa.nc_stream_shuffle(src=t, dst=d, shuffle_mask=mask)
    nl.store(out, d)
    return out


def shuffle_ref(x, mask, fill=-1.0):
    out = np.full(x.shape, fill, x.dtype)
    for p in range(x.shape[0]):
        m = mask[p % 32]
        if m != 255:
            out[p] = x[p // 32 * 32 + m]
    return out


def test_nc_stream_shuffle_quadrants(nkid_socket):
    g = rng(4)
    x = g.standard_normal((128, 20)).astype(np.float32)
    rot = [(i + 5) % 32 for i in range(32)]
    np.testing.assert_array_equal(shuffle(x, rot), shuffle_ref(x, rot))
    keep = [255 if i % 3 == 0 else 31 - i for i in range(32)]
    np.testing.assert_array_equal(shuffle(x, keep), shuffle_ref(x, keep))


@nki.jit
def rotate_in_place(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nisa.nc_stream_shuffle(t, t, [(i + 1) % 32 for i in range(32)])
    nl.store(out, t)
    return out


@nki.jit
def broadcast_row(x):
    """One partition broadcast to 32 with an all-zero mask."""
    out = nl.ndarray((32, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    d = nl.ndarray((32, x.shape[1]), dtype=x.dtype)
    nisa.nc_stream_shuffle(src=t, dst=d, shuffle_mask=[0] * 32)
    nl.store(out, d)
    return out


def test_nc_stream_shuffle_in_place_and_broadcast(nkid_socket):
    g = rng(5)
    x = g.standard_normal((64, 8)).astype(np.float32)
    rot = [(i + 1) % 32 for i in range(32)]
    np.testing.assert_array_equal(rotate_in_place(x), shuffle_ref(x, rot))
    r = g.standard_normal((1, 16)).astype(np.float32)
    np.testing.assert_array_equal(broadcast_row(r), np.repeat(r, 32, axis=0))


def test_nc_stream_shuffle_limits(nkid_socket):
    x = np.zeros((32, 4), np.float32)
    with pytest.raises(nkid.NKIError, match="shuffle_mask of 'nc_stream_shuffle' must have 32 "
                                            "elements, got 4"):
        shuffle(x, [0, 1, 2, 3])
    with pytest.raises(nkid.NKIError, match=r"shuffle_mask\[1\] of 'nc_stream_shuffle' is 40"):
        shuffle(x, [0, 40] + [0] * 30)

    @nki.jit
    def k(x):
        out = nl.ndarray((32, 4), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        d = nl.ndarray((32, 4), dtype=x.dtype)
        nisa.nc_stream_shuffle(src=t[0:8, :], dst=d, shuffle_mask=list(range(32)))
        nl.store(out, d)
        return out

    with pytest.raises(nkid.NkidError, match=r"shuffle_mask\[8\] of 'nc_stream_shuffle' names "
                                             "partition 8 of 'src', which has 8"):
        k(x)

    @nki.jit
    def start(x):
        out = nl.ndarray((32, 4), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        d = nl.ndarray((96, 4), dtype=x.dtype)
        nisa.nc_stream_shuffle(src=t[0:32, :], dst=d[16:48, :], shuffle_mask=list(range(32)))
        nl.store(out, d[16:48, :])
        return out

    with pytest.raises(nkid.NkidError, match="the start partition 16 of 'dst' of "
                                             "'nc_stream_shuffle' is not allowed with 32 active"):
        start(x)
