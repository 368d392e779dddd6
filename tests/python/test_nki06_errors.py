"""NKI 0.6 bad input: each instruction's documented limits refused before
anything runs, in NKI's words and with the kernel's file:line; a kernel
mixing the two languages refused naming both."""

import numpy as np
import pytest

from nkid import nki06 as nki
from nkid import nki as legacy
from nkid.errors import NKIError, NkidError
import nkid.nki06.language as nl
import nkid.nki06.isa as nisa
import nkid.nki.language as legacy_nl

pytestmark = pytest.mark.usefixtures("nkid_socket")

HERE = r"test_nki06_errors.py:\d+\)"


def x(*shape, dtype=np.float32):
    return np.ones(shape, dtype)


def test_matmul_dst_must_be_psum():
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        d = nl.ndarray((128, 128), nl.float32, buffer=nl.sbuf)
        nisa.nc_matmul(d, t, t)
        nl.store(out, d)
        return out
    with pytest.raises(NKIError, match=r"Expected operand 'dst' of 'nc_matmul' to be in"
                       r" address space 'psum', but got a tile in 'sbuf' instead \(" + HERE):
        k(x(128, 128))


def test_matmul_shape_limits_from_the_executor():
    @nki.jit
    def k(a, b):
        out = nl.ndarray((128, 1024), nl.float32, buffer=nl.shared_hbm)
        ps = nl.ndarray((128, 1024), nl.float32, buffer=nl.psum)
        nisa.nc_matmul(ps, nl.load(a), nl.load(b))
        nl.store(out, nl.copy(ps))
        return out
    with pytest.raises(NkidError, match=HERE) as e:
        k(x(128, 128), x(128, 1024))
    assert e.value.code == "INVALID_ARGUMENT"


def test_partition_limit_with_file_line():
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, a.dtype)
        nisa.dma_copy(dst=t, src=a)
        nisa.dma_copy(dst=out, src=t)
        return out
    with pytest.raises(NkidError, match=r"Size of partition dimension 256 exceeds"
                       r" architecture limitation of 128 \(.*" + HERE):
        k(x(256, 8))


def test_dma_copy_from_psum_refused():
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 8), nl.float32, buffer=nl.shared_hbm)
        ps = nl.ndarray((128, 8), nl.float32, buffer=nl.psum)
        nisa.tensor_copy(dst=ps, src=nl.load(a))
        nisa.dma_copy(dst=out, src=ps)
        return out
    with pytest.raises(NKIError, match=r"'src' of 'dma_copy'.*'psum'.*tensor_copy first\) \("
                       + HERE):
        k(x(128, 8))


def test_dma_copy_hwdge_needs_same_dtype():
    @nki.jit
    def k(a):
        out = nl.ndarray((4, 8), nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((4, 8), nl.bfloat16)
        nisa.dma_copy(dst=t, src=a, dge_mode=nisa.dge_mode.hwdge)
        nisa.dma_copy(dst=out, src=t)
        return out
    with pytest.raises(NKIError, match=r"hwdge requires src and dst of the same dtype.*"
                       + HERE):
        k(x(4, 8))


def test_integer_enum_refused():
    @nki.jit
    def k(a):
        out = nl.ndarray((4, 8), nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((4, 8), nl.float32)
        nisa.dma_copy(dst=t, src=a, dge_mode=2)
        nisa.dma_copy(dst=out, src=t)
        return out
    with pytest.raises(NKIError, match=r"dge_mode must be a member of nisa.dge_mode, not"
                       r" the integer 2.*" + HERE):
        k(x(4, 8))


def test_memset_value_must_match_dtype():
    @nki.jit
    def k(a):
        out = nl.ndarray((4, 8), nl.int32, buffer=nl.shared_hbm)
        t = nl.ndarray((4, 8), nl.int32)
        nisa.memset(dst=t, value=2.0)
        nisa.dma_copy(dst=out, src=t)
        return out
    with pytest.raises(NKIError, match=r"nisa.memset value 2.0 must match dst's dtype int32"
                       r" \(pass the integer 2\) \(" + HERE):
        k(x(4, 8))


def test_tensor_reduce_axis_rules():
    @nki.jit
    def k(a):
        out = nl.ndarray((4, 1), nl.float32, buffer=nl.shared_hbm)
        r = nl.ndarray((4, 1), nl.float32)
        nisa.tensor_reduce(dst=r, op=nl.add, data=nl.load(a), axis=1)
        nl.store(out, r)
        return out
    with pytest.raises(NKIError, match=r"last contiguous free dimension\(s\).*" + HERE):
        k(x(4, 3, 5))


def test_iota_pattern_must_cover_dst():
    @nki.jit
    def k(a):
        out = nl.ndarray((4, 8), nl.int32, buffer=nl.shared_hbm)
        t = nl.ndarray((4, 8), nl.int32)
        nisa.iota(t, [[1, 4]])
        nisa.dma_copy(dst=out, src=t)
        return out
    with pytest.raises(NKIError, match=r"The total number of elements in pattern \(4\) must"
                       r" match the number of elements per partition in the dst tile \(8\)"
                       r" of 'iota' \(" + HERE):
        k(x(4, 8))


def test_fori_body_cannot_return():
    @nki.jit
    def k(a):
        out = nl.ndarray((1, 8), nl.float32, buffer=nl.shared_hbm)
        nl.fori_loop(0, 3, lambda i: 1)
        return out
    with pytest.raises(NKIError, match=r"The fori_loop body function cannot return a value"):
        k(x(4, 8))


def test_loop_step_must_be_positive():
    @nki.jit
    def k(a):
        out = nl.ndarray((1, 8), nl.float32, buffer=nl.shared_hbm)
        nl.fori_loop(0, 3, lambda i: None, step=0)
        return out
    with pytest.raises(NKIError, match=r"The loop step must be a positive compile-time"
                       r" integer, got 0"):
        k(x(4, 8))


def test_while_loop_bounded_at_run_time():
    @nki.jit
    def k(a):
        out = nl.ndarray((1, 1), nl.int32, buffer=nl.shared_hbm)
        r = nisa.register_alloc(1)

        def body(c):
            return c
        nl.while_loop(r, body)
        t = nl.ndarray((1, 1), nl.int32)
        nisa.register_store(t, r)
        nisa.dma_copy(dst=out, src=t)
        return out
    with pytest.raises(NkidError, match=r"dynamic loop did not end after 1048576 trips .*"
                       + HERE):
        nki.simulate(k)(x(1, 1))


def test_loop_register_is_read_only():
    @nki.jit
    def k(a):
        out = nl.ndarray((1, 8), nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((1, 1), nl.int32)
        nisa.memset(dst=t, value=1)

        def body(i):
            nisa.register_load(i, t)
        nl.fori_loop(0, 3, body)
        return out
    with pytest.raises(NKIError, match=r"the loop register of nl.fori_loop is read-only"):
        k(x(4, 8))


def test_string_buffer_refused():
    @nki.jit
    def k(a):
        t = nl.ndarray((4, 8), nl.float32, buffer="sbuf")
        return t
    with pytest.raises(NKIError, match=r"not the string 'sbuf'.*" + HERE):
        k(x(4, 8))


def test_platform_target_refused():
    with pytest.raises(ValueError, match="NEURON_PLATFORM_TARGET_OVERRIDE"):
        nki.jit(lambda a: a, platform_target="trn2")(x(4, 8))


# ---------------------------------------------------------------- two languages, one kernel

def test_mixing_legacy_module_in_a_06_kernel():
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, legacy_nl.exp(nl.load(a)))
        return out
    with pytest.raises(NKIError) as e:
        k(x(4, 8))
    msg = str(e.value)
    assert "NKI 0.6" in msg and "legacy neuronxcc.nki" in msg and "legacy_nl" in msg
    assert "test_nki06_errors.py:" in msg


def test_mixing_06_api_in_a_legacy_kernel():
    def k(a):
        out = legacy_nl.ndarray(a.shape, a.dtype, buffer=legacy_nl.shared_hbm)
        t = legacy_nl.load(a)
        nisa.tensor_copy(dst=t, src=t)
        legacy_nl.store(out, t)
        return out
    with pytest.raises(NKIError) as e:
        legacy.baremetal(k)(x(4, 8))
    msg = str(e.value)
    assert "nisa.tensor_copy is NKI 0.6" in msg and "legacy neuronxcc.nki" in msg
    assert "test_nki06_errors.py:" in msg


def test_outside_a_kernel():
    with pytest.raises(NKIError, match="only be used inside a NKI kernel"):
        nisa.register_alloc(3)


def test_newer_core_instructions_need_their_target(monkeypatch):
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        nisa.exponential(dst=t, src=t)
        nl.store(out, t)
        return out
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2")
    with pytest.raises(NKIError, match=r"nisa.exponential is available only on NeuronCore-v4"
                       r" and newer \(trn3\), but the target is NeuronCore-v3 .*" + HERE):
        k(x(4, 8))
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "gen4")
    np.testing.assert_allclose(nki.jit(k.func)(x(4, 8)), np.full((4, 8), np.e), rtol=1e-6)
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn9")
    with pytest.raises(ValueError, match="NEURON_PLATFORM_TARGET_OVERRIDE must be"):
        nki.jit(k.func)(x(4, 8))
