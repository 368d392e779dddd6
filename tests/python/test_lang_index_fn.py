"""Index functions: a constant modulo or floor division of loop variables
and program ids in a tile position (``buf[:, i % 2]``, ``(i % 2) * 64``,
``i // 4``) is traced into an NKIR IndexFn (TERM_FN terms) that the
executor evaluates per iteration; masks keep refusing it, as NKI does."""

import numpy as np
import pytest

import nkid
from nkid import nki, NKISyntaxError
import nkid.nki.language as nl
from nkid._proto import nkir_pb2 as ir
from nkid.tracer import trace
from nkid.client import get_client, kernel_ref, to_wire
from nkid.tracer import TracedKernel

rng = np.random.default_rng(2)


def double_buffer(x):
    """Loads tile i into slot i % 2 of a two-slot buffer, stores it back
    from slot (i + 2) % 2 at column (i % 2) * 128 of the output."""
    out = nl.ndarray((x.shape[0], 256), dtype=x.dtype, buffer=nl.shared_hbm)
    buf = nl.ndarray((x.shape[0], 2, 128), dtype=x.dtype, buffer=nl.sbuf)
    for i in nl.affine_range(x.shape[1] // 128):
        buf[:, i % 2, :] = nl.load(x[:, nl.ds(i * 128, 128)])
        nl.store(out[:, nl.ds((i % 2) * 128, 128)], value=buf[:, (i + 2) % 2, :])
    return out


def test_modulo_of_a_loop_index(nkid_socket):
    x = rng.standard_normal((128, 768)).astype(np.float32)
    got = nki.simulate_kernel(double_buffer, x)
    np.testing.assert_array_equal(got, x[:, 512:])      # the last two tiles win


def test_iterations_colliding_through_a_function_run_in_order(nkid_socket):
    # i + i % 2 sends iterations 2k-1 and 2k to the same row: the executor
    # must not run them side by side (its proof of independence does not
    # look through index functions), the later one wins
    def k(x):
        out = nl.ndarray((17, 128, 2048), dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(16):
            nl.store(out[i + (i % 2)], value=nl.exp(nl.exp(nl.load(x[i]))))
        return out
    x = (rng.random((16, 128, 2048)) * 0.1).astype(np.float32)
    got = nki.simulate_kernel(k, x)
    want = np.exp(np.exp(x))
    np.testing.assert_allclose(got[0:16:2], want[0:16:2], rtol=1e-6)
    np.testing.assert_allclose(got[16], want[15], rtol=1e-6)


def test_modulo_is_one_index_function_in_the_ir():
    k = trace(double_buffer, (np.zeros((128, 768), np.float32),)).kernel
    assert len(k.fns) == 2                               # i % 2 and (i + 2) % 2
    assert {(f.kind, f.divisor, f.expr.constant) for f in k.fns} == {
        (ir.FN_MOD, 2, 0), (ir.FN_MOD, 2, 2)}
    kinds = set()

    def walk(ops):
        for op in ops:
            if op.kind == ir.OP_LOOP:
                walk(op.loop.body)
            for acc in [op.dst] + [s.access for s in op.src if s.HasField("access")]:
                for a in acc.index:
                    kinds.update(t.kind for t in a.terms)
    walk(k.body)
    assert ir.TERM_FN in kinds


def test_the_same_function_is_kept_once():
    def k(x):
        out = nl.ndarray((4, 128, 8), dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(8):
            t = nl.load(x[i])
            nl.store(out[i % 4], value=t)
            nl.store(out[(i % 4)], value=t)
            nl.store(out[(i + 4) % 4], value=t)
        return out
    kern = trace(k, (np.zeros((8, 128, 8), np.float32),)).kernel
    assert len(kern.fns) == 2
    assert sorted(f.expr.constant for f in kern.fns) == [0, 4]


def test_floor_division_of_a_loop_index(nkid_socket):
    def k(x):
        out = nl.ndarray((x.shape[0] // 2, 128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.sequential_range(x.shape[0]):
            nl.store(out[i // 2], value=nl.load(x[i]))
        return out
    x = rng.standard_normal((10, 128, 64)).astype(np.float32)
    got = nki.simulate_kernel(k, x)
    np.testing.assert_array_equal(got, x[1::2])


def test_negative_steps_and_program_ids(nkid_socket):
    def k(x):
        out = nl.ndarray((3, 2, 32, 16), dtype=x.dtype, buffer=nl.shared_hbm)
        p = nl.program_id(0)
        for i in nl.affine_range(6):
            t = nl.load(x[5 - i])
            nl.store(out[(p + i) % 3, (5 - i) // 3], value=nl.add(t, p))
        return out
    x = rng.standard_normal((6, 32, 16)).astype(np.float32)
    got = nki.simulate_kernel(nki.jit(k)[2], x)
    want = np.empty((3, 2, 32, 16), np.float32)
    for p in range(2):
        for i in range(6):
            want[(p + i) % 3, (5 - i) // 3] = x[5 - i] + p
    np.testing.assert_array_equal(got, want)


def test_function_range_is_bounds_checked():
    def k(x):
        out = nl.ndarray((2, 128, 8), dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(8):
            nl.store(out[i % 3], value=nl.load(x[i]))
        return out
    with pytest.raises(nkid.NkidError, match=r"Out-of-bound access for tensor `out` on"
                       r" dimension 0: index range \[0, 2\] exceed dimension size of 2"
                       r" \(\S*test_lang_index_fn.py:\d+\)"):
        nki.simulate_kernel(k, np.zeros((8, 128, 8), np.float32))


def test_function_range_within_one_period_is_tight(nkid_socket):
    def k(x):
        out = nl.ndarray((4, 128, 8), dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(4):
            nl.store(out[(i + 8) % 12], value=nl.load(x[i]))    # 8..11 % 12: [8, 11]
        return out
    with pytest.raises(nkid.NkidError, match=r"index range \[8, 11\]"):
        nki.simulate_kernel(k, np.zeros((4, 128, 8), np.float32))


def test_modulo_in_a_mask_is_refused():
    def k(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(4):
            nl.store(out[i], value=nl.load(x[i]), mask=(i % 2 < 1))
        return out
    with pytest.raises(ValueError, match=r"NKI mask expressions must be affine expressions of"
                       r" static loop indices.*err_unsupported_expression_in_mask"):
        nki.simulate_kernel(k, np.zeros((4, 8, 8), np.float32))


def test_modulo_of_an_arange_or_by_zero_is_refused():
    def arange_mod(x):
        nl.load(x[nl.arange(8)[:, None] % 2, nl.arange(8)[None, :]])
        return x

    def by_zero(x):
        for i in nl.affine_range(2):
            nl.load(x[i % 0])
        return x
    with pytest.raises(NKISyntaxError, match="index expression is not affine: modulo of an"
                       " nl.arange/nl.mgrid index"):
        nki.simulate_kernel(arange_mod, np.zeros((8, 8), np.float32))
    with pytest.raises(NKISyntaxError, match="modulo by 0"):
        nki.simulate_kernel(by_zero, np.zeros((2, 8, 8), np.float32))


def _raw(kernel):
    """Send a hand-edited kernel to nkid: its error, or None."""
    tk = TracedKernel(kernel.name, kernel, [("x", (4, 128, 8), np.dtype(np.float32))],
                      [("out", (2, 128, 8), np.dtype(np.float32))], [], "single")
    try:
        get_client().simulate(kernel_ref(tk), [to_wire("x", np.zeros((4, 128, 8),
                                                                     np.float32))])
    except nkid.NkidError as e:
        return str(e)
    return None


def test_malformed_functions_are_refused_by_nkid(nkid_socket):
    def k(x):
        out = nl.ndarray((2, 128, 8), dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(4):
            nl.store(out[i % 2], value=nl.load(x[i]))
        return out
    base = trace(k, (np.zeros((4, 128, 8), np.float32),)).kernel
    assert _raw(base) is None

    def edited(f):
        m = ir.Kernel()
        m.CopyFrom(base)
        f(m)
        return _raw(m)
    assert "divides by 0" in edited(lambda m: setattr(m.fns[0], "divisor", 0))

    def far(m):                      # a TERM_FN naming a function that is not there
        for op in m.body[-1].loop.body:
            for a in op.dst.index:
                for t in a.terms:
                    if t.kind == ir.TERM_FN:
                        t.index = 5
    assert "uses index function 5 of 1" in edited(far)
    assert "may only use loop variables and program ids" in edited(
        lambda m: setattr(m.fns[0].expr.terms[0], "kind", ir.TERM_AXIS))
    assert "names variable 9 out of range" in edited(
        lambda m: setattr(m.fns[0].expr.terms[0], "index", 9))
    assert "invalid kind" in edited(lambda m: setattr(m.fns[0], "kind", 7))

    def scope(m):                    # the function's loop variable outside its loop
        m.num_loop_vars = 2
        m.fns[0].expr.terms[0].index = 1
    assert "outside its loop" in edited(scope)
