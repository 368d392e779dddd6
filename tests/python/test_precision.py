"""NKI_PRECISE_FP: simulation keeps bfloat16/float16/fp8 tiles in float32
unless NKI_PRECISE_FP=1 (NKI 2.24's simulator; current NKI's switch);
baremetal, benchmark and profile stand in for the device and round always.
The mode travels in the IR (Kernel.fp32_tiles), so it is part of the NEFF
key exactly where it changes the result."""

import ml_dtypes
import numpy as np
import pytest

from nkid import nki
import nkid.nki.language as nl
from nkid.nki import _numpy_kernel as nk
from nkid.tracer import trace

BF16 = ml_dtypes.bfloat16


def exp_via_bf16(x):
    """exp computed into a bfloat16 tile, returned as float32."""
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    e = nl.exp(nl.load(x), dtype=nl.bfloat16)
    nl.store(out, value=nl.copy(e, dtype=nl.float32))
    return out


def fp8_sum(x):
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    s = nl.add(t, 0.01, dtype=nl.float8_e4m3)
    nl.store(out, value=nl.copy(s, dtype=nl.float32))
    return out


def fp32_only(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.exp(nl.load(x)))
    return out


X = np.random.default_rng(24).uniform(0, 2, (128, 96)).astype(np.float32)
EXACT = np.exp(X.astype(np.float64))
ROUNDED = np.exp(X).astype(BF16).astype(np.float64)


@pytest.mark.parametrize("env", [None, "0"])
def test_simulation_keeps_fp32_by_default(nkid_socket, monkeypatch, env):
    if env is None:
        monkeypatch.delenv("NKI_PRECISE_FP", raising=False)
    else:
        monkeypatch.setenv("NKI_PRECISE_FP", env)
    got = nki.simulate_kernel(exp_via_bf16, X)
    np.testing.assert_allclose(got, EXACT, rtol=1e-6)            # as NKI 2.24
    got = nki.jit(exp_via_bf16, mode="simulation")(X)
    np.testing.assert_allclose(got, EXACT, rtol=1e-6)


def test_precise_fp_rounds_like_the_hardware(nkid_socket, monkeypatch):
    monkeypatch.setenv("NKI_PRECISE_FP", "1")
    got = nki.simulate_kernel(exp_via_bf16, X)
    np.testing.assert_array_equal(got, ROUNDED)
    assert np.abs(got - EXACT).max() > 1e-3                      # bf16's 8 bits show
    got = nki.simulate_kernel(fp8_sum, X)
    np.testing.assert_array_equal(got, (X + np.float32(0.01)).astype(
        ml_dtypes.float8_e4m3fn).astype(np.float32))


def test_fp8_kept_in_fp32_without_precise_fp(nkid_socket, monkeypatch):
    monkeypatch.setenv("NKI_PRECISE_FP", "0")
    np.testing.assert_allclose(nki.simulate_kernel(fp8_sum, X), X + np.float32(0.01),
                               rtol=1e-7)


@pytest.mark.parametrize("env", [None, "0", "1"])
def test_device_doors_always_round(nkid_socket, monkeypatch, env, tmp_path):
    if env is None:
        monkeypatch.delenv("NKI_PRECISE_FP", raising=False)
    else:
        monkeypatch.setenv("NKI_PRECISE_FP", env)
    np.testing.assert_array_equal(nki.baremetal(exp_via_bf16)(X), ROUNDED)
    np.testing.assert_array_equal(nki.jit(exp_via_bf16, mode="baremetal")(X), ROUNDED)
    prof = nki.profile(exp_via_bf16, working_directory=str(tmp_path), overwrite=True)
    np.testing.assert_array_equal(prof(X), ROUNDED)


def test_benchmark_runs_the_rounding_kernel(nkid_socket, monkeypatch):
    def bench_only(x):
        out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nl.copy(nl.exp(nl.load(x), dtype=nl.bfloat16), dtype=nl.float32))
        return out
    monkeypatch.setenv("NKI_PRECISE_FP", "0")
    traced = trace(bench_only, (X,))
    b = nki.benchmark(bench_only, warmup=1, iters=2)
    b(X)
    assert b.benchmark_result.nc_latency is not None
    # nkid compiled the plain trace (fp32_tiles unset), not the simulation variant
    assert (traced.ir_digest, "", "") in nk._neff_keys
    assert (traced.with_precise_fp(False).ir_digest, "", "") not in nk._neff_keys


def test_the_mode_is_in_the_ir_only_where_it_matters():
    t = trace(exp_via_bf16, (X,))
    v = t.with_precise_fp(False)
    assert v is not t and v.kernel.fp32_tiles and not t.kernel.fp32_tiles
    assert v.ir_digest != t.ir_digest                  # two NEFF keys
    assert t.with_precise_fp(False) is v               # made once
    assert t.with_precise_fp(True) is t
    plain = trace(fp32_only, (X,))
    assert plain.with_precise_fp(False) is plain       # no low-precision tile: one key


def test_invalid_value_is_refused(nkid_socket, monkeypatch):
    monkeypatch.setenv("NKI_PRECISE_FP", "yes")
    with pytest.raises(ValueError, match="NKI_PRECISE_FP must be 0 or 1, got 'yes'"):
        nki.simulate_kernel(exp_via_bf16, X)
    monkeypatch.setenv("NKI_PRECISE_FP", " 1 ")
    assert nk.precise_fp()


def test_fills_are_kept_in_fp32_too(nkid_socket, monkeypatch):
    def k(x):
        out = nl.ndarray((4, 4), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.full((4, 4), 1.0 + 2 ** -10, dtype=nl.bfloat16)
        nl.store(out, value=nl.copy(t, dtype=nl.float32))
        return out
    x = np.zeros((1, 1), np.float32)
    monkeypatch.setenv("NKI_PRECISE_FP", "0")
    assert np.all(nki.simulate_kernel(k, x) == np.float32(1.0 + 2 ** -10))
    monkeypatch.setenv("NKI_PRECISE_FP", "1")
    assert np.all(nki.simulate_kernel(k, x) == 1.0)
