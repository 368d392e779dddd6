"""The front doors: jit dispatch, GenericKernel, baremetal/benchmark/profile
options, simulate_kernel; and the client's errors and tensor conversion."""

import sys
import types

import ml_dtypes
import numpy as np
import pytest

import nkid
from nkid import nki
from nkid.nki import compile as nkc
from nkid.nki._numpy_kernel import BaremetalKernel, SimulateKernel, BenchmarkKernel
from nkid.nki._framework import JAXKernel, PyTorchXLAKernel
import nkid.nki.language as nl
import nkid.nki.typing as nt
from nkid.client import to_wire, from_wire, Client
from kernels import elementwise as ew


def plain_copy(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(x))
    return out


def test_jit_bare_and_parametrized():
    k1 = nki.jit(plain_copy)
    k2 = nki.jit(mode="simulation")(plain_copy)
    assert isinstance(k1, nkc.GenericKernel) and k1.mode == "auto"
    assert isinstance(k2, nkc.GenericKernel) and k2.mode == "simulation"
    assert k1.__name__ == "plain_copy"
    assert nkc.GenericKernel[int] is nkc.GenericKernel


def test_unknown_mode():
    with pytest.raises(ValueError, match="' passed to nki.jit"):
        nki.jit(plain_copy, mode="bogus")


def test_native_mode_map():
    m = nkc._native_mode_map
    assert m == {"jax": JAXKernel, "torchxla": PyTorchXLAKernel, "baremetal": BaremetalKernel,
                 "benchmark": BenchmarkKernel, "simulation": SimulateKernel}
    assert nkc.compute_mode("simulation", (), {}) is SimulateKernel


def test_auto_mode_numpy_is_baremetal():
    assert nkc.compute_mode("auto", (np.zeros(3),), {}) is BaremetalKernel
    assert nkc.compute_mode("auto", (), {"a": 3}) is BaremetalKernel


def test_auto_mode_torch_stand_in():
    mod = types.ModuleType("torch")
    Tensor = type("Tensor", (), {"__module__": "torch"})
    mod.is_tensor = lambda x: isinstance(x, Tensor)
    sys.modules.setdefault("torch", mod)
    try:
        if sys.modules["torch"] is mod:
            assert nkc.compute_mode("auto", (np.zeros(2), Tensor()), {}) is PyTorchXLAKernel
    finally:
        if sys.modules.get("torch") is mod:
            del sys.modules["torch"]


def test_auto_mode_jax_platform_guard():
    jnp = pytest.importorskip("jax.numpy")
    with pytest.raises(RuntimeError, match="nki only support on neuron, current target: cpu"):
        nkc.compute_mode("auto", (jnp.zeros(3),), {})


def test_generic_kernel_memoizes_per_class(ref_backend):
    k = nki.jit(plain_copy)
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_array_equal(k(x), x)
    np.testing.assert_array_equal(k(x), x)
    assert list(k._cached_kernel) == [BaremetalKernel]
    first = k._cached_kernel[BaremetalKernel]
    k(x)
    assert k._cached_kernel[BaremetalKernel] is first


def test_grid_subscript(ref_backend):
    a = np.ones((256, 1024), np.float16)
    out = ew.add_spmd[2, 2](a, a)
    assert out.dtype == np.float16 and (out == 2).all()
    assert ref_backend.calls[-1][0].grid == [2, 2]


def test_baremetal_forms(ref_backend):
    x = np.ones((4, 4), np.float32)
    np.testing.assert_array_equal(nki.baremetal(plain_copy)(x), x)
    np.testing.assert_array_equal(nki.baremetal(additional_compile_opt="-O1")(plain_copy)(x), x)
    assert ref_backend.calls[-1][1].options == "-O1"


def test_baremetal_known_issue():
    with pytest.raises(ValueError, match='save_neff_name must be set to "file.neff"'):
        nki.baremetal(plain_copy, save_trace_name="t.ntff", save_neff_name="x.neff")


def test_profile_requires_working_directory():
    with pytest.raises(ValueError, match="Please specify working directory"):
        nki.profile(plain_copy)


def test_simulate_kernel_requires_numpy(ref_backend):
    with pytest.raises(TypeError, match="must be numpy.ndarray"):
        nki.simulate_kernel(plain_copy, nt.tensor[[4, 4], nl.float32])


def test_inplace_outputs_when_kernel_returns_none(ref_backend):
    def k(x, y):
        nl.store(y, value=nl.load(x) * 2)
    x = np.ones((4, 4), np.float32)
    y = np.zeros((4, 4), np.float32)
    assert nki.baremetal(k)(x, y) is None
    assert (y == 2).all()


def test_placeholder_arguments_trace():
    from nkid.tracer import trace
    t = trace(plain_copy, (nt.tensor[[128, 64], nl.bfloat16],), {})
    assert t.params[0][1] == (128, 64)


def test_wire_roundtrip_dtypes():
    for dt in (np.float32, np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn,
               ml_dtypes.float8_e5m2, np.int8, np.int16, np.int32, np.uint8):
        a = (np.arange(12).reshape(3, 4) % 7).astype(dt)
        w = to_wire("a", a)
        assert w.dtype == np.dtype(dt).name
        b = from_wire(w)
        assert b.dtype == a.dtype and b.shape == a.shape
        np.testing.assert_array_equal(b.astype(np.float32), a.astype(np.float32))


def test_unreachable_daemon_error(tmp_path, monkeypatch):
    sock = str(tmp_path / "missing.sock")
    monkeypatch.setenv("NKID_SOCKET", sock)
    with pytest.raises(nkid.NkidConnectionError) as e:
        Client().ping()
    msg = str(e.value)
    assert sock in msg and "systemctl status nkid" in msg
    assert isinstance(e.value, nkid.NkidError) and isinstance(e.value, RuntimeError)
