"""tile.view(dtype) (aws-neuron-sdk@8a38e733, general/nki/api/nki/__init__.py,
nki.tensor.view: "Return a new view of the tensor, reinterpret to a specified
type"): a tile's bytes read as another dtype, the last dimension scaled by
the sizes as numpy's ndarray.view does, against numpy; as nki-samples'
rmsnorm_quant uses it (a float32 [P, 1] tile viewed as float8_e4m3 [P, 4])."""

import ml_dtypes
import numpy as np
import pytest

import nkid
import nkid.nki.isa as nisa
import nkid.nki.language as nl

from isa_helpers import rng, assert_refused


def viewed(dtype, out_dtype, shape_of):
    """A kernel storing nl.load(x).view(dtype) into an HBM tensor."""
    def k(x):
        out = nl.ndarray(shape_of(x.shape), dtype=out_dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        nl.store(out, t.view(dtype))
        return out
    return nkid.nki.jit(k)


def by(f):
    return lambda s: s[:-1] + (s[-1] * f,)


def test_float32_as_float8_e4m3_rmsnorm_quant(nkid_socket):
    """rmsnorm_quant: the scales' float32 bytes stored as 4 fp8 values each
    through nisa.dma_copy, next to the quantized data."""
    x = rng(1).uniform(0.01, 2.0, (32, 1)).astype(np.float32)

    def k(a):
        out = nl.ndarray((32, 4), dtype=nl.float8_e4m3, buffer=nl.shared_hbm)
        t = nl.load(a)
        i_p, i_f = nl.mgrid[0:32, 0:4]
        nisa.dma_copy(dst=out[i_p, i_f], src=t.view(nl.float8_e4m3)[i_p, i_f])
        return out

    got = nkid.nki.jit(k)(x)
    assert got.dtype == np.dtype(ml_dtypes.float8_e4m3fn)
    np.testing.assert_array_equal(got.view(np.uint8), x.view(np.uint8))


@pytest.mark.parametrize("src,dst,f", [
    (np.float32, np.uint8, 4), (np.float32, np.uint16, 2), (np.float32, np.int16, 2),
    (np.int16, np.uint8, 2), (np.uint8, np.int8, 1), (np.int8, np.uint8, 1)],
    ids=lambda v: getattr(v, "__name__", str(v)))
def test_view_bytes_like_numpy(nkid_socket, src, dst, f):
    if np.issubdtype(src, np.floating):
        x = rng(2).standard_normal((16, 6)).astype(src)
    else:
        info = np.iinfo(src)
        x = rng(2).integers(info.min, info.max, (16, 6), endpoint=True).astype(src)
    got = viewed(dst, dst, by(f))(x)
    np.testing.assert_array_equal(got, x.view(dst))


def test_view_to_a_wider_dtype(nkid_socket):
    """uint8 [P, 8] read as float32 [P, 2] (the bytes of float32 values)."""
    y = rng(3).standard_normal((8, 2)).astype(np.float32)
    x = y.view(np.uint8)
    k = viewed(nl.float32, nl.float32, lambda s: s[:-1] + (s[-1] // 4,))
    np.testing.assert_array_equal(k(x), y)


def test_view_as_bfloat16(nkid_socket):
    x = rng(4).standard_normal((8, 3)).astype(np.float32)
    got = viewed(nl.bfloat16, nl.bfloat16, by(2))(x)
    np.testing.assert_array_equal(got.view(np.uint16), x.view(np.uint16))


def test_view_reads_current_bytes(nkid_socket):
    """A view taken before the viewed tile is written reads the new bytes
    (no copy at .view: NKI's view refers to the original data)."""
    x = rng(5).standard_normal((4, 2)).astype(np.float32)

    def k(a):
        out = nl.ndarray((4, 8), dtype=nl.uint8, buffer=nl.shared_hbm)
        t = nl.ndarray((4, 2), dtype=nl.float32, buffer=nl.sbuf)
        v = t.view(nl.uint8)
        t[...] = nl.load(a)
        nl.store(out, v)
        return out

    np.testing.assert_array_equal(nkid.nki.jit(k)(x), x.view(np.uint8))


def test_view_in_a_loop_follows_writes(nkid_socket):
    """Taken once, read in each trip after the trip's write."""
    x = rng(6).standard_normal((3, 4, 2)).astype(np.float32)

    def k(a):
        out = nl.ndarray((3, 4, 8), dtype=nl.uint8, buffer=nl.shared_hbm)
        t = nl.ndarray((4, 2), dtype=nl.float32, buffer=nl.sbuf)
        v = t.view(nl.uint8)
        for i in nl.sequential_range(3):
            t[...] = nl.load(a[i])
            nl.store(out[i], v)
        return out

    np.testing.assert_array_equal(nkid.nki.jit(k)(x), x.view(np.uint8))


def test_view_write_refused(nkid_socket):
    def k(a):
        out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        v = t.view(nl.uint8)
        v[...] = nl.zeros((4, 8), dtype=nl.uint8)
        nl.store(out, t)
        return out

    assert_refused(nkid.nki.jit(k), nkid.NKIError,
                   r"writing through a tile.view\(dtype\) of another dtype is not supported",
                   np.ones((4, 2), np.float32))


def test_view_bad_size_refused(nkid_socket):
    k = viewed(nl.float32, nl.float32, lambda s: s)
    assert_refused(k, ValueError,
                   r"cannot view a uint8 tile of shape \[4, 6\] as float32: the last "
                   r"dimension's 6 bytes are not a multiple of 4",
                   np.zeros((4, 6), np.uint8))


def test_view_of_hbm(nkid_socket):
    """A whole HBM tensor viewed as another dtype reads its bytes (NKIR
    Tensor.view_of); a slice of one is refused."""
    def k(a):
        out = nl.ndarray((4, 8), dtype=nl.uint8, buffer=nl.shared_hbm)
        nl.store(out, nl.load(a.view(nl.uint8)))
        return out

    a = np.arange(8, dtype=np.float32).reshape(4, 2) - 3.5
    np.testing.assert_array_equal(nkid.nki.jit(k)(a), a.view(np.uint8))

    def s(a):
        out = nl.ndarray((2, 8), dtype=nl.uint8, buffer=nl.shared_hbm)
        nl.store(out, nl.load(a[0:2, :].view(nl.uint8)))
        return out

    assert_refused(nkid.nki.jit(s), NotImplementedError, "nkid views whole tensors only",
                   np.zeros((4, 2), np.float32))
