"""nki.isa data movement: dma_copy (plain, casting, HBM to HBM, indirect
gathers and scatters with both out-of-bounds modes, read-modify-write, DGE
modes), dma_transpose, tensor_copy_dynamic_src/dst and local_gather,
against numpy, with their limits."""

import numpy as np
import pytest

import nkid
from nkid import nki
import nkid.nki.isa as nisa
import nkid.nki.language as nl

from isa_helpers import rng, out_kernel, tile_kernel, assert_refused


# ---------------------------------------------------------------- dma_copy

@nki.jit
def hbm_to_hbm(x):
    out = nl.ndarray(x.shape, dtype=nl.bfloat16, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=x)
    return out


@nki.jit
def through_sbuf(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=nl.float16)
    nisa.dma_copy(dst=t, src=x, dge_mode=nisa.dge_mode.swdge)
    u = nl.ndarray(x.shape, dtype=x.dtype)
    nisa.dma_copy(dst=u, src=t)
    nisa.dma_copy(dst=out, src=u, dge_mode=nisa.dge_mode.none)
    return out


def test_dma_copy_spaces_and_casts(nkid_socket):
    x = rng(1).standard_normal((200, 33)).astype(np.float32)
    np.testing.assert_array_equal(hbm_to_hbm(x), x.astype(nl.bfloat16))
    y = x[:128]
    np.testing.assert_array_equal(through_sbuf(y), y.astype(np.float16).astype(np.float32))


def test_dma_copy_hwdge_needs_neuroncore_v3(nkid_socket):
    k = out_kernel(lambda x, out: nisa.dma_copy(dst=out, src=x, dge_mode=nisa.dge_mode.hwdge))

    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    with pytest.raises(nkid.NkidError, match="dge_mode.hwdge of 'dma_copy' is only supported"
                                             " for NeuronCore-v3"):
        k(x)
    np.testing.assert_array_equal(nki.jit(k.func, platform_target="trn2")(x), x)


@nki.jit
def gather_rows(table, idx, mode):
    """out[i] = table[idx[i]] through an indirect DMA (an embedding lookup);
    rows whose index is out of bounds keep -1 under oob_mode.skip."""
    n = idx.shape[0]
    out = nl.ndarray((n, table.shape[1]), dtype=table.dtype, buffer=nl.shared_hbm)
    it = nl.load(idx)
    ip, jf = nl.mgrid[0:n, 0:table.shape[1]]
    rows = nisa.memset((n, table.shape[1]), -1.0, table.dtype)
    nisa.dma_copy(dst=rows[ip, jf], src=table[it[ip, 0], jf], oob_mode=mode)
    nl.store(out, rows)
    return out


def test_dma_copy_indirect_gather(nkid_socket):
    g = rng(2)
    table = g.standard_normal((300, 64)).astype(np.float32)
    idx = g.integers(0, 300, (100, 1)).astype(np.int32)
    np.testing.assert_array_equal(gather_rows(table, idx, nisa.oob_mode.error),
                                  table[idx[:, 0]])


def test_dma_copy_indirect_gather_skips_out_of_bounds(nkid_socket):
    g = rng(3)
    table = g.standard_normal((50, 16)).astype(np.float32)
    idx = np.array([3, 60, 49, -1, 0, 50], np.int32).reshape(6, 1)
    out = gather_rows(table, idx, nisa.oob_mode.skip)
    ok = (idx[:, 0] >= 0) & (idx[:, 0] < 50)
    np.testing.assert_array_equal(out[ok], table[idx[ok, 0]])
    assert (out[~ok] == -1).all()


def test_dma_copy_indirect_out_of_bounds_fails_naming_index_and_tensor(nkid_socket):
    table = np.zeros((50, 16), np.float32)
    idx = np.array([3, 60, 1], np.int32).reshape(3, 1)
    with pytest.raises(IndexError) as e:
        gather_rows(table, idx, nisa.oob_mode.error)
    assert str(e.value) == "index 960 is out of bounds for axis 0 with size 800"
    assert "run-time index 60 on dimension 0 of tensor `table`" in e.value.message
    assert "test_isa_dma.py:" in e.value.message
    assert e.value.__notes__ == [e.value.message]


@nki.jit
def scatter_add(base, x, idx):
    """out = base; out[idx[i]] += x[i] through an indirect read-modify-write
    DMA."""
    out = nl.ndarray(base.shape, dtype=base.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=base)
    ip, jf = nl.mgrid[0:x.shape[0], 0:x.shape[1]]
    it = nl.load(idx)
    nisa.dma_copy(dst=out[it[ip, 0], jf], src=nl.load(x), dst_rmw_op=np.add)
    return out


def test_dma_copy_indirect_scatter_add(nkid_socket):
    g = rng(4)
    base = g.standard_normal((40, 24)).astype(np.float32)
    x = g.standard_normal((16, 24)).astype(np.float32)
    idx = g.permutation(40)[:16].astype(np.int32).reshape(16, 1)
    ref = base.copy()
    ref[idx[:, 0]] += x
    np.testing.assert_allclose(scatter_add(base, x, idx), ref, rtol=1e-6)


def test_dma_copy_rmw_only_with_oob_error(nkid_socket):
    @nki.jit
    def k(base, idx):
        out = nl.ndarray(base.shape, dtype=base.dtype, buffer=nl.shared_hbm)
        ip, jf = nl.mgrid[0:4, 0:base.shape[1]]
        it = nl.load(idx)
        nisa.dma_copy(dst=out[it[ip, 0], jf], src=nl.load(base[ip, jf]), dst_rmw_op=np.add,
                      oob_mode=nisa.oob_mode.skip)
        return out

    with pytest.raises(nkid.NkidError, match="If dst_rmw_op is specified, only "
                                             "oob_mode=oob_mode.error is allowed"):
        k(np.zeros((8, 4), np.float32), np.zeros((4, 1), np.int32))


def test_dma_copy_rmw_only_add(nkid_socket):
    k = out_kernel(lambda x, out: nisa.dma_copy(dst=out, src=x, dst_rmw_op=np.multiply))
    assert_refused(k, nkid.NkidError, "only np.add is supported", np.zeros((8, 4), np.float32))


def test_index_tile_must_be_on_chip(nkid_socket):
    @nki.jit
    def k(x, idx):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=x[idx, :])
        return out

    with pytest.raises(nkid.NKIError, match="index tile `idx` must be on chip"):
        k(np.zeros((8, 4), np.float32), np.zeros((8, 1), np.int32))


def test_indirect_view_elsewhere_is_refused(nkid_socket):
    @nki.jit
    def k(x, idx):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        i = nl.load(idx)
        ip, jf = nl.mgrid[0:8, 0:4]
        nl.store(out, nl.exp(nl.load(x)[i[ip, 0], jf]))
        return out

    with pytest.raises(nkid.NKIError, match="indexed by a tile .* is an indirect access"):
        k(np.zeros((8, 4), np.float32), np.zeros((8, 1), np.int32))


# ---------------------------------------------------------------- dma_transpose

@nki.jit
def dma_t2(x):
    return nisa.dma_transpose(x)


@nki.jit
def dma_t3(x):
    out = nl.ndarray((x.shape[2], x.shape[1], x.shape[0]), dtype=x.dtype,
                     buffer=nl.shared_hbm)
    nl.store(out, nisa.dma_transpose(nl.load(x), axes=(2, 1, 0)))
    return out


@nki.jit
def dma_t4(x):
    return nisa.dma_transpose(x, dtype=nl.bfloat16)


def test_dma_transpose(nkid_socket):
    g = rng(5)
    a = g.standard_normal((300, 96)).astype(np.float32)
    np.testing.assert_array_equal(dma_t2(a), a.T)
    b = g.standard_normal((64, 5, 7)).astype(np.float32)
    np.testing.assert_array_equal(dma_t3(b), b.transpose(2, 1, 0))
    c = g.standard_normal((3, 4, 5, 6)).astype(np.float32)
    np.testing.assert_array_equal(dma_t4(c), c.transpose(3, 1, 2, 0).astype(nl.bfloat16))


def test_dma_transpose_axes(nkid_socket):
    @nki.jit
    def k(x):
        return nisa.dma_transpose(x, axes=(0, 2, 1))

    with pytest.raises(nkid.NKIError, match=r"supported axes are \(1, 0\), \(2, 1, 0\), and "
                                            r"\(3, 1, 2, 0\)"):
        k(np.zeros((2, 3, 4), np.float32))


# ---------------------------------------------------------------- dynamic copies

@nki.jit
def pick_columns(x, cols):
    """out[:, j] = x[:, cols[0, j]], one dynamic-offset copy per column."""
    out = nl.ndarray((x.shape[0], cols.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    c = nl.load(cols)
    res = nl.ndarray((x.shape[0], cols.shape[1]), dtype=x.dtype)
    ip, jf = nl.mgrid[0:x.shape[0], 0:1]
    for j in nl.affine_range(cols.shape[1]):
        res[ip, j + jf] = nisa.tensor_copy_dynamic_src(t[ip, c[0, j] + jf])
    nl.store(out, res)
    return out


@nki.jit
def place_blocks(x, at):
    """out[:, at[0, j], :] = x[:, j, :] into a zeroed [P, 16, 4] tile."""
    out = nl.ndarray((x.shape[0], 16, x.shape[2]), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    a = nl.load(at)
    res = nl.zeros((x.shape[0], 16, x.shape[2]), dtype=x.dtype)
    ip, _, iz = nl.mgrid[0:x.shape[0], 0:1, 0:x.shape[2]]
    for j in nl.affine_range(at.shape[1]):
        nisa.tensor_copy_dynamic_dst(dst=res[ip, a[0, j], iz], src=t[ip, j, iz])
    nl.store(out, res)
    return out


def test_tensor_copy_dynamic_src_and_dst(nkid_socket):
    g = rng(6)
    x = g.standard_normal((128, 64)).astype(np.float32)
    cols = g.integers(0, 64, (1, 20)).astype(np.int32)
    np.testing.assert_array_equal(pick_columns(x, cols), x[:, cols[0]])
    y = g.standard_normal((32, 5, 4)).astype(np.float32)
    at = np.array([[3, 15, 0, 7, 9]], np.int32)
    ref = np.zeros((32, 16, 4), np.float32)
    ref[:, at[0]] = y
    np.testing.assert_array_equal(place_blocks(y, at), ref)


def test_tensor_copy_dynamic_offset_out_of_bounds(nkid_socket):
    x = np.zeros((8, 64), np.float32)
    cols = np.array([[1, 64]], np.int32)
    with pytest.raises(IndexError) as e:
        pick_columns(x, cols)
    assert "run-time index 64 on dimension 1 of tensor `t`" in e.value.message


def test_tensor_copy_dynamic_src_needs_a_dynamic_source(nkid_socket):
    assert_refused(tile_kernel(nisa.tensor_copy_dynamic_src), nkid.NKIError,
                   "must be indexed with a dynamic offset", np.zeros((8, 4), np.float32))


def test_tensor_copy_dynamic_offset_must_be_a_scalar(nkid_socket):
    @nki.jit
    def k(x, cols):
        out = nl.ndarray((x.shape[0], 4), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        c = nl.load(cols)
        ip, jf = nl.mgrid[0:x.shape[0], 0:4]
        nl.store(out, nisa.tensor_copy_dynamic_src(t[ip, c[0:1, 0:4] + jf * 0]))
        return out

    with pytest.raises(nkid.NkidError, match="the dynamic offset of 'tensor_copy_dynamic' "
                                             "must be a scalar value residing in SBUF"):
        k(np.zeros((8, 16), np.float32), np.zeros((1, 4), np.int32))


# ---------------------------------------------------------------- local_gather

def local_gather_ref(src, index, e, valid):
    p = src.shape[0]
    flat = src.reshape(p, -1)
    out = np.empty((p, valid * e), src.dtype)
    for c in range(p // 16):
        ids = index[c * 16:(c + 1) * 16].reshape(16, -1).flatten(order="F")[:valid]
        for k, v in enumerate(ids):
            out[c * 16:(c + 1) * 16, k * e:(k + 1) * e] = flat[c * 16:(c + 1) * 16, v:v + e]
    return out


@nki.jit
def gather_local(src, index, e, valid):
    p = src.shape[0]
    full = valid == 16 * index.shape[1]
    shape = (p, index.shape[1], 16, e) if full else (p, valid, e)
    out = nl.ndarray(shape, dtype=src.dtype, buffer=nl.shared_hbm)
    table = nl.load(src)
    where = nl.load(index)
    nl.store(out, nisa.local_gather(table, where, e, None if full else valid))
    return out


def test_local_gather(nkid_socket):
    g = rng(7)
    src = g.standard_normal((64, 128, 2)).astype(np.float32)
    index = (g.integers(0, 128, (64, 3)) * 2).astype(np.uint16)
    out = gather_local(src, index, 2, 48)
    np.testing.assert_array_equal(out.reshape(64, -1), local_gather_ref(src, index, 2, 48))
    out = gather_local(src, index, 2, 20)
    np.testing.assert_array_equal(out.reshape(64, -1), local_gather_ref(src, index, 2, 20))


def test_local_gather_limits(nkid_socket):
    src = np.zeros((24, 8), np.float32)
    with pytest.raises(nkid.NkidError, match="must match that of 'index' .* and be a multiple "
                                             "of 16"):
        gather_local(src, np.zeros((24, 1), np.uint16), 1, 16)
    src = np.zeros((16, 8), np.float32)
    with pytest.raises(nkid.NkidError, match="num_elem_per_idx of 'local_gather' must be one "
                                             "of 1, 2, 4, 8, 16, 32, got 3"):
        gather_local(src, np.zeros((16, 1), np.uint16), 3, 16)
    with pytest.raises(nkid.NkidError, match="'index' of 'local_gather' must be uint16"):
        gather_local(src, np.zeros((16, 1), np.int32), 1, 16)
    with pytest.raises(nkid.NkidError, match="index 8 \\+ 1 elements of 'local_gather' .* "
                                             "exceeds the 8 elements per partition of `table`"):
        gather_local(src, np.full((16, 1), 8, np.uint16), 1, 16)
