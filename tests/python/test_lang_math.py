"""nki.language math that nkid adds for issue 14: tan, arctan, gelu_dx,
gelu_apprx_sigmoid, silu_dx, erf_dx, mish (one activation each on the
executor), softmax and rms_norm (composed), and the constants fp32, bfp16
and finfo; checked against numpy through the real daemon."""

import math

import ml_dtypes
import numpy as np
import pytest

from nkid import nki, NKIError
import nkid.nki.isa as nisa
import nkid.nki.language as nl

rng = np.random.default_rng(14)
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# name -> (nl function, numpy reference on float64)
FUNCS = {
    "tan": (nl.tan, np.tan),
    "arctan": (nl.arctan, np.arctan),
    "gelu_dx": (nl.gelu_dx, lambda x: 0.5 * (1 + _erf(x / math.sqrt(2)))
                + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi)),
    "gelu_apprx_sigmoid": (nl.gelu_apprx_sigmoid, lambda x: x * _sigmoid(1.702 * x)),
    "silu_dx": (nl.silu_dx, lambda x: _sigmoid(x) * (1 + x * (1 - _sigmoid(x)))),
    "erf_dx": (nl.erf_dx, lambda x: 2 / math.sqrt(math.pi) * np.exp(-x * x)),
    "mish": (nl.mish, lambda x: x * np.tanh(np.log1p(np.exp(x)))),
}


def unary_kernel(fn):
    def k(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=fn(nl.load(x)))
        return out
    return k


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_activation_matches_numpy(nkid_socket, name):
    fn, ref = FUNCS[name]
    x = rng.uniform(-1.4, 1.4, (128, 96)).astype(np.float32)
    got = nki.simulate_kernel(unary_kernel(fn), x)
    np.testing.assert_allclose(got, ref(x.astype(np.float64)), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("name", ["mish", "tan", "arctan"])
def test_activation_through_nisa_activation(nkid_socket, name):
    fn, ref = FUNCS[name]
    op = {"tan": np.tan, "arctan": np.arctan}.get(name, fn)

    def k(x, b):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nisa.activation(op=op, data=nl.load(x), bias=nl.load(b), scale=0.5)
        nl.store(out, value=t)
        return out
    x = rng.uniform(-1, 1, (64, 32)).astype(np.float32)
    b = rng.uniform(-0.5, 0.5, (64, 1)).astype(np.float32)
    got = nki.simulate_kernel(k, x, b)
    np.testing.assert_allclose(got, ref(0.5 * x.astype(np.float64) + b), rtol=2e-5,
                               atol=2e-6)


def test_activation_into_bfloat16_rounds_when_precise(nkid_socket, monkeypatch):
    monkeypatch.setenv("NKI_PRECISE_FP", "1")

    def k(x):
        out = nl.ndarray(x.shape, dtype=nl.bfloat16, buffer=nl.shared_hbm)
        nl.store(out, value=nl.mish(nl.load(x), dtype=nl.bfloat16))
        return out
    x = rng.uniform(-2, 2, (32, 64)).astype(np.float32)
    got = nki.simulate_kernel(k, x)
    assert got.dtype == ml_dtypes.bfloat16
    want = FUNCS["mish"][1](x.astype(np.float64)).astype(np.float32).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


def softmax_kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0] // 128):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.softmax(t, axis=1))
    return out


def test_softmax_matches_numpy(nkid_socket):
    x = (rng.standard_normal((256, 300)) * 4).astype(np.float32)
    got = nki.simulate_kernel(softmax_kernel, x)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=1e-5)


def test_softmax_large_logits_do_not_overflow(nkid_socket):
    x = np.array([[1000.0, 1001.0, 999.0, -1e4]], np.float32).repeat(128, axis=0)
    got = nki.simulate_kernel(softmax_kernel, x)
    assert np.all(np.isfinite(got))
    e = np.exp(x[0].astype(np.float64) - 1001.0)
    np.testing.assert_allclose(got[5], e / e.sum(), rtol=1e-6)


def test_softmax_over_two_free_axes(nkid_socket):
    def k(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.softmax(nl.load(x), axis=(1, 2)))
        return out
    x = rng.standard_normal((64, 8, 16)).astype(np.float32)
    got = nki.simulate_kernel(k, x)
    e = np.exp(x - x.max(axis=(1, 2), keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=(1, 2), keepdims=True), rtol=1e-5,
                               atol=1e-7)


def test_rms_norm_matches_numpy(nkid_socket):
    def k(x, w):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        wt = nl.load(w)
        t = nl.load(x)
        nl.store(out, value=nl.rms_norm(t, wt, axis=1, n=x.shape[1], epsilon=1e-5))
        return out
    x = rng.standard_normal((128, 512)).astype(np.float32)
    w = rng.standard_normal((1, 512)).astype(np.float32)
    got = nki.simulate_kernel(k, x, w)
    want = x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + 1e-5) * w
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)


def test_fp32_bfp16_and_finfo_constants():
    assert nl.fp32.min == float(np.finfo(np.float32).min)
    assert np.float32(nl.fp32.min).view(np.uint32) == 0xff7fffff
    assert np.array(nl.bfp16.min, dtype=ml_dtypes.bfloat16).view(np.uint16) == 0xff7f
    assert nl.finfo(nl.bfloat16).min == nl.bfp16.min
    assert nl.finfo(np.float16).max == 65504.0


def test_fp32_min_fills_a_tile(nkid_socket):
    def k(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.full(x.shape, nl.fp32.min, dtype=nl.float32)
        nl.store(out, value=nl.maximum(t, nl.load(x)))
        return out
    x = np.full((8, 4), -np.inf, np.float32)
    got = nki.simulate_kernel(k, x)
    assert np.all(got == np.finfo(np.float32).min)


def test_softmax_outside_a_kernel_is_refused():
    with pytest.raises(NKIError, match="nl.softmax can only be used inside a NKI kernel"):
        nl.softmax(np.zeros((2, 2), np.float32), axis=1)
