"""Kernel-level nki.language names: shared constants, loop_reduce,
all_reduce over the launch grid, nki.trace sub-kernels and nki.tensor."""

import numpy as np
import pytest

import nkid
from nkid import nki, NKIError
import nkid.nki.isa as nisa
import nkid.nki.language as nl
from nkid._proto import nkir_pb2 as ir
from nkid.tracer import trace

rng = np.random.default_rng(99)


def test_shared_identity_transposes_through_nc_matmul(nkid_socket):
    def k(a):
        out = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.shared_hbm)
        ident = nl.shared_constant(np.identity(128, dtype=np.int8), dtype=nl.float32)
        t = nl.load(a)
        i = nl.load(ident)
        nl.store(out, value=nl.copy(nisa.nc_matmul(t, i)))
        return out
    a = rng.standard_normal((128, 128)).astype(np.float32)
    np.testing.assert_array_equal(nki.simulate_kernel(k, a), a.T)


def test_shared_constant_values_and_dtypes(nkid_socket):
    table = np.arange(-6, 6, dtype=np.int64).reshape(3, 4)

    def k(x):
        out = nl.ndarray((3, 3, 4), dtype=nl.float32, buffer=nl.shared_hbm)
        for j, dt in enumerate((nl.float16, nl.int8, nl.bfloat16)):
            c = nl.shared_constant(table * 1.5, dtype=dt)
            nl.store(out[j], value=nl.load(c, dtype=nl.float32))
        return out
    got = nki.simulate_kernel(k, np.zeros((1, 1), np.float32))
    np.testing.assert_array_equal(got[0], table * 1.5)
    np.testing.assert_array_equal(got[1], (table * 1.5).astype(np.int8))
    np.testing.assert_array_equal(got[2], table * 1.5)
    kern = trace(k, (np.zeros((1, 1), np.float32),)).kernel
    consts = [t for t in kern.tensors if t.fill == ir.FILL_DATA]
    assert [len(t.data) for t in consts] == [24, 12, 24]


def test_shared_identity_matrix(nkid_socket):
    def k(x):
        out = nl.ndarray((32, 32), dtype=nl.uint8, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(nl.shared_identity_matrix(32)))
        return out
    got = nki.simulate_kernel(k, np.zeros((1, 1), np.float32))
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, np.identity(32, np.uint8))


def test_a_constant_is_never_written_back(nkid_socket):
    """A constant the kernel overwrites in one run starts from its data in
    the next (the IR holds the values, runs share nothing)."""
    def k(x):
        out = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        c = nl.shared_constant(np.ones((4, 8), np.float32))
        nl.store(out, value=nl.load(c))
        nl.store(c, value=nl.load(x))
        return out
    x = np.full((4, 8), 5.0, np.float32)
    kern = nki.jit(k, mode="simulation")
    np.testing.assert_array_equal(kern(x), 1.0)
    np.testing.assert_array_equal(kern(x), 1.0)


def test_loop_reduce_bound_to_a_name(nkid_socket):
    def k(x):
        s_out = nl.ndarray(x.shape[1:], dtype=nl.float32, buffer=nl.shared_hbm)
        m_out = nl.ndarray(x.shape[1:], dtype=nl.float32, buffer=nl.shared_hbm)
        for i in nl.affine_range(x.shape[0]):
            t = nl.load(x[i])
            s = nl.loop_reduce(t, op=np.add, loop_indices=[i], dtype=nl.float32)
            m = nl.loop_reduce(t, op=nl.maximum, loop_indices=(i,))
        nl.store(s_out, value=s)
        nl.store(m_out, value=m)
        return s_out, m_out
    x = rng.standard_normal((7, 128, 40)).astype(np.float32)
    s, m = nki.simulate_kernel(k, x)
    np.testing.assert_allclose(s, x.sum(axis=0), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(m, x.max(axis=0))


def test_loop_reduce_into_a_tile_accumulates_onto_it(nkid_socket):
    def k(x):
        out = nl.ndarray((2,) + x.shape[2:], dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.ndarray((2,) + x.shape[2:], dtype=nl.float32, buffer=nl.sbuf)
        acc[0] = nl.full(x.shape[2:], 10.0, dtype=nl.float32)
        acc[1] = nl.full(x.shape[2:], 1.0, dtype=nl.float32)
        for j in nl.affine_range(x.shape[0]):
            for i in nl.affine_range(x.shape[1]):
                t = nl.load(x[j, i])
                acc[0] = nl.loop_reduce(t, op=np.add, loop_indices=[j, i])
                acc[1] = nl.loop_reduce(t, op=np.multiply, loop_indices=[j, i])
        nl.store(out, value=acc)
        return out
    x = rng.uniform(0.9, 1.1, (2, 3, 64, 16)).astype(np.float32)
    got = nki.simulate_kernel(k, x)
    np.testing.assert_allclose(got[0], 10 + x.sum(axis=(0, 1)), rtol=1e-5)
    np.testing.assert_allclose(got[1], x.prod(axis=(0, 1)), rtol=1e-5)


def test_loop_reduce_over_an_unrolled_python_loop(nkid_socket):
    def k(x):
        out = nl.ndarray(x.shape[1:], dtype=nl.float32, buffer=nl.shared_hbm)
        for i in range(x.shape[0]):
            s = nl.loop_reduce(nl.load(x[i]), op=np.add, loop_indices=[i])
        nl.store(out, value=s)
        return out
    x = rng.standard_normal((3, 16, 8)).astype(np.float32)
    np.testing.assert_allclose(nki.simulate_kernel(k, x), x.sum(axis=0), rtol=1e-5,
                               atol=1e-6)


def test_loop_reduce_refuses_other_operations():
    def k(x):
        for i in nl.affine_range(2):
            nl.loop_reduce(nl.load(x[i]), op=np.subtract, loop_indices=[i])
        return x
    with pytest.raises(NKIError, match="unsupported reduce operation .* for nl.loop_reduce"):
        nki.simulate_kernel(k, np.zeros((2, 4, 4), np.float32))


def all_reduce_kernel(x):
    out = nl.ndarray((2,) + x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    i, j = nl.program_id(0), nl.program_id(1)
    t = nl.load(x[i, j])
    nl.store(out[0, i, j], value=nl.all_reduce(t, op=np.add, program_axes=[1]))
    nl.store(out[1, i, j], value=nl.all_reduce(t, op=np.maximum, program_axes=(0, 1)))
    return out


def test_all_reduce_over_program_axes(nkid_socket):
    x = rng.standard_normal((2, 3, 128, 64)).astype(np.float32)
    got = nki.simulate_kernel(nki.jit(all_reduce_kernel)[2, 3], x)
    np.testing.assert_allclose(got[0], np.broadcast_to(x.sum(axis=1, keepdims=True), x.shape),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[1], np.broadcast_to(x.max(axis=(0, 1)), x.shape))
    again = nki.baremetal(all_reduce_kernel)[2, 3](x)
    np.testing.assert_array_equal(got, again)            # folded in program order


def test_all_reduce_errors(nkid_socket):
    def outside(x):
        nl.all_reduce(nl.load(x), op=np.add, program_axes=[1])
        return x

    def big(x):
        out = nl.ndarray((65, 4, 4), dtype=x.dtype, buffer=nl.shared_hbm)
        i = nl.program_id(0)
        nl.store(out[i], value=nl.all_reduce(nl.load(x), op=np.add, program_axes=0))
        return out
    with pytest.raises(NKIError, match="program axis 1 of nl.all_reduce is outside the launch"
                       " grid of 1 dimension"):
        nki.simulate_kernel(nki.jit(outside)[2], np.zeros((4, 4), np.float32))
    with pytest.raises(nkid.NkidError, match="'all_reduce' on a launch grid of 65 programs"
                       " exceeds the executor limit of 64"):
        nki.simulate_kernel(nki.jit(big)[65], np.zeros((4, 4), np.float32))


def test_all_reduce_a_failing_program_stops_the_others(nkid_socket):
    def k(x, idx):
        out = nl.ndarray((4, 8, 8), dtype=x.dtype, buffer=nl.shared_hbm)
        p = nl.program_id(0)
        it = nl.load(idx[p])
        t = nl.load(x[it, nl.arange(8)[None, :]])     # program 2 indexes out of range
        nl.store(out[p], value=nl.all_reduce(t, op=np.add, program_axes=[0]))
        return out
    x = np.ones((8, 8), np.float32)
    idx = np.zeros((4, 8, 1), np.int32)
    idx[2, 3, 0] = 99
    with pytest.raises(IndexError) as e:
        nki.simulate_kernel(nki.jit(k)[4], x, idx)
    assert "run-time index 99 on dimension 0 of tensor `x`" in e.value.message


@nki.trace
def scale_into(t, out_tile, factor):
    out_tile[...] = nl.multiply(t, factor)


@nki.jit(mode="trace")
def add_one(t):
    return nl.add(t, 1.0)


@nki.jit
def uses_sub_kernels(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    o = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    scale_into(nl.load(x), o, 3.0)
    nl.store(out, value=add_one(o))
    return out


def test_nki_trace_sub_kernels_run_inline(nkid_socket):
    x = rng.standard_normal((64, 32)).astype(np.float32)
    np.testing.assert_allclose(uses_sub_kernels(x), 3 * x + 1, rtol=1e-6)
    ir_kernel = trace(uses_sub_kernels.func, (x,)).kernel
    assert [t.kind for t in ir_kernel.tensors].count(ir.TENSOR_PARAM) == 1


def test_nki_trace_kernel_to_simulate_kernel(nkid_socket):
    @nki.trace
    def k(a, b):
        nl.store(b, value=nl.exp(nl.load(a)))
    a = rng.standard_normal((16, 16)).astype(np.float32)
    b = np.zeros_like(a)
    nki.simulate_kernel(k, a, b)
    np.testing.assert_allclose(b, np.exp(a), rtol=1e-6)
    traced = k(a, b)                 # outside a kernel: traced, not run
    assert traced.name == "k" and traced.format == "nkir/1"


def test_nki_tensor_is_the_tile_type(nkid_socket):
    def k(x):
        out = nl.ndarray((4, 8, 1), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        assert isinstance(t, nki.tensor)
        assert t.assert_shape((4, 8)) is t
        assert t.expand_dims(2).shape == (4, 8, 1)
        assert t.ndim == 2 and t.itemsize == 4 and t.dtype == np.float32
        nl.store(out, value=t.expand_dims(-1))
        return out

    def wrong(x):
        nl.load(x).assert_shape((4, 9))
        return x
    x = rng.standard_normal((4, 8)).astype(np.float32)
    np.testing.assert_array_equal(nki.simulate_kernel(k, x), x[:, :, None])
    with pytest.raises(AssertionError, match=r"expected a tensor of shape \[4, 9\], got"
                       r" \[4, 8\] \(test_lang_kernel.py:\d+\)"):
        nki.simulate_kernel(wrong, x)


def test_psum_accumulation_group_starts_from_zero(nkid_socket):
    # `ps[i] += nc_matmul(...)` into an nl.ndarray PSUM tile nothing has
    # touched: the group's first matmul overwrites the bank on the device
    # (NKI's attention tutorials rely on it); a plain read of an
    # uninitialized PSUM tile still reads NaN
    def k(a, b):
        out = nl.ndarray((2, 128, 256), dtype=nl.float32, buffer=nl.shared_hbm)
        junk = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.shared_hbm)
        ps = nl.ndarray((2, nl.par_dim(128), 256), dtype=nl.float32, buffer=nl.psum)
        for i in nl.affine_range(2):
            for kk in nl.affine_range(4):
                ps[i] += nisa.nc_matmul(nl.load(a[i, nl.ds(kk * 128, 128), :]),
                                        nl.load(b[nl.ds(kk * 128, 128), :]))
            nl.store(out[i], value=nl.copy(ps[i]))
        raw = nl.ndarray((nl.par_dim(128), 256), dtype=nl.float32, buffer=nl.psum)
        nl.store(junk, value=nl.copy(raw))
        return out, junk
    a = rng.standard_normal((2, 512, 128)).astype(np.float32)
    b = rng.standard_normal((512, 256)).astype(np.float32)
    got, junk = nki.simulate_kernel(k, a, b)
    want = np.stack([a[i].T.astype(np.float64) @ b for i in range(2)])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert np.isnan(junk).all()


def test_a_masked_result_assigned_through_a_copy_keeps_its_mask(nkid_socket):
    # buf[:, a] = op(buf[:, b], mask=m) cannot make op write buf directly
    # (it reads buf elsewhere): the copy into buf must write what m
    # selected only (NKI's reference flash attention masks its sliding
    # window select by a condition of loop indices this way)
    def k(x):
        out = nl.ndarray((128, 1024), dtype=x.dtype, buffer=nl.shared_hbm)
        buf = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.sbuf)
        buf[...] = nl.load(x)
        for i in nl.affine_range(4):
            ip, jf = nl.mgrid[0:128, 0:128]
            a = nl.ds(((i + 1) % 4) * 128, 128)
            buf[:, a] = nl.add(buf[:, nl.ds(i * 128, 128)], 100.0,
                               mask=(i * 128 >= 256) & (ip >= jf))
        nl.store(out, value=buf)
        return out
    x = rng.standard_normal((128, 1024)).astype(np.float32)
    want = x.copy()
    low = np.tril(np.ones((128, 128), bool))
    for i in range(4):
        if i * 128 >= 256:
            d = slice(((i + 1) % 4) * 128, ((i + 1) % 4) * 128 + 128)
            want[:, d] = np.where(low, want[:, i * 128:(i + 1) * 128] + 100, want[:, d])
    np.testing.assert_allclose(nki.simulate_kernel(k, x), want, rtol=1e-6)


def test_a_column_of_a_tile_indexes_as_partitions_by_one(nkid_socket):
    # t[:, i] of a [P, N] tile has the partitions only; on chip it is a
    # [P, 1] tile, and NKI's reference flash attention indexes it so
    def scale_column(col, by):
        col[:, 0] = nl.multiply(col[:, 0], by)

    def k(x):
        out = nl.ndarray((128, 4), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        for i in nl.affine_range(4):
            scale_column(t[:, i], 2.0)
        nl.store(out, value=t)
        return out
    x = rng.standard_normal((128, 4)).astype(np.float32)
    np.testing.assert_allclose(nki.simulate_kernel(k, x), 2 * x, rtol=1e-6)


def test_one_element_loads_as_a_tile_that_broadcasts(nkid_socket):
    # nl.load(s[b, h]): an SBUF scalar, broadcast along the partitions
    # (NKI's reference attention backward loads its sinks so)
    def k(x, s):
        out = nl.ndarray((2, 128, 1), dtype=x.dtype, buffer=nl.shared_hbm)
        for b in nl.affine_range(2):
            sig = nl.load(s[b, 1])
            nl.store(out[b], value=nl.add(nl.zeros((128, 1), dtype=nl.float32), sig))
        return out
    x = np.zeros((1,), np.float32)
    s = rng.standard_normal((2, 3)).astype(np.float32)
    got = nki.simulate_kernel(k, x, s)
    np.testing.assert_array_equal(got, np.broadcast_to(s[:, 1, None, None], (2, 128, 1)))
