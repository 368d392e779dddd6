"""The framework bridges: JAXKernel with real jax on the CPU platform (the
platform guard, and with the guard satisfied the lowered stablehlo custom
call) and PyTorchXLAKernel with stand-in torch tensors (torch and torch-xla
are not installed here: emitting into a real lazy-tensor graph is what
remains untested, see docs/python.md)."""

import base64
import json
import sys
import types

import numpy as np
import pytest

from nkid import nki
from nkid.nki import compile as nkc
from nkid.nki import _jax, _torch_xla, _numpy_kernel
from nkid.nki._jax import JAXKernel
from nkid.nki._torch_xla import PyTorchXLAKernel
import nkid.nki.language as nl

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


@nki.jit
def add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(a), nl.load(b)))
    return out


@nki.jit
def double_into(a, b):
    nl.store(b, value=nl.load(a) * 2)


def _config(text):
    start = text.index('backend_config = "') + len('backend_config = "')
    return json.loads(base64.b64decode(text[start:text.index('"', start)]))


def test_guard_on_cpu():
    with pytest.raises(RuntimeError, match="^nki only support on neuron, current target: cpu$"):
        add(jnp.zeros((128, 64)), jnp.zeros((128, 64)))
    with pytest.raises(RuntimeError, match="current target: cpu"):
        jax.jit(add).lower(jnp.zeros((128, 64)), jnp.zeros((128, 64)))


@pytest.fixture
def neuron(monkeypatch):
    """Satisfy the platform guard (jax's backend platform reads "neuron")."""
    monkeypatch.setattr(nkc, "_jax_platform", lambda: "neuron")


def test_lowering_custom_call(neuron):
    text = jax.jit(add).lower(jnp.zeros((128, 64)), jnp.ones((128, 64))).as_text()
    assert "stablehlo.custom_call @AwsNeuronCustomNativeKernel(%arg0, %arg1)" in text
    assert "-> tensor<128x64xf32>" in text
    assert 'mhlo.frontend_attributes = {' in text and 'kernel_name = "add"' in text
    cfg = _config(text)
    assert cfg["kernel_name"] == "add" and cfg["format"] == "nkir/1"
    assert cfg["outputs"] == [{"name": "out", "shape": [128, 64], "dtype": "float32"}]
    assert len(base64.b64decode(cfg["ir"])) > 0


def test_lowering_aliases_written_operands(neuron):
    text = jax.jit(double_into).lower(jnp.zeros((128, 64)), jnp.ones((128, 64))).as_text()
    assert "@AwsNeuronCustomNativeKernel" in text
    assert ("output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices"
            " = [], operand_index = 1, operand_tuple_indices = []>]") in text
    assert _config(text)["inplace"] == [1]


def test_backend_config_is_dump_config(neuron):
    text = jax.jit(add).lower(jnp.zeros((128, 64)), jnp.ones((128, 64))).as_text()
    k = add._cached_kernel[JAXKernel]
    traced = k.specialize((nki.typing.tensor[[128, 64], nl.float32],) * 2, {})
    start = text.index('backend_config = "') + len('backend_config = "')
    assert text[start:text.index('"', start)] == k.dump_config(traced)


def test_primitive_and_abstract_eval(neuron):
    p = _jax.get_nki_call_p()
    assert p.name == "nki_call" and p is _jax.nki_call_p and p.multiple_results
    jaxpr = jax.make_jaxpr(add)(jnp.zeros((128, 64), jnp.bfloat16), jnp.zeros((128, 64),
                                                                            jnp.bfloat16))
    assert "nki_call" in str(jaxpr) and "bf16[128,64]" in str(jaxpr)


def test_dont_cache_trace_env(neuron, monkeypatch):
    calls = []
    orig = _numpy_kernel._tracer.trace
    monkeypatch.setattr(_numpy_kernel._tracer, "trace",
                        lambda *a, **kw: calls.append(1) or orig(*a, **kw))

    @nki.jit
    def neg(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.negative(nl.load(a)))
        return out
    x = jnp.zeros((128, 32))
    jax.jit(neg).lower(x).as_text()
    assert len(calls) == 1                       # abstract eval traced; lowering reused it
    monkeypatch.setenv("NKI_DONT_CACHE_TRACE_FOR_JAX_LOWERING", "TRUE")
    jax.jit(neg).lower(jnp.zeros((128, 16))).as_text()
    assert len(calls) == 3                       # and now the lowering traces again


# ---------------------------------------------------------------- torch-xla


@pytest.fixture
def torch(monkeypatch):
    """A stand-in torch: classes named torch.Tensor and torch.dtype."""
    mod = types.ModuleType("torch")
    dtype = type("dtype", (), {"__module__": "torch",
                               "__init__": lambda s, n: setattr(s, "n", n),
                               "__str__": lambda s: "torch." + s.n})
    Tensor = type("Tensor", (), {"__module__": "torch"})
    mod.Tensor, mod.dtype = Tensor, dtype
    mod.float32, mod.bfloat16 = dtype("float32"), dtype("bfloat16")
    mod.is_tensor = lambda x: isinstance(x, Tensor)

    def tensor(shape, dt=mod.float32):
        t = Tensor()
        t.shape, t.dtype = tuple(shape), dt
        return t
    mod.tensor = tensor
    monkeypatch.setitem(sys.modules, "torch", mod)
    monkeypatch.setitem(sys.modules, "torch_xla", None)   # import fails: not installed
    return mod


def test_torch_custom_call(torch):
    k = PyTorchXLAKernel(double_into.func)
    a, b = torch.tensor([128, 64], torch.bfloat16), torch.tensor([128, 64], torch.bfloat16)
    cc = k.custom_call(a, b)
    assert cc.target == "AwsNeuronNkiKernel"
    assert cc.operands == [a, b]
    assert cc.output_shapes == [(128, 64)] and cc.output_dtypes == ["bfloat16"]
    assert cc.output_operand_aliasing == [(0, 1)] and cc.excluded_output_tensors == [0]
    cfg = json.loads(base64.b64decode(cc.backend_config))
    assert cfg["kernel_name"] == "double_into" and cfg["inplace"] == [1]
    cc = k.custom_call(torch.tensor([128, 64]), torch.tensor([128, 64]))
    assert cc.output_dtypes == ["float32"]


def test_torch_dispatch_and_framework_needed(torch):
    assert nkc.compute_mode("auto", (torch.tensor([4, 4]),), {}) is PyTorchXLAKernel
    with pytest.raises(RuntimeError, match="needs torch and torch_xla"):
        add(torch.tensor([128, 64]), torch.tensor([128, 64]))
    assert PyTorchXLAKernel in add._cached_kernel


def test_nki_jit_top_level():
    k = _torch_xla.nki_jit(add.func)
    assert isinstance(k, nkc.GenericKernel) and k.mode == "torchxla"
    assert _torch_xla.nki_jit()(add.func).mode == "torchxla"
