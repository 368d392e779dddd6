"""``if`` on loop indices and program ids: kernels are traced in a
rewritten form (nkid.tracer.branch) whose ifs on such conditions become
NKIR OP_IF ops that the executor decides per execution; the planner
checks the bounds of each side under its condition.  Python-decidable
ifs stay Python; conditions on nl.arange keep NKI's error."""

import numpy as np
import pytest

import nkid
from nkid import nki, NKISyntaxError
import nkid.nki.language as nl
from nkid._proto import nkir_pb2 as ir
from nkid.client import get_client, kernel_ref, to_wire
from nkid.tracer import trace, TracedKernel

rng = np.random.default_rng(88)


def three_ways(x, n):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0] // 16):
        t = nl.load(x[nl.ds(i * 16, 16), :])
        if i * 16 < n:
            nl.store(out[nl.ds(i * 16, 16), :], value=nl.multiply(t, 2.0))
        elif i % 2 == 0:
            nl.store(out[nl.ds(i * 16, 16), :], value=nl.add(t, 100.0))
        else:
            nl.store(out[nl.ds(i * 16, 16), :], value=nl.negative(t))
    return out


def test_if_elif_else_on_a_loop_index(nkid_socket):
    x = rng.standard_normal((128, 8)).astype(np.float32)
    got = nki.simulate_kernel(three_ways, x, 48)
    want = np.empty_like(x)
    for i in range(8):
        s = slice(i * 16, i * 16 + 16)
        want[s] = 2 * x[s] if i * 16 < 48 else (x[s] + 100 if i % 2 == 0 else -x[s])
    np.testing.assert_array_equal(got, want)
    kinds = [op.kind for op in trace(three_ways, (x, 48)).kernel.body[-1].loop.body]
    assert ir.OP_IF in kinds


def scaled_halves(x, scale=nl.float32, *, acc=nl.float32):
    """Defaults naming module globals (as NKI's reference kernels write
    `norm_dtype=nl.float32`) survive the rewrite."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(2):
        t = nl.load(x[nl.ds(i * 64, 64), :], dtype=acc)
        if i == 0:
            nl.store(out[nl.ds(i * 64, 64), :], value=nl.multiply(t, 3.0, dtype=scale))
        else:
            nl.store(out[nl.ds(i * 64, 64), :], value=t)
    return out


def test_defaults_naming_module_globals(nkid_socket):
    x = rng.standard_normal((128, 8)).astype(np.float32)
    want = x.copy()
    want[:64] *= 3
    np.testing.assert_allclose(nki.simulate_kernel(scaled_halves, x), want, rtol=1e-6)


def windowed(x, window, causal=True):
    """NKI's reference attention backward decides tiles with `and`."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0] // 16):
        t = nl.load(x[nl.ds(i * 16, 16), :])
        need = causal and i >= 2
        need = need and (i * 16 < window) and window > 0
        if need:
            nl.store(out[nl.ds(i * 16, 16), :], value=nl.multiply(t, 2.0))
        elif False or i < 2:
            nl.store(out[nl.ds(i * 16, 16), :], value=t)
        else:
            nl.store(out[nl.ds(i * 16, 16), :], value=nl.negative(t))
    return out


def test_and_joins_conditions_or_is_decided_by_python(nkid_socket):
    x = rng.standard_normal((128, 8)).astype(np.float32)
    for window, causal in ((80, True), (0, True), (80, False)):
        got = nki.simulate_kernel(windowed, x, window, causal)
        want = np.empty_like(x)
        for i in range(8):
            s = slice(i * 16, i * 16 + 16)
            if causal and i >= 2 and i * 16 < window and window > 0:
                want[s] = 2 * x[s]
            else:
                want[s] = x[s] if i < 2 else -x[s]
        np.testing.assert_array_equal(got, want)

    def either(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(8):
            if i < 2 or i > 5:
                nl.store(out[nl.ds(i * 16, 16), :], value=nl.load(x[nl.ds(i * 16, 16), :]))
        return out
    with pytest.raises(NKISyntaxError, match=r"`or` of conditions on loop indices is not"
                       r" supported.*\(test_lang_branch.py:\d+\)"):
        trace(either, (x,))

    def corner(x):
        # NKI's own examples join masks with `and`
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        ix, iy = nl.mgrid[0:128, 0:8]
        nl.store(out, value=nl.zeros((128, 8), dtype=x.dtype))
        nl.store(out[ix, iy], value=nl.load(x[ix, iy]), mask=(ix < 64 and iy < 4))
        return out
    want = np.zeros_like(x)
    want[:64, :4] = x[:64, :4]
    np.testing.assert_array_equal(nki.simulate_kernel(corner, x), want)


def test_each_side_is_bounds_checked_under_its_condition(nkid_socket):
    """Tiles past the tensor exist only in iterations the if excludes."""
    def k(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(8):                # x has 5 tiles of 32 rows
            if i < x.shape[0] // 32:
                nl.store(out[nl.ds(i * 32, 32), :], value=nl.load(x[nl.ds(i * 32, 32), :]))
        return out

    def k_bad(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(8):
            if i < 6:                               # tile 5 is past the end
                nl.store(out[nl.ds(i * 32, 32), :], value=nl.load(x[nl.ds(i * 32, 32), :]))
        return out
    x = rng.standard_normal((160, 4)).astype(np.float32)
    np.testing.assert_array_equal(nki.simulate_kernel(k, x), x)
    with pytest.raises(nkid.NkidError, match=r"Out-of-bound access for tensor `x` on"
                       r" dimension 0: index range \[0, 191\] exceed dimension size of 160"):
        nki.simulate_kernel(k_bad, x)


def test_causal_blocks_skip_the_upper_triangle(nkid_socket):
    """if i >= j on two loop indices (the causal pattern of flash attention)."""
    def k(x):
        out = nl.ndarray((4, 4, 16, 16), dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(4):
            for j in nl.affine_range(4):
                t = nl.load(x)
                if i >= j:
                    nl.store(out[i, j], value=nl.add(t, i * 10 + j))
                else:
                    nl.store(out[i, j], value=nl.multiply(t, 0.0))
        return out
    x = np.ones((16, 16), np.float32)
    got = nki.simulate_kernel(k, x)
    for i in range(4):
        for j in range(4):
            assert np.all(got[i, j] == (1 + i * 10 + j if i >= j else 0))


def test_if_on_program_id_and_static_ifs(nkid_socket):
    def k(x, scale):
        out = nl.ndarray((2,) + x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        p = nl.program_id(0)
        t = nl.load(x)
        if scale > 1:                       # Python decides
            t = nl.multiply(t, scale)
        if p == 0:
            nl.store(out[p], value=t)
        else:
            nl.store(out[p], value=nl.negative(t))
        return out
    x = rng.standard_normal((8, 8)).astype(np.float32)
    got = nki.simulate_kernel(nki.jit(k)[2], x, 3)
    np.testing.assert_allclose(got[0], 3 * x, rtol=1e-6)
    np.testing.assert_allclose(got[1], -3 * x, rtol=1e-6)
    kern = trace(k, (x, 0), grid=(2,)).kernel
    assert [op.kind for op in kern.body].count(ir.OP_IF) == 1


@nki.trace
def _double_if_first(t, i, out_tile):
    if i == 0:
        out_tile[...] = nl.multiply(t, 2.0)
    else:
        out_tile[...] = nl.copy(t)


def test_if_in_a_sub_kernel(nkid_socket):
    def k(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(x.shape[0]):
            o = nl.ndarray(x.shape[1:], dtype=x.dtype, buffer=nl.sbuf)
            _double_if_first(nl.load(x[i]), i, o)
            nl.store(out[i], value=o)
        return out
    x = rng.standard_normal((3, 16, 8)).astype(np.float32)
    got = nki.simulate_kernel(k, x)
    np.testing.assert_allclose(got, np.concatenate([2 * x[:1], x[1:]]), rtol=1e-6)


def test_conditions_on_arange_keep_nkis_error():
    def k(x):
        i = nl.arange(8)[:, None]
        if i < 4:
            nl.load(x)
        return x
    with pytest.raises(NKISyntaxError, match=r"Control-flow depending on `nl.arange` or"
                       r" `nl.mgrid` is not supported.*test_lang_branch.py:\d+"):
        nki.simulate_kernel(k, np.zeros((8, 8), np.float32))


def _helper_with_if(i, x):
    if i < 2:
        return nl.load(x)
    return nl.load(x)


def test_if_in_a_plain_helper_says_what_to_do():
    def k(x):
        for i in nl.affine_range(4):
            _helper_with_if(i, x)
        return x
    with pytest.raises(NKISyntaxError, match="decorate it with nki.trace or"
                       r" nki.jit\(mode='trace'\)"):
        nki.simulate_kernel(k, np.zeros((8, 8), np.float32))


def test_benchmark_models_the_branches(nkid_socket):
    b = nki.benchmark(three_ways, warmup=1, iters=2)
    b(np.zeros((128, 8), np.float32), 48)
    assert b.benchmark_result.nc_latency.get_latency_percentile(50) > 0


def test_malformed_ifs_are_refused_by_nkid(nkid_socket):
    x = np.zeros((128, 8), np.float32)
    base = trace(three_ways, (x, 48)).kernel

    def send(m):
        tk = TracedKernel(m.name, m, [("x", (128, 8), np.dtype(np.float32))],
                          [("out", (128, 8), np.dtype(np.float32))], [], "single")
        try:
            get_client().simulate(kernel_ref(tk), [to_wire("x", x)])
        except nkid.NkidError as e:
            return str(e)
        return None
    assert send(base) is None

    def branch_of(m):
        return next(op for op in m.body[-1].loop.body if op.kind == ir.OP_IF)
    m = ir.Kernel()
    m.CopyFrom(base)
    branch_of(m).branch.cond[0].terms.add(kind=ir.TERM_AXIS, index=0, coef=1)
    assert "index uses axis 0 of a rank-0 access" in send(m)
    m = ir.Kernel()
    m.CopyFrom(base)
    branch_of(m).ClearField("branch")
    assert "if op has no branch" in send(m)
    # ifs nested past the executor's depth
    m = ir.Kernel()
    m.CopyFrom(base)
    op = branch_of(m)
    for _ in range(20):
        inner = op.branch.then_body.add(kind=ir.OP_IF)
        inner.branch.cond.add(constant=1)
        op = inner
    assert "nests loops and ifs deeper than 16" in send(m)
