"""Direct allocation (nki.compiler.sbuf/psum alloc and mod_alloc): kernels
that place their tiles run; placements NKI's compiler refuses (outside
SBUF/PSUM, bad start partitions, tensors alive together on overlapping
memory, init values, ...) are refused with NKI's words and the kernel's
line, before anything runs."""

import numpy as np
import pytest

from nkid import nki, NKIError
import nkid.nki.isa as nisa
import nkid.nki.language as nl
import nkid.nki.compiler as ncc
from nkid.nki.language import par_dim
from nkid.tracer import trace

rng = np.random.default_rng(5)
X = rng.standard_normal((4, 128, 512)).astype(np.float32)


def assert_refused(kernel, match):
    """Simulating kernel on X raises an NKIError whose message matches the
    regex match."""
    with pytest.raises(NKIError, match=match):
        nki.simulate_kernel(kernel, X)


def double_buffered_exp(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((4, par_dim(128), 512), dtype=x.dtype,
                   buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))
    u = nl.ndarray((4, par_dim(128), 512), dtype=x.dtype,
                   buffer=ncc.sbuf.mod_alloc(base_addr=2 * 2048, num_free_tiles=(2,)))
    zero = nl.ndarray((par_dim(128), 1), dtype=nl.float32,
                      buffer=ncc.sbuf.mod_alloc(base_addr=4 * 2048))
    zero[...] = 0.0
    for i in nl.affine_range(4):
        t[i] = nl.load(x[i])
        u[i] = nisa.activation(op=np.exp, data=t[i], bias=zero)
        nl.store(out[i], value=u[i])
    return out


def test_mod_alloc_kernel_runs(nkid_socket):
    np.testing.assert_allclose(nki.simulate_kernel(double_buffered_exp, X), np.exp(X),
                               rtol=1e-6)


def test_alloc_with_a_function(nkid_socket):
    def placed(idx, pdim_size, fdim_size):
        (i,) = idx
        return (0, 8192 + i * fdim_size)

    def k(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((4, par_dim(128), 512), dtype=x.dtype, buffer=ncc.sbuf.alloc(placed))
        for i in nl.affine_range(4):
            t[i] = nl.load(x[i])
        for i in nl.affine_range(4):
            nl.store(out[i], value=t[i])
        return out
    np.testing.assert_array_equal(nki.simulate_kernel(k, X), X)


def _pair(x, u_addr):
    """An output like x and two double-buffered tensors t (at 0) and u."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((4, par_dim(128), 512), dtype=x.dtype,
                   buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))
    u = nl.ndarray((4, par_dim(128), 512), dtype=x.dtype,
                   buffer=ncc.sbuf.mod_alloc(base_addr=u_addr, num_free_tiles=(2,)))
    return out, t, u


def test_overlapping_tensors_alive_together_are_refused():
    # the direct allocation guide's example: t and u partially overlap,
    # and t[i], u[i] are alive together
    def k(x):
        out, t, u = _pair(x, u_addr=1024)
        for i in nl.affine_range(4):
            t[i] = nl.load(x[i])
            u[i] = nl.load(x[i])
            nl.store(out[i], value=nl.add(t[i], u[i]))
        return out
    with pytest.raises(NKIError) as e:
        nki.simulate_kernel(k, X)
    msg = str(e.value)
    assert ("allocation of tensor `u` (ncc.sbuf.mod_alloc(base_addr=1024, num_free_tiles=(2,)),"
            " partitions [0, 128), bytes [1024, 3072)) overlaps tensor `t`"
            " (ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)), partitions [0, 128),"
            " bytes [0, 2048))") in msg
    assert "(lifetime conflict) (test_lang_alloc.py:" in msg


def test_lifetimes_are_per_logical_tile(nkid_socket):
    # t[i] and u[i] sit on overlapping memory (t[1] and u[0] on the same
    # bytes) but no two of them are alive at the same time in program
    # order; likewise two PSUM tensors sharing banks in two phases of one
    # loop, as NKI's attention tutorials allocate them
    def k(x):
        out, t, u = _pair(x, u_addr=2048)
        ident = nl.ndarray((par_dim(128), 128), dtype=x.dtype,
                           buffer=ncc.sbuf.mod_alloc(base_addr=8 * 2048))
        ident[...] = nl.load(nl.shared_identity_matrix(128, dtype=x.dtype))
        p = nl.ndarray((4, 4, par_dim(128), 128), dtype=nl.float32,
                       buffer=ncc.psum.mod_alloc(base_bank=0, num_bank_tiles=(1, 2)))
        q = nl.ndarray((4, 4, par_dim(128), 128), dtype=nl.float32,
                       buffer=ncc.psum.mod_alloc(base_bank=0, num_bank_tiles=(1, 2)))
        for i in nl.sequential_range(4):
            t[i] = nl.load(x[i])
            u[i] = nl.multiply(t[i], 2.0)
            for j in nl.affine_range(4):
                p[i, j] = nisa.nc_matmul(u[i][:, nl.ds(j * 128, 128)], ident)
                u[i][:, nl.ds(j * 128, 128)] = nl.copy(p[i, j])
            for j in nl.affine_range(4):
                q[i, j] = nisa.nc_matmul(u[i][:, nl.ds(j * 128, 128)], ident)
                u[i][:, nl.ds(j * 128, 128)] = nl.add(q[i, j], 1.0)
            nl.store(out[i], value=u[i])
        return out
    # each 128-column block transposed twice: back in place
    np.testing.assert_allclose(nki.simulate_kernel(k, X), 2 * X + 1, rtol=1e-5, atol=1e-5)


def test_too_few_physical_tiles_are_refused():
    # the guide's second example: all 8 logical tiles must be alive when
    # the first loop ends, the allocation gives them 2 physical tiles
    def k(x):
        out = nl.ndarray((8, 128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
        t1 = nl.ndarray((8, par_dim(128), 512), dtype=x.dtype,
                        buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))
        for i in nl.affine_range(8):
            t1[i] = nl.load(x[i % 4])
        for i in nl.affine_range(8):
            nl.store(out[i], value=nl.exp(t1[i]))
        return out
    assert_refused(k, r"logical tiles \(0,\) and \(2,\) of tensor `t1`"
                      r" \(ncc.sbuf.mod_alloc\(base_addr=0, num_free_tiles=\(2,\)\)\) share"
                      r" partitions \[0, 128\), bytes \[0, 2048\) while both are alive: .*"
                      r"\(lifetime conflict\) \(test_lang_alloc.py:\d+\)")


def test_reusing_memory_after_a_tensor_dies_is_fine(nkid_socket):
    def k(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(4):
            a = nl.ndarray((par_dim(128), 512), dtype=x.dtype,
                           buffer=ncc.sbuf.mod_alloc(base_addr=0))
            a[...] = nl.load(x[i])
            b = nl.ndarray((par_dim(128), 512), dtype=x.dtype,
                           buffer=ncc.sbuf.mod_alloc(base_addr=2048))
            b[...] = nl.multiply(a, 2.0)
            c = nl.ndarray((par_dim(128), 512), dtype=x.dtype,
                           buffer=ncc.sbuf.mod_alloc(base_addr=0))     # a is dead
            c[...] = nl.add(b, 1.0)
            nl.store(out[i], value=c)
        return out
    np.testing.assert_allclose(nki.simulate_kernel(k, X), 2 * X + 1, rtol=1e-6)


def test_a_tensor_used_in_a_loop_lives_through_it():
    def k(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        keep = nl.ndarray((par_dim(128), 512), dtype=x.dtype,
                          buffer=ncc.sbuf.mod_alloc(base_addr=0))
        keep[...] = nl.load(x[0])
        for i in nl.affine_range(4):
            nl.store(out[i], value=keep)        # keep read in every trip ...
            t = nl.ndarray((par_dim(128), 512), dtype=x.dtype,
                           buffer=ncc.sbuf.mod_alloc(base_addr=1024))
            t[...] = nl.load(x[i])              # ... so this overwrites it
            nl.store(out[i], value=t)
        return out
    assert_refused(k, "allocation of tensor `t` .* overlaps tensor `keep`")


@pytest.mark.parametrize("target,ok", [("trn1", False), ("trn2", True)])
def test_sbuf_addresses_past_the_partition_are_refused(nkid_socket, target, ok):
    def k(x):
        out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((par_dim(128), 512), dtype=x.dtype,
                       buffer=ncc.sbuf.mod_alloc(base_addr=179 * 1024))
        t[...] = nl.load(x[0])
        nl.store(out, value=t)
        return out
    kern = nki.jit(k, mode="simulation", platform_target=target)
    if ok:
        np.testing.assert_array_equal(kern(X), X[0])
        return
    with pytest.raises(NKIError, match=r"SBUF allocation of logical tile \(\) of tensor `t` at"
                       r" byte_addr 183296 with 2048 bytes per partition exceeds the 180224"
                       r" bytes of an SBUF partition available to allocation \(192 KiB minus"
                       r" 16 KiB for compiler internal usage\) \(test_lang_alloc.py:\d+\)"):
        kern(X)


def test_psum_limits():
    def bank(x):
        nl.ndarray((4, par_dim(128), 512), dtype=nl.float32,
                   buffer=ncc.psum.mod_alloc(base_bank=6, num_bank_tiles=(4,)))
        return x

    def wide(x):
        nl.ndarray((par_dim(128), 1024), dtype=nl.float32, buffer=ncc.psum.mod_alloc(base_bank=0))
        return x

    def offset(x):
        nl.ndarray((par_dim(128), 128), dtype=nl.float32,
                   buffer=ncc.psum.alloc(lambda idx, pdim_size, fdim_size: (0, 0, 512)))
        return x
    assert_refused(bank, r"PSUM bank_id 8 of logical tile \(2,\) of tensor"
                         r" `.*` is out of range: PSUM has 8 banks \(0-7\)")
    assert_refused(wide, "fdim_size 4096 of tensor .* exceeds 2KiB, which is"
                         " the size of a single PSUM bank per partition")
    assert_refused(offset, r"start_partition \(0\) and byte_addr \(512\) of a PSUM"
                           " tile must both be 0")


@pytest.mark.parametrize("pdim,start,ok", [(128, 0, True), (128, 64, False), (64, 64, True),
                                           (64, 32, False), (32, 96, True), (32, 16, False)])
def test_start_partition_rules(pdim, start, ok):
    def k(x):
        nl.ndarray((par_dim(pdim), 64), dtype=nl.float32,
                   buffer=ncc.sbuf.alloc(lambda idx, pdim_size, fdim_size: (start, 0)))
        return x
    if ok:
        trace(k, (X,))
        return
    assert_refused(k, "start_partition %d of logical tile .* is invalid for a"
                      " tile of %d partitions" % (start, pdim))


def test_tiles_of_one_tensor_partially_overlapping_are_refused():
    def k(x):
        nl.ndarray((2, par_dim(128), 512), dtype=nl.float32,
                   buffer=ncc.sbuf.alloc(lambda idx, pdim_size, fdim_size: (0, idx[0] * 1024)))
        return x
    assert_refused(k, r"physical tiles of tensor `.*` partially overlap:"
                      r" partitions \[0, 128\), bytes \[0, 2048\) and partitions \[0, 128\),"
                      r" bytes \[1024, 3072\)")


def test_init_values_non_io_hbm_and_transposes_are_refused():
    def init(x):
        nl.zeros((par_dim(128), 512), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0))
        return x

    def scratch_hbm(x):
        out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
        tmp = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.hbm)
        t = nl.ndarray((par_dim(128), 512), dtype=x.dtype, buffer=ncc.sbuf.mod_alloc(base_addr=0))
        t[...] = nl.load(x[0])
        nl.store(tmp, value=t)
        nl.store(out, value=t)
        return out

    def transpose(x):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        a = nl.ndarray((par_dim(128), 128), dtype=x.dtype, buffer=ncc.sbuf.mod_alloc(base_addr=0))
        a[...] = nl.load(x[0, :, 0:128])
        p = nl.ndarray((par_dim(128), 128), dtype=nl.float32, buffer=ncc.psum.mod_alloc(base_bank=0))
        p[...] = nl.matmul(a, a)
        s = nl.ndarray((par_dim(128), 128), dtype=nl.float32,
                       buffer=ncc.sbuf.mod_alloc(base_addr=512))
        s[...] = nl.copy(p)
        nl.store(out, value=s)
        return out
    assert_refused(init, r"Creating SBUF/PSUM tensor with init value is not"
                         r" supported in allocated NKI kernels. \(err_tensor_creation_on_scratchpad"
                         r"_with_init_value_not_supported\)")
    assert_refused(scratch_hbm, "Non IO HBM tensor is not supported in allocated NKI"
                                " kernel: tmp")
    assert_refused(transpose, r"err_transpose_on_tensor_engine_not_allowed_in_allocated"
                              r"_kernel\) \(test_lang_alloc.py:\d+\)")


def allocated_pe_transpose(x, ident):
    """nc_matmul's transpose mode in an allocated kernel, as nki-samples'
    allocated_fused_rms_norm_qkv writes it for NeuronCore-v3: allowed (an
    nc_transpose on the tensor engine is not), into a PSUM tile of x's
    dtype."""
    out = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.shared_hbm)
    a = nl.ndarray((par_dim(128), 128), dtype=x.dtype, buffer=ncc.sbuf.mod_alloc(base_addr=0))
    a[...] = nl.load(x)
    i = nl.ndarray((par_dim(128), 128), dtype=x.dtype, buffer=ncc.sbuf.mod_alloc(base_addr=512))
    i[...] = nl.load(ident)
    p = nl.ndarray((par_dim(128), 128), dtype=x.dtype, buffer=ncc.psum.mod_alloc(base_bank=0))
    p[...] = nisa.nc_matmul(a, i, is_transpose=True)
    s = nl.ndarray((par_dim(128), 128), dtype=x.dtype, buffer=ncc.sbuf.mod_alloc(base_addr=1024))
    s[...] = nl.copy(p)
    nl.store(out, value=s)
    return out


def test_allocated_transpose_mode_on_trn2(nkid_socket):
    x = np.random.default_rng(5).standard_normal((128, 128)).astype(np.float16)
    got = nki.jit(allocated_pe_transpose, platform_target="trn2")(x, np.eye(128, dtype=np.float16))
    np.testing.assert_array_equal(got, x.T)


def test_force_auto_alloc_ignores_placements(nkid_socket):
    @ncc.force_auto_alloc
    def k(x):
        out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
        a = nl.ndarray((par_dim(128), 512), dtype=x.dtype, buffer=ncc.sbuf.mod_alloc(base_addr=0))
        b = nl.ndarray((par_dim(128), 512), dtype=x.dtype, buffer=ncc.sbuf.mod_alloc(base_addr=0))
        a[...] = nl.load(x[0])
        b[...] = nl.load(x[1])
        nl.store(out, value=nl.add(a, b))
        return out
    np.testing.assert_allclose(nki.simulate_kernel(k, X), X[0] + X[1], rtol=1e-6)


def test_decorators_and_auto_alloc_are_accepted(nkid_socket):
    @ncc.enable_stack_allocator
    @ncc.skip_middle_end_transformations
    @nki.jit(mode="simulation")
    def k(x):
        out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((128, 512), dtype=x.dtype, buffer=ncc.sbuf.auto_alloc())
        t[...] = nl.load(x[2])
        nl.store(out, value=t)
        return out
    np.testing.assert_array_equal(k(X), X[2])
    assert ncc.psum.auto_alloc() is nl.psum


def test_mod_alloc_arguments_are_checked():
    with pytest.raises(ValueError, match="base_partition of ncc.sbuf.mod_alloc must be 0"):
        ncc.sbuf.mod_alloc(base_addr=0, base_partition=32)
    with pytest.raises(TypeError, match="missing required keyword argument 'base_addr'"):
        ncc.sbuf.mod_alloc()
    with pytest.raises(ValueError, match="num_par_tiles of ncc.psum.mod_alloc must currently"):
        ncc.psum.mod_alloc(base_bank=0, num_par_tiles=(2,))

    def k(x):
        # NKI's modulo allocation zips the tile counts with the block index:
        # extra counts are ignored, as there
        out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((par_dim(128), 512), dtype=x.dtype,
                       buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2, 2)))
        t[...] = nl.load(x[0])
        nl.store(out, value=t)
        return out
    trace(k, (X,))


def test_scheduling_directives_are_accepted_and_change_nothing(nkid_socket):
    # a software-pipelined loop as NKI's attention kernels write it: the
    # directives steer neuronx-cc's scheduler; nkid runs in program order
    def k(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((4, par_dim(128), 512), dtype=x.dtype,
                       buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))
        with ncc.allocation_scope():
            for i in nl.sequential_range(4, directives=ncc.no_reorder()):
                t[i] = nl.load(x[i])
                nl.store(out[i], value=nl.multiply(t[i], 2.0))
        with ncc.no_reorder():
            for i in nl.affine_range(4, directives=[ncc.multi_buffer(3)]):
                nl.store(out[i], value=nl.add(nl.load(out[i]), 1.0))
        return out
    np.testing.assert_allclose(nki.simulate_kernel(k, X), 2 * X + 1, rtol=1e-6)
    assert ncc.multi_buffer().factor == 2 and ncc.multi_buffer(factor=4).factor == 4
    with pytest.raises(ValueError, match="multi_buffer factor must be a positive integer"):
        ncc.multi_buffer(0)
    with pytest.raises(TypeError, match="directives must be nki.compiler directives"):
        nl.sequential_range(4, directives="no_reorder")


def test_kernels_too_long_to_follow_get_the_coarse_rule(monkeypatch):
    # past MAX_EVENTS tile events the check falls back to whole tensors:
    # two allocated tensors alive together may not overlap at all
    import nkid.tracer.alloc as alloc

    def k(x):
        out, t, u = _pair(x, u_addr=2048)
        for i in nl.sequential_range(4):
            t[i] = nl.load(x[i])
            u[i] = nl.multiply(t[i], 2.0)
            nl.store(out[i], value=u[i])
        return out
    trace(k, (X,))                            # tile by tile: no conflict
    monkeypatch.setattr(alloc, "MAX_EVENTS", 8)
    with pytest.raises(NKIError, match="allocation of tensor `u` .* overlaps tensor `t`"):
        trace(k, (X,))
