"""NKI 0.6's Tensor Indirection (``NkiTensor.indirect``, NeuronCore-v4):
kernels of our own gathering and scattering columns of SBUF and PSUM
tensors through the instructions NKI documents it for, against numpy,
and each documented rule refused with NKI's words and the kernel's
file:line (nkid.nki06._ti, sim/sim_op06_ti.c)."""

import numpy as np
import pytest

from nkid import nki06 as nki
from nkid.errors import NKIError, NkidError
import nkid.nki06.language as nl
import nkid.nki06.isa as nisa

pytestmark = pytest.mark.usefixtures("nkid_socket")

HERE = r"test_nki06_ti.py:\d+\)"
RNG = np.random.default_rng(126)


def offsets(idx, n, group):
    """NKI's layout: offset i is index[i % G, i // G]."""
    return [int(idx[i % group, i // group]) for i in range(n)]


def load(src, dtype=None):
    t = nl.ndarray(src.shape, dtype or src.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=src)
    return t


def store(t):
    out = nl.ndarray(t.shape, t.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


# ---------------------------------------------------------------- gather

@nki.jit
def gather_copy(data, idx, n):
    t, ix = load(data), load(idx)
    v = t.indirect(ix, num_elem=n) if n else t.indirect(ix)
    assert v.is_indirect() and not t.is_indirect() and tuple(v.shape) == (t.shape[0], v.shape[1])
    o = nl.ndarray(v.shape, data.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=v)
    return store(o)


def test_gather_default_num_elem_is_index_size():
    data = RNG.standard_normal((16, 40)).astype(np.float32)
    idx = RNG.integers(0, 40, (16, 3)).astype(np.int32)
    out = gather_copy(data, idx, 0)
    assert out.shape == (16, 48)
    np.testing.assert_array_equal(out, data[:, offsets(idx, 48, 16)])


def test_gather_num_elem_and_snake_layout():
    data = RNG.standard_normal((128, 300)).astype(np.float32)
    idx = RNG.integers(0, 300, (128, 4)).astype(np.uint16)
    for n in (1, 5, 16, 37, 64):
        out = nki.simulate(gather_copy)(data, idx, n)
        np.testing.assert_array_equal(out, data[:, offsets(idx, n, 16)])


@nki.jit
def gather_compute(data, idx, other):
    t, ix, w = load(data), load(idx), load(other)
    v = t.indirect(ix, num_elem=32)
    a = nl.ndarray((128, 32), nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=a, data1=v, data2=w, op=nl.multiply)
    s = nl.ndarray((128, 32), nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=s, data=v, op0=nl.add, operand0=1.0)
    e = nl.ndarray((128, 32), nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=e, op=nl.exp, data=v)
    r = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=r, op=nl.maximum, data=v, axis=1)
    return store(a), store(s), store(e), store(r)


def test_gather_into_vector_scalar_and_reduce_instructions():
    data = RNG.standard_normal((128, 100)).astype(np.float32)
    idx = RNG.integers(0, 100, (128, 2)).astype(np.int32)
    w = RNG.standard_normal((128, 32)).astype(np.float32)
    g = data[:, offsets(idx, 32, 16)]
    a, s, e, r = gather_compute(data, idx, w)
    np.testing.assert_allclose(a, g * w, rtol=1e-6)
    np.testing.assert_allclose(s, g + 1.0, rtol=1e-6)
    np.testing.assert_allclose(e, np.exp(g), rtol=1e-5)
    np.testing.assert_allclose(r, g.max(1, keepdims=True), rtol=1e-6)


@nki.jit
def gather_psum(data, idx):
    t, ix = load(data), load(idx)
    ps = nl.ndarray(t.shape, nl.float32, buffer=nl.psum)
    nisa.tensor_copy(dst=ps, src=t)
    o = nl.ndarray((32, 20), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=ps.indirect(ix, num_elem=20), engine=nisa.engine.scalar)
    return store(o)


def test_gather_from_psum():
    data = RNG.standard_normal((32, 64)).astype(np.float32)
    idx = RNG.integers(0, 64, (32, 2)).astype(np.int32)
    np.testing.assert_array_equal(gather_psum(data, idx), data[:, offsets(idx, 20, 16)])


# ---------------------------------------------------------------- scatter

@nki.jit
def scatter_copy(base, src, idx):
    t, s, ix = load(base), load(src), load(idx)
    nisa.tensor_copy(dst=t.indirect(ix, num_elem=src.shape[1]), src=s)
    return store(t)


def test_scatter_keeps_the_other_columns_and_the_last_wins():
    base = RNG.standard_normal((64, 50)).astype(np.float32)
    src = RNG.standard_normal((64, 24)).astype(np.float32)
    idx = RNG.integers(0, 50, (64, 2)).astype(np.int32)
    idx[3, 0] = idx[1, 0]                   # offsets 1 and 3: the same column
    want = base.copy()
    for i, c in enumerate(offsets(idx, 24, 16)):
        want[:, c] = src[:, i]
    np.testing.assert_array_equal(scatter_copy(base, src, idx), want)


@nki.jit
def scatter_inplace(data, idx):
    t, ix = load(data), load(idx)
    v = t.indirect(ix, num_elem=16)
    nisa.tensor_scalar(dst=t.indirect(ix, num_elem=16), data=v, op0=nl.multiply,
                       operand0=-2.0)
    return store(t)


def test_gather_and_scatter_one_instruction_in_place():
    data = RNG.standard_normal((32, 40)).astype(np.float32)
    idx = np.arange(32 * 1, dtype=np.int32).reshape(32, 1) % 40
    idx[:16, 0] = RNG.permutation(40)[:16]  # distinct offsets
    want = data.copy()
    cols = offsets(idx, 16, 16)
    want[:, cols] = -2.0 * data[:, cols]
    np.testing.assert_array_equal(scatter_inplace(data, idx), want)


@nki.jit
def scatter_predicated(base, src, pred, idx):
    t, s, p, ix = load(base), load(src), load(pred), load(idx)
    nisa.tensor_copy_predicated(dst=t.indirect(ix, num_elem=16), src=s, predicate=p)
    return store(t)


def test_scattered_dst_of_a_predicated_copy_keeps_unselected_values():
    base = RNG.standard_normal((16, 30)).astype(np.float32)
    src = RNG.standard_normal((16, 16)).astype(np.float32)
    pred = (RNG.random((16, 16)) < 0.5).astype(np.uint8)
    idx = RNG.permutation(30)[:16].astype(np.int32).reshape(16, 1)
    want = base.copy()
    for i, c in enumerate(offsets(idx, 16, 16)):
        want[:, c] = np.where(pred[:, i] != 0, src[:, i], base[:, c])
    np.testing.assert_array_equal(scatter_predicated(base, src, pred, idx), want)


# ---------------------------------------------------------------- tensor engine (G = 32)

@nki.jit
def matmul_ti(st, mv, idx, acc):
    s, m, ix = load(st), load(mv), load(idx)
    ps = nl.ndarray((st.shape[1], 64), nl.float32, buffer=nl.psum)
    nisa.memset(ps, 1.0)
    nisa.nc_matmul(dst=ps[:, 0:48], stationary=s, moving=m.indirect(ix, num_elem=48),
                   accumulate=False)
    nisa.nc_matmul(dst=ps.indirect(ix, num_elem=48), stationary=s,
                   moving=m.indirect(ix, num_elem=48), accumulate=acc)
    o = nl.ndarray(ps.shape, nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=ps)
    return store(o)


def test_matmul_gathers_moving_and_scatters_dst_with_tensor_engine_groups():
    import ml_dtypes
    K, M = 32, 32
    st = RNG.standard_normal((K, M)).astype(ml_dtypes.bfloat16)
    mv = RNG.standard_normal((K, 64)).astype(ml_dtypes.bfloat16)
    perm = RNG.permutation(64)
    idx = np.stack([perm[:32], perm[32:]], 1).astype(np.int32)   # 48 distinct offsets
    cols = offsets(idx, 48, 32)
    assert len(set(cols)) == 48
    prod = st.astype(np.float32).T @ mv.astype(np.float32)[:, cols]
    for acc in (False, True):
        want = np.ones((M, 64), np.float32)
        want[:, :48] = prod
        if acc:
            want[:, cols] += prod
        else:
            want[:, cols] = prod
        np.testing.assert_allclose(matmul_ti(st, mv, idx, acc), want, rtol=1e-5, atol=1e-4)


# ---------------------------------------------------------------- every instruction NKI lists

def _half(d):
    h = nl.ndarray(tuple(d.shape), nl.float32, buffer=nl.sbuf)
    nisa.memset(h, 0.5)
    return h


def _red(d):
    return nl.ndarray((d.shape[0], 1), nl.float32, buffer=nl.sbuf)


#: The instructions NKI documents tensor indirection for (but nc_matmul,
#: above, and nc_matmul_mx, in test_nki06_mx.py): dst, and their data.
OPS = {
    "tensor_copy": lambda d, x: nisa.tensor_copy(dst=d, src=x),
    "tensor_tensor": lambda d, x: nisa.tensor_tensor(dst=d, data1=x, data2=_half(d),
                                                     op=nl.subtract),
    "tensor_scalar": lambda d, x: nisa.tensor_scalar(dst=d, data=x, op0=nl.multiply,
                                                     operand0=3.0, op1=nl.add, operand1=1.0),
    "tensor_scalar_cumulative": lambda d, x: nisa.tensor_scalar_cumulative(
        dst=d, src=x, op0=nl.multiply, op1=nl.add, imm0=2.0),
    "activation": lambda d, x: nisa.activation(dst=d, op=nl.exp, data=x, scale=0.5),
    "activation_reduce": lambda d, x: nisa.activation_reduce(
        dst=d, op=nl.tanh, data=x, reduce_op=nl.add, reduce_res=_red(d)),
    "activate2": lambda d, x: nisa.activate2(dst=d, op=nl.relu, data=x, imm0=2.0, imm1=-0.5,
                                             op0=nl.multiply, op1=nl.add),
    "exponential": lambda d, x: nisa.exponential(dst=d, src=x, max_value=1.0),
    "tensor_scalar_reduce": lambda d, x: nisa.tensor_scalar_reduce(
        dst=d, data=x, op0=nl.add, operand0=1.0, reduce_op=nl.add, reduce_res=_red(d)),
    "tensor_reduce": lambda d, x: nisa.tensor_reduce(dst=d, op=nl.add, data=x, axis=1,
                                                     keepdims=True),
}


@nki.jit
def op_plain(x, init, which):
    g, d = load(x), load(init)
    OPS[which](d, g)
    return store(d)


@nki.jit
def op_gather(data, idx, init, which):
    t, ix, d = load(data), load(idx), load(init)
    OPS[which](d, t.indirect(ix, num_elem=x_cols(init, which)))
    return store(d)


@nki.jit
def op_scatter(base, idx, x, which):
    b, ix, g = load(base), load(idx), load(x)
    OPS[which](b.indirect(ix, num_elem=x.shape[1]), g)
    return store(b)


def x_cols(init, which):
    return 24 if which == "tensor_reduce" else init.shape[1]


@pytest.mark.parametrize("which", sorted(OPS))
def test_each_instruction_gathers_and_scatters_like_plain_tiles(which):
    P, F, N = 32, 40, 24
    data = RNG.standard_normal((P, F)).astype(np.float32)
    idx = RNG.integers(0, F, (P, 2)).astype(np.int32)
    idx[:16, 0] = RNG.permutation(F)[:16]
    idx[:8, 1] = RNG.permutation([c for c in range(F) if c not in idx[:16, 0]])[:8]
    cols = offsets(idx, N, 16)
    assert len(set(cols)) == N
    init = RNG.standard_normal((P, 1 if which == "tensor_reduce" else N)).astype(np.float32)
    want = op_plain(np.ascontiguousarray(data[:, cols]), init, which)
    np.testing.assert_allclose(op_gather(data, idx, init, which), want, rtol=1e-6)
    if which == "tensor_reduce":
        return
    x = RNG.standard_normal((P, N)).astype(np.float32)
    base = RNG.standard_normal((P, F)).astype(np.float32)
    res = base.copy()
    res[:, cols] = op_plain(x, np.ascontiguousarray(base[:, cols]), which)
    np.testing.assert_allclose(op_scatter(base, idx, x, which), res, rtol=1e-6)


# ---------------------------------------------------------------- run-time bounds

def test_offset_out_of_bounds_fails_the_run_naming_it():
    data = np.zeros((16, 8), np.float32)
    idx = np.zeros((16, 1), np.int32)
    idx[5, 0] = 8
    with pytest.raises(NkidError, match=r"tensor indirection: offset 8 at index\[5, 0\]"
                       r" \(offset 5\) is out of bounds for the 8 elements per partition"
                       r" of `t.*" + HERE):
        gather_copy(data, idx, 16)
    idx[5, 0] = -1
    with pytest.raises(NkidError, match=r"offset -1 at index\[5, 0\]"):
        gather_copy(data, idx, 16)


def test_index_too_small_for_the_engine_group():
    data = np.zeros((8, 8), np.float32)
    idx = np.zeros((8, 4), np.int32)
    # 20 offsets at index[i % 16, i // 16] need 16 partitions of index
    with pytest.raises(NkidError, match=r"'indirect': 20 offsets at index\[i % 16, i // 16\]"
                       r" need an index of at least \[16, 2\], got \[8, 4\] .*" + HERE):
        gather_copy(data, idx, 20)
    np.testing.assert_array_equal(gather_copy(data, idx, 8), data[:, :8])


# ---------------------------------------------------------------- documented limits

def _kernel(body):
    @nki.jit
    def k(a, i):
        t = load(a)
        ix = load(i)
        body(t, ix)
        return store(t)
    return k


def _raises(body, match, shape=(32, 64), ishape=(32, 2), idtype=np.int32, exc=Exception):
    a = np.zeros(shape, np.float32)
    i = np.zeros(ishape, idtype)
    with pytest.raises(exc, match=match + r".*" + HERE):
        _kernel(body)(a, i)


def test_needs_neuroncore_v4(monkeypatch):
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2")
    _raises(lambda t, ix: t.indirect(ix),
            r"NkiTensor.indirect \(Tensor Indirection\) is available only on NeuronCore-v4"
            r" and newer \(trn3\), but the target is NeuronCore-v3")


def test_index_rules():
    _raises(lambda t, ix: t.indirect(ix, num_elem=0),
            r"num_elem \(the number of offsets to use\) must be an integer in \[1,"
            r" index.size = 64\], got 0")
    _raises(lambda t, ix: t.indirect(ix, num_elem=65), r"index.size = 64\], got 65")
    _raises(lambda t, ix: t.indirect(ix[0:16, :]),
            r"index must have shape \(P, K\) where P == self.shape\[0\] \(32\), got \[16, 2\]")
    _raises(lambda t, ix: t.indirect(ix), r"index holds free-dimension offsets and must be"
            r" an integer tile, got float32", idtype=np.float32)
    _raises(lambda t, ix: t.indirect(3), r"index must be an SBUF tensor containing"
            r" free-dimension offsets, got 3")

    def psum_index(t, ix):
        p = nl.ndarray(ix.shape, nl.int32, buffer=nl.psum)
        t.indirect(p)
    _raises(psum_index, r"index must be an SBUF tensor containing free-dimension offsets,"
            r" `.*` is in psum")


def test_views_of_an_indirect_view_are_refused():
    _raises(lambda t, ix: t.indirect(ix).indirect(ix),
            r"indirect: an indirect view cannot be viewed again")
    _raises(lambda t, ix: t.indirect(ix).ap([[64, 32], [1, 4]]), r"ap: an indirect view")
    _raises(lambda t, ix: t.indirect(ix)[:, 0:4], r"cannot index the indirect view")
    _raises(lambda t, ix: t.indirect(ix).get_pattern(), r"get_pattern: an indirect view")
    _raises(lambda t, ix: t.indirect(ix).strides, r"strides: an indirect view")
    _raises(lambda t, ix: t.ap([[64, 32], [1, 4]], scalar_offset=ix[0:1, 0:1],
                               indirect_dim=1).indirect(ix),
            r"indirect: the view is already indirect \(is_indirect\(\)\); it cannot be"
            r" re-indirected")


def test_hbm_tensor_is_refused():
    @nki.jit
    def k(a, i):
        ix = load(i)
        a.indirect(ix)
        return store(ix)
    with pytest.raises(ValueError, match=r"Tensor Indirection addresses SBUF and PSUM tensors"
                       r", `a` is in HBM .*" + HERE):
        k(np.zeros((32, 8), np.float32), np.zeros((32, 1), np.int32))


def test_instructions_and_operands_that_do_not_take_it():
    def dma(t, ix):
        nisa.dma_copy(dst=t[:, 0:64], src=t.indirect(ix))
    _raises(dma, r"'src' of 'nisa.dma_copy' is an indirect view \(NkiTensor.indirect\), but"
            r" nisa.dma_copy does not support tensor indirection")

    def data2(t, ix):
        o = nl.ndarray((32, 64), nl.float32)
        nisa.tensor_tensor(dst=o, data1=t, data2=t.indirect(ix), op=nl.add)
    _raises(data2, r"'data2' of 'nisa.tensor_tensor' does not support tensor indirection"
            r" \(on NeuronCore-v4 it is supported on 'dst', 'data1'\)")


def test_engine_rules():
    def copy_gpsimd(t, ix):
        o = nl.ndarray((32, 64), nl.float32)
        nisa.tensor_copy(dst=o, src=t.indirect(ix), engine=nisa.engine.gpsimd)
    _raises(copy_gpsimd, r"When tensor indirection is used, the operation must run on the"
            r" Vector or Scalar engine \('tensor_copy' with engine=gpsimd\)")

    def tt_scalar(t, ix):
        o = nl.ndarray((32, 64), nl.float32)
        nisa.tensor_tensor(dst=o, data1=t.indirect(ix), data2=o, op=nl.add,
                           engine=nisa.engine.scalar)
    _raises(tt_scalar, r"must run on the Vector or GpSimd engine")

    def act_psum(t, ix):
        p = nl.ndarray((32, 64), nl.float32, buffer=nl.psum)
        nisa.activation(dst=p.indirect(ix), op=nl.exp, data=t[:, 0:64])
    _raises(act_psum, r"on the Scalar engine a scattered 'dst' cannot be in PSUM"
            r" \('activation'\)")


def test_partition_rules():
    def quadrant(t, ix):
        big = nl.ndarray((64, 2), nl.int32)
        nisa.memset(big, 0)
        o = nl.ndarray((16, 4), nl.float32)
        nisa.tensor_copy(dst=o, src=t[16:32, :].indirect(big[16:32, :], num_elem=4))
    _raises(quadrant, r"the index of every .indirect\(\) view starts on a quadrant boundary"
            r" \(a multiple of 32\): the index of 'src' of 'tensor_copy' starts on partition"
            r" 16")

    def same(t, ix):
        big = nl.ndarray((64, 2), nl.int32)
        nisa.memset(big, 0)
        o = nl.ndarray((32, 4), nl.float32)
        nisa.tensor_copy(dst=o, src=t.indirect(big[32:64, :], num_elem=4))
    _raises(same, r"if 'src' uses .indirect\(\), 'src' starts on the same partition as its"
            r" index \('src' of 'tensor_copy' starts on partition 0, its index on 32\)")

    def dst_index(t, ix):
        big = nl.ndarray((64, 2), nl.int32)
        nisa.memset(big, 0)
        s = nl.ndarray((64, 4), nl.float32)
        nisa.memset(s, 0.0)
        nisa.tensor_copy(dst=t.indirect(big[32:64, :], num_elem=4), src=s[0:32, :])
    _raises(dst_index, r"if 'dst' uses .indirect\(\), 'dst''s index starts on the same"
            r" partition as 'src' \(in 'tensor_copy': partition 32 and 0\)")


def test_matmul_rules():
    def mm(**kw):
        def body(t, ix):
            st = nl.ndarray((32, 32), kw.pop("dtype", nl.bfloat16))
            mv = nl.ndarray((32, 64), st.dtype)
            nisa.memset(st, 0.0)
            nisa.memset(mv, 0.0)
            ps = nl.ndarray((32, 64), nl.float32, buffer=nl.psum)
            dst = ps.indirect(ix) if kw.pop("dst", False) else ps
            nisa.nc_matmul(dst=dst, stationary=st, moving=mv.indirect(ix), **kw)
        return body
    _raises(mm(tile_position=(0, 32), tile_size=(32, 32)), r"Tensor indirection is"
            r" incompatible with hardware tiling, so tile_position must be \(0, 0\) \(or"
            r" unset\) when it is used \('nc_matmul', got tile_position=\(0, 32\)\)")
    _raises(mm(dtype=nl.float32), r"The indirect operands must be a Tensor-Engine float dtype"
            r" \(float16, bfloat16, float8_e4m3, float8_e5m2, float8_e4m3fn\): 'moving' of"
            r" 'nc_matmul' is float32")
    _raises(mm(is_transpose=True), r"When is_transpose=True, 'moving' cannot use tensor"
            r" indirection")
    _raises(mm(dst=True), r"nc_matmul into an indirect 'dst' with accumulate=None")

    def mx(t, ix):
        nisa.nc_matmul_mx(t, t.indirect(ix), t, t, t)
    _raises(mx, r"The \(stationary, stationary_scale\) pair must agree on tensor"
            r" indirection")


def test_tensor_scalar_address_arithmetic_is_refused():
    def addr(t, ix):
        o = nl.ndarray((32, 64), nl.int32)
        nisa.tensor_scalar(dst=o, data=ix.indirect(ix, num_elem=64), op0=nl.add,
                           operand0=1)
    _raises(addr, r"Tensor indirection is not supported when the op matches the int32/uint32"
            r" address-arithmetic pattern \(tensor_scalar_addr\)")


# ---------------------------------------------------------------- the model

@nki.jit
def model_ti(data, idx):
    t, ix = load(data), load(idx)
    nisa.tensor_scalar(dst=t.indirect(ix, num_elem=32), data=t.indirect(ix, num_elem=32),
                       op0=nl.multiply, operand0=2.0)
    return store(t)


@nki.jit
def model_plain(data, idx):
    t, ix = load(data), load(idx)
    nisa.tensor_scalar(dst=t[:, 0:32], data=t[:, 0:32], op0=nl.multiply, operand0=2.0)
    return store(t)


def test_model_costs_the_instruction_on_its_columns(tmp_path):
    """trainium3_arch.rst: the engines gather "in a single instruction":
    the gather and the scatter are no instructions of their own; the
    instruction costs what it costs on [P, num_elem] columns."""
    import json
    import os
    import subprocess
    from nkid import trace
    from nkid.nki.typing import tensor
    nkimodel = os.path.join(os.path.dirname(__file__), "..", "..", "build", "bin", "nkimodel")
    if not os.path.exists(nkimodel):
        pytest.skip("build/bin/nkimodel not built")
    got = {}
    for k in (model_ti, model_plain):
        path = str(tmp_path / (k.func.__name__ + ".nkir"))
        trace.trace_to_file(k, [tensor[[128, 512], np.float32], tensor[[128, 2], np.int32]],
                            path, target="trn3")
        subprocess.run([nkimodel, "-o", path + ".json", path], check=True, capture_output=True)
        ev = json.load(open(path + ".json"))["traceEvents"]
        got[k] = sorted((e["cat"], e["name"], e["dur"]) for e in ev if e.get("ph") == "X")
    # The same instructions, each as long (to the ns the trace rounds each
    # slice's start and end to: the indirect one also waits for its index).
    assert [e[:2] for e in got[model_ti]] == [e[:2] for e in got[model_plain]]
    assert [e[2] for e in got[model_ti]] == pytest.approx([e[2] for e in got[model_plain]],
                                                          abs=0.0011)
    assert [e for e in got[model_ti] if e[0] != "dma"] == [("vector", "tensor_tensor",
                                                          pytest.approx(0.053, abs=0.01))]
