"""Tracer unit tests: decode the emitted nkir.v1.Kernel and check its structure."""

import inspect
import time

import numpy as np
import pytest

from nkid import nki, NKISyntaxError
import nkid.nki.isa as nisa
import nkid.nki.language as nl
from nkid._proto import nkir_pb2 as ir
from nkid.tracer import trace
from nkid.nki import _numpy_kernel
from kernels import elementwise as ew, matmul as mm


def _trace(func, *args, grid=()):
    func = getattr(func, "func", func)
    return trace(func, args, {}, grid)


def _line_of(func, text):
    src, start = inspect.getsourcelines(getattr(func, "func", func))
    for i, line in enumerate(src):
        if text in line:
            return start + i
    raise AssertionError(text)


def _ops(k):
    out = []

    def walk(ops, depth):
        for op in ops:
            out.append((depth, op))
            if op.kind == ir.OP_LOOP:
                walk(op.loop.body, depth + 1)
    walk(k.body, 0)
    return out


def _terms(aff):
    return {(t.kind, t.index): t.coef for t in aff.terms}


def loop_add(x, y):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0] // 128):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        u = nl.load(y[i * 128 + nl.arange(128)[:, None], nl.arange(x.shape[1])[None, :]])
        nl.store(out[nl.ds(i * 128, 128), :], value=t + u)
    return out


def test_loop_ir_size_independent_of_trip_count():
    small = _trace(loop_add, np.zeros((4 * 128, 64), np.float32), np.zeros((4 * 128, 64), np.float32))
    big = _trace(loop_add, np.zeros((1024 * 128, 64), np.float32),
                 np.zeros((1024 * 128, 64), np.float32))
    assert len(_ops(small.kernel)) == len(_ops(big.kernel))
    assert abs(len(big.ir) - len(small.ir)) <= 8      # varints of the sizes only
    loop = [op for _, op in _ops(big.kernel) if op.kind == ir.OP_LOOP][0]
    assert (loop.loop.kind, loop.loop.start, loop.loop.stop, loop.loop.step) == \
        (ir.LOOP_AFFINE, 0, 1024, 1)
    assert big.kernel.num_loop_vars == 1


def test_affine_indices_slices_arange_and_ds():
    k = _trace(loop_add, np.zeros((512, 64), np.float32), np.zeros((512, 64), np.float32)).kernel
    loads = [op for _, op in _ops(k) if op.kind == ir.OP_LOAD]
    store = [op for _, op in _ops(k) if op.kind == ir.OP_STORE][0]
    for acc in [loads[0].src[0].access, loads[1].src[0].access, store.dst]:
        assert list(acc.shape) == [128, 64]
        assert _terms(acc.index[0]) == {(ir.TERM_LOOP, 0): 128, (ir.TERM_AXIS, 0): 1}
        assert _terms(acc.index[1]) == {(ir.TERM_AXIS, 1): 1}
        assert acc.index[0].constant == 0


def test_ops_carry_kernel_file_and_line():
    k = _trace(loop_add, np.zeros((256, 64), np.float32), np.zeros((256, 64), np.float32)).kernel
    assert k.files[0].endswith("test_tracer.py")
    store = [op for _, op in _ops(k) if op.kind == ir.OP_STORE][0]
    assert store.loc.line == _line_of(loop_add, "nl.store(out")
    assert k.loc.line == _line_of(loop_add, "def loop_add")
    loop = k.body[0]
    assert loop.loc.line == _line_of(loop_add, "for i in nl.affine_range")


def test_spmd_program_ids_and_grid():
    a = np.zeros((256, 1024), np.float16)
    k = _trace(ew.add_spmd, a, a, grid=(2, 2)).kernel
    assert list(k.grid) == [2, 2]
    load = k.body[0]
    acc = load.src[0].access
    assert _terms(acc.index[0]) == {(ir.TERM_PROGRAM, 0): 128, (ir.TERM_AXIS, 0): 1}
    assert _terms(acc.index[1]) == {(ir.TERM_PROGRAM, 1): 512, (ir.TERM_AXIS, 1): 1}


def test_nc_grid_multiplies():
    g = _numpy_kernel.normalize_grid((nl.spmd_dim(3, nl.nc(2)), 2))
    assert g == (6, 2)
    assert _numpy_kernel.normalize_grid(nl.nc(2) * 2) == (4,)
    assert _numpy_kernel.normalize_grid(2 * nl.nc(2)) == (4,)
    assert ew.add_spmd[nl.spmd_dim(2, nl.nc(2)), 3].grid == (4, 3)


def test_num_programs_and_ndim_fold_to_constants():
    seen = {}

    def k(x):
        seen["n"] = nl.num_programs()
        seen["n1"] = nl.num_programs(1)
        seen["d"] = nl.program_ndim()
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(x))
        return out
    _trace(k, np.zeros((4, 4), np.float32), grid=(3, 5))
    assert seen == {"n": 15, "n1": 5, "d": 2}


def test_mask_becomes_access_mask():
    def k(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        ip = nl.arange(128)[:, None]
        jf = nl.arange(x.shape[1])[None, :]
        for i in nl.affine_range(2):
            v = nl.load(x[i * 128 + ip, jf], mask=(i * 128 + ip < 200) & (jf >= 1))
            nl.store(out[i * 128 + ip, jf], value=v, mask=(i * 128 + ip < 200))
        return out
    kern = _trace(k, np.zeros((200, 8), np.float32)).kernel
    load = [op for _, op in _ops(kern) if op.kind == ir.OP_LOAD][0]
    m = load.src[0].access.mask
    assert len(m) == 2
    # 200 - (i*128 + p) - 1 >= 0
    assert m[0].constant == 199
    assert _terms(m[0]) == {(ir.TERM_LOOP, 0): -128, (ir.TERM_AXIS, 0): -1}
    # f - 1 >= 0
    assert m[1].constant == -1 and _terms(m[1]) == {(ir.TERM_AXIS, 1): 1}
    assert len(load.dst.mask) == 2


def test_control_flow_on_loop_variable_is_an_if_op():
    """NKI branches on loop indices (nki-samples' flash attention does):
    the if is an OP_IF; on nl.arange it stays NKI's error."""
    def k(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(4):
            if i < 3:
                nl.store(out, value=nl.load(x))
        return out

    def on_arange(x):
        if nl.arange(4)[:, None] < 3:
            nl.load(x)
        return x
    kern = _trace(k, np.zeros((4, 4), np.float32)).kernel
    (br,) = [op for _, op in _ops(kern) if op.kind == ir.OP_IF]
    # 3 - i - 1 >= 0
    assert br.branch.cond[0].constant == 2
    assert _terms(br.branch.cond[0]) == {(ir.TERM_LOOP, 0): -1}
    with pytest.raises(NKISyntaxError) as e:
        _trace(on_arange, np.zeros((4, 4), np.float32))
    msg = str(e.value)
    assert "err_control_flow_condition_depending_on_arange" in msg
    assert "test_tracer.py:%d" % _line_of(on_arange, "if nl.arange") in msg


def test_control_flow_on_arange_is_an_error():
    def k(x):
        j = nl.arange(8)[None, :]
        if j > 2:
            pass
    with pytest.raises(NKISyntaxError, match="Control-flow depending on `nl.arange`"):
        _trace(k, np.zeros((4, 8), np.float32))


def test_wide_partition_traces_validation_is_the_daemons():
    k = _trace(ew.wide_partition, np.zeros((256, 64), np.float32)).kernel
    tiles = [t for t in k.tensors if t.kind == ir.TENSOR_TILE]
    assert list(tiles[0].shape) == [256, 64]


def test_psum_accumulate_retargets_matmul():
    a = np.zeros((256, 256), np.float32)
    b = np.zeros((256, 1024), np.float32)
    k = _trace(mm.mm_tiled, a, b).kernel
    kinds = [op.kind for _, op in _ops(k)]
    assert ir.OP_TENSOR_TENSOR not in kinds
    mmop = [op for _, op in _ops(k) if op.kind == ir.OP_MATMUL][0]
    assert mmop.accumulate and mmop.transpose_x
    assert k.tensors[mmop.dst.tensor].space == ir.SPACE_PSUM
    assert k.tensors[mmop.dst.tensor].name == "acc"
    # the loads write the declared tiles directly: no copies, no uninit allocs
    assert ir.OP_COPY in kinds and kinds.count(ir.OP_COPY) == 1
    allocs = [op for _, op in _ops(k) if op.kind == ir.OP_ALLOC]
    assert [a.fill for a in allocs] == [ir.FILL_ZERO]


def test_par_dim_tiles_are_partition_major():
    a = np.zeros((256, 256), np.float32)
    b = np.zeros((256, 1024), np.float32)
    k = _trace(mm.mm_hoisted, a, b).kernel
    t = [t for t in k.tensors if t.name == "a_all"][0]
    assert list(t.shape) == [128, 2, 128]
    load = [op for _, op in _ops(k) if op.kind == ir.OP_LOAD][0]
    assert list(load.dst.shape) == [128, 128]
    assert _terms(load.dst.index[1]) == {(ir.TERM_LOOP, 1): 1}


def test_hbm_buffers_and_tile_kinds():
    def k(x):
        o1 = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        o2 = nl.zeros(x.shape, dtype=nl.bfloat16, buffer=nl.hbm)
        z = nl.zeros((128, 4), dtype=nl.float32)
        f = nl.full((128, 4), 2.5, dtype=nl.float32)
        nl.store(o1, value=nl.load(x) + z + f)
        nl.store(o2, value=nl.load(x))
        return o1, o2
    kern = _trace(k, np.zeros((128, 4), np.float32)).kernel
    ts = {t.name: t for t in kern.tensors}
    assert ts["o1"].kind == ir.TENSOR_HBM and ts["o1"].space == ir.SPACE_SHARED_HBM
    assert ts["o2"].space == ir.SPACE_HBM and ts["o2"].fill == ir.FILL_ZERO
    assert ts["o2"].dtype == ir.DT_BFLOAT16
    assert ts["z"].kind == ir.TENSOR_TILE
    allocs = [op for op in kern.body if op.kind == ir.OP_ALLOC]
    assert [(a.fill, a.value) for a in allocs] == [(ir.FILL_ZERO, 0), (ir.FILL_VALUE, 2.5)]
    assert list(kern.outputs) == [ts_i for ts_i, t in enumerate(kern.tensors)
                                  if t.name in ("o1", "o2")]


def test_free_dim_and_partition_broadcast():
    def k(x, row):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        r = nl.load(row)                 # [1, N]
        s = nl.sum(t, axis=1)            # [P] acts as [P, 1]
        nl.store(out, value=(t - s) * r)
        return out
    kern = _trace(k, np.zeros((128, 32), np.float32), np.zeros((1, 32), np.float32)).kernel
    tt = [op for op in kern.body if op.kind == ir.OP_TENSOR_TENSOR]
    sub, mul = tt
    s_acc = sub.src[1].access
    assert list(s_acc.shape) == [128, 32]
    assert _terms(s_acc.index[0]) == {(ir.TERM_AXIS, 0): 1}
    assert _terms(s_acc.index[1]) == {}          # broadcast along the free dim
    r_acc = mul.src[1].access
    assert _terms(r_acc.index[0]) == {} and _terms(r_acc.index[1]) == {(ir.TERM_AXIS, 1): 1}


def test_scalars_both_sides_and_promotion():
    def k(x, y):
        out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        a, b = nl.load(x), nl.load(y)
        c = 1.0 - a
        d = a * 2
        e = a + b
        assert c.dtype == nl.float16 and d.dtype == nl.float16
        assert e.dtype == nl.float32          # fp16 + bf16 -> fp32
        assert (nl.load(x, dtype=nl.int8) + 0.5).dtype == nl.float32
        nl.store(out, value=e)
        return out
    kern = _trace(k, np.zeros((4, 4), np.float16),
                  np.zeros((4, 4), nl.bfloat16)).kernel
    sub = [op for op in kern.body if op.kind == ir.OP_TENSOR_TENSOR][0]
    assert sub.src[0].WhichOneof("value") == "scalar" and sub.src[0].scalar == 1.0


def test_mixing_basic_and_advanced_indexing_is_an_error():
    def k(x):
        t = nl.load(x[nl.arange(4)[:, None], 0:4])
    with pytest.raises(NKISyntaxError, match="err_unsupported_mixing_basic_advanced"):
        _trace(k, np.zeros((4, 4), np.float32))


def test_symbolic_slice_needs_constant_size():
    def k(x):
        for i in nl.affine_range(2):
            nl.load(x[i:2 * i + 1, :])
    with pytest.raises(NKISyntaxError, match="must be constant"):
        _trace(k, np.zeros((4, 4), np.float32))


def test_tile_setitem_and_iota_and_reduce_shapes():
    def k(x):
        out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(x)
        acc = nl.ndarray((128, 4), dtype=nl.float32)
        acc[:, 0:2] = nl.max(t, axis=1, keepdims=True).broadcast_to((128, 2))
        acc[:, 2:4] = 0
        assert nl.sum(t, axis=1).shape == (128,)
        assert nl.mean(t, axis=[1], keepdims=True).shape == (128, 1)
        i = nisa.iota(nl.arange(4)[None, :], dtype=nl.int32)
        assert i.shape == (1, 4)
        nl.store(out, value=acc)
        return out
    kern = _trace(k, np.zeros((128, 16), np.float32)).kernel
    kinds = [op.kind for op in kern.body]
    assert ir.OP_IOTA in kinds and ir.OP_REDUCE in kinds


def test_trace_of_tiled_matmul_is_fast():
    a = np.zeros((1024, 1024), np.float32)
    _trace(mm.mm_tiled, a, a)
    t0 = time.perf_counter()
    for _ in range(5):
        _trace(mm.mm_tiled, a, a)
    assert (time.perf_counter() - t0) / 5 < 0.05


def test_specializations_are_memoized(nkid_socket, monkeypatch):
    a = np.ones((128, 512), np.float32)
    k = nki.baremetal(ew.add_tiled.func)
    traced = []
    orig = _numpy_kernel._tracer.trace
    monkeypatch.setattr(_numpy_kernel._tracer, "trace",
                        lambda *a, **kw: traced.append(1) or orig(*a, **kw))
    k(a, a)
    k(a, a)
    assert len(traced) <= 1                       # traced at most once per process
    t1 = k.specialize((a, a), {})
    assert k.specialize((a, a), {}) is t1
    before = len(_numpy_kernel._memo)
    k(np.ones((256, 512), np.float32), np.ones((256, 512), np.float32))
    assert len(_numpy_kernel._memo) == before + 1


def test_trace_cli_roundtrip(tmp_path):
    from nkid.trace import main, load, MAGIC
    out = tmp_path / "k.nkir"
    import kernels.layout as lay
    assert main([lay.__file__ + ":swap_blocks", "--shape", "5,12", "--dtype", "int8",
                 "--arg", "(3, 4)", "-o", str(out)]) == 0
    data = out.read_bytes()
    assert data[:8] == MAGIC
    ref, k = load(str(out))
    assert ref.kernel.format == "nkir/1" and ref.kernel.name == "swap_blocks"
    assert ref.spec_key == ""          # nkid derives keys from the IR itself
    assert list(ref.kernel.source_files) == list(k.files)
    assert k.tensors[k.params[0].tensor].dtype == ir.DT_INT8


def test_no_retarget_when_op_reads_its_destination_elsewhere():
    def k(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        t[:, 1:8] = nl.copy(t[:, 0:7])        # shifted: must go through a temp
        t[...] = nl.exp(t)                     # same indices: written in place
        nl.store(out, value=t)
        return out
    kern = _trace(k, np.zeros((4, 8), np.float32)).kernel
    kinds = [op.kind for op in kern.body]
    assert kinds == [ir.OP_LOAD, ir.OP_COPY, ir.OP_COPY, ir.OP_ACTIVATION, ir.OP_STORE]
    act = kern.body[3]
    assert act.dst.tensor == act.src[0].access.tensor


def test_baremetal_of_a_jit_kernel_uses_its_function(nkid_socket):
    a = np.ones((256, 1024), np.float16)
    out = nki.baremetal(ew.add_spmd[2, 2])(a, a)
    assert (out == 2).all()
