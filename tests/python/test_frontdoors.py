"""The front doors against the real nkid: jit dispatch (compute_mode,
_native_mode_map, GenericKernel memoized per class, grids), baremetal,
benchmark, profile and simulate_kernel with their defaults and NKI's
error strings."""

import base64
import inspect
import json
import os
import subprocess
import sys
import traceback
import types

import ml_dtypes
import numpy as np
import pytest

import nkid
from nkid import nki
from nkid.nki import compile as nkc
from nkid.nki import _numpy_kernel as nk
from nkid.nki._numpy_kernel import (BaremetalKernel, SimulateKernel, BenchmarkKernel,
                                    ProfileKernel, NCLatency)
from nkid.nki._jax import JAXKernel
from nkid.nki._torch_xla import PyTorchXLAKernel
import nkid.nki.language as nl
import nkid.nki.typing as nt
from nkid.client import to_wire, from_wire
import cases
from kernels import elementwise as ew

HERE = os.path.dirname(os.path.abspath(__file__))


def plain_copy(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(x))
    return out


def matmul(lhsT, rhs):
    """lhsT.T @ rhs, [K, M] x [K, N] in 128 x 512 tiles."""
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                a = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                b = nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                acc += nl.matmul(a, b, transpose_x=True)
            nl.store(out[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512],
                     value=nl.copy(acc, dtype=out.dtype))
    return out


def _torch_standin():
    """A module named torch with a Tensor class of the real names."""
    mod = types.ModuleType("torch")
    dtype = type("dtype", (), {"__module__": "torch", "__init__": lambda s, n: setattr(s, "n", n),
                               "__str__": lambda s: "torch." + s.n})
    Tensor = type("Tensor", (), {"__module__": "torch"})
    mod.Tensor, mod.dtype = Tensor, dtype
    mod.float32 = dtype("float32")
    mod.is_tensor = lambda x: isinstance(x, Tensor)

    def tensor(shape, dt=mod.float32):
        t = Tensor()
        t.shape, t.dtype = tuple(shape), dt
        return t
    return mod, tensor


# ---------------------------------------------------------------- jit


def test_jit_bare_and_parametrized():
    k1 = nki.jit(plain_copy)
    part = nki.jit(mode="simulation")
    k2 = part(plain_copy)
    assert isinstance(k1, nkc.GenericKernel) and k1.mode == "auto"
    assert callable(part) and not isinstance(part, nkc.GenericKernel)
    assert isinstance(k2, nkc.GenericKernel) and k2.mode == "simulation"
    assert k1.__name__ == "plain_copy" and k1.func is plain_copy
    assert inspect.signature(nki.jit).parameters["mode"].default == "auto"
    assert k1._cached_kernel == {}                  # nothing compiled eagerly
    assert nkc.GenericKernel[int] is nkc.GenericKernel
    for mode in ("jax", "torchxla", "baremetal", "benchmark", "simulation", "auto"):
        assert nki.jit(plain_copy, mode=mode).mode == mode


def test_module_layout():
    assert nki.jit.__module__ == "nkid.nki" and nki._jit_dispatch.__module__ == "nkid.nki"
    assert nkc.compute_mode.__module__ == "nkid.nki.compile"
    assert nkc.GenericKernel.__module__ == "nkid.nki.compile"
    assert nki.simulate_kernel is nkc.simulate_kernel
    assert nki.GenericKernel is nkc.GenericKernel
    assert isinstance(nki._baremetal_kernel, BaremetalKernel)
    assert isinstance(nki._benchmark_kernel, BenchmarkKernel)
    assert isinstance(nki._profile_kernel, ProfileKernel)


def test_unknown_mode():
    with pytest.raises(ValueError, match="^Unsupported mode 'bogus' passed to nki.jit$"):
        nki.jit(plain_copy, mode="bogus")
    with pytest.raises(ValueError, match="' passed to nki.jit"):
        nkc.compute_mode("bogus", (), {})
    with pytest.raises(ValueError, match="^Unknown framework '3'$"):
        nki.jit(plain_copy, mode=3)


def test_native_mode_map():
    m = nkc._native_mode_map
    assert m == {"jax": JAXKernel, "torchxla": PyTorchXLAKernel, "baremetal": BaremetalKernel,
                 "benchmark": BenchmarkKernel, "simulation": SimulateKernel}
    for mode, cls in m.items():
        assert nkc.compute_mode(mode, (np.zeros(3),), {}) is cls


def test_auto_mode_numpy_is_baremetal():
    assert nkc.compute_mode("auto", (np.zeros(3),), {}) is BaremetalKernel
    assert nkc.compute_mode("auto", (), {"a": 3}) is BaremetalKernel
    assert nkc.compute_mode("auto", (nt.tensor[[4, 4], nl.float32],), {}) is BaremetalKernel


def test_auto_mode_torch_stand_in(monkeypatch):
    mod, tensor = _torch_standin()
    monkeypatch.setitem(sys.modules, "torch", mod)
    assert nkc.compute_mode("auto", (np.zeros(2), tensor([2])), {}) is PyTorchXLAKernel
    assert nkc.compute_mode("auto", (np.zeros(2),), {"t": tensor([2])}) is PyTorchXLAKernel


def test_auto_mode_jax_platform_guard():
    jnp = pytest.importorskip("jax.numpy")
    with pytest.raises(RuntimeError, match="^nki only support on neuron, current target: cpu$"):
        nkc.compute_mode("auto", (jnp.zeros(3),), {})
    with pytest.raises(RuntimeError, match="current target: cpu"):
        nkc.compute_mode("auto", (), {"x": jnp.zeros(3)})


def test_dispatch_order_jax_checked_first_per_argument(monkeypatch):
    jnp = pytest.importorskip("jax.numpy")
    mod, tensor = _torch_standin()
    monkeypatch.setitem(sys.modules, "torch", mod)
    monkeypatch.setattr(nkc, "_jax_platform", lambda: "neuron")
    # arguments are scanned in order, args before kwargs
    assert nkc.compute_mode("auto", (jnp.zeros(2), tensor([2])), {}) is JAXKernel
    assert nkc.compute_mode("auto", (tensor([2]), jnp.zeros(2)), {}) is PyTorchXLAKernel
    assert nkc.compute_mode("auto", (np.zeros(2),), {"j": jnp.zeros(2)}) is JAXKernel


def test_detection_never_imports_frameworks():
    code = ("import sys, numpy as np\n"
            "from nkid.nki import compile as c\n"
            "class Array: pass\n"
            "assert c.compute_mode('auto', (np.zeros(2), Array(), 3, 'x'), {'k': object()})"
            " is c.BaremetalKernel\n"
            "assert 'jax' not in sys.modules and 'torch' not in sys.modules, "
            "[m for m in sys.modules if m.startswith(('jax', 'torch'))]\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_generic_kernel_memoizes_per_class(nkid_socket, monkeypatch):
    k = nki.jit(plain_copy)
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_array_equal(k(x), x)
    assert list(k._cached_kernel) == [BaremetalKernel]
    first = k._cached_kernel[BaremetalKernel]
    np.testing.assert_array_equal(k(x), x)
    assert k._cached_kernel[BaremetalKernel] is first
    mod, tensor = _torch_standin()
    monkeypatch.setitem(sys.modules, "torch", mod)
    with pytest.raises(RuntimeError, match="torch_xla"):
        k(tensor([2, 4]))                         # resolves and caches the torch class
    assert list(k._cached_kernel) == [BaremetalKernel, PyTorchXLAKernel]
    built = []
    orig = nkc.GenericKernel.build_cache_kernel
    monkeypatch.setattr(nkc.GenericKernel, "build_cache_kernel",
                        lambda self, cls: built.append(cls) or orig(self, cls))
    k(x)
    assert built == [] and k._cached_kernel[BaremetalKernel] is first


def test_grid_launch(nkid_socket):
    a = np.random.rand(256, 1024).astype(np.float16)
    g = ew.add_spmd[2, 2]
    assert isinstance(g, nkc.GenericKernel) and g.grid == (2, 2) and ew.add_spmd.grid == ()
    out = g(a, a)
    assert out.dtype == np.float16
    np.testing.assert_allclose(out.astype(np.float32), (a + a).astype(np.float32), rtol=1e-3)
    out = nki.simulate_kernel(ew.add_spmd[nl.spmd_dim(1, nl.nc(2)), 2], a, a)
    np.testing.assert_allclose(out.astype(np.float32), (a + a).astype(np.float32), rtol=1e-3)


# ---------------------------------------------------------------- baremetal


def test_baremetal_forms(nkid_socket):
    x = np.ones((4, 4), np.float32)
    np.testing.assert_array_equal(nki.baremetal(plain_copy)(x), x)
    k = nki.baremetal(additional_compile_opt="-O1")(plain_copy)
    assert isinstance(k, BaremetalKernel) and k.additional_compile_opt == "-O1"
    np.testing.assert_array_equal(k(x), x)
    assert inspect.signature(BaremetalKernel).parameters["save_neff_name"].default is None


def test_baremetal_known_issue():
    with pytest.raises(ValueError) as e:
        nki.baremetal(plain_copy, save_trace_name="t.ntff", save_neff_name="x.neff")
    assert str(e.value) == ('Known issue: if save_trace_name is specified, save_neff_name'
                            ' must be set to "file.neff".')
    with pytest.raises(ValueError, match="Known issue"):
        nki.baremetal(plain_copy, save_trace_name="t.ntff")


def test_baremetal_artifacts(nkid_socket, tmp_path):
    x = np.ones((4, 4), np.float32)
    d = tmp_path / "art"
    k = nki.baremetal(plain_copy, save_neff_name="file.neff", save_trace_name="t.ntff",
                      artifacts_dir=str(d))
    np.testing.assert_array_equal(k(x), x)
    assert (d / "file.neff").stat().st_size > 0
    assert "traceEvents" in json.loads((d / "t.ntff").read_text())
    with pytest.raises(ValueError, match="must be empty"):
        k(x)                                      # artifacts_dir is not empty now


def test_inplace_outputs_when_kernel_returns_none(nkid_socket):
    def k(x, y):
        nl.store(y, value=nl.load(x) * 2)
    x = np.ones((4, 4), np.float32)
    y = np.zeros((4, 4), np.float32)
    assert nki.baremetal(k)(x, y) is None
    assert (y == 2).all()


# ---------------------------------------------------------------- benchmark


def test_benchmark_defaults():
    sig = inspect.signature(BenchmarkKernel).parameters
    assert sig["warmup"].default == 10 and sig["iters"].default == 100
    b = nki.benchmark(plain_copy)
    assert isinstance(b, BenchmarkKernel) and (b.warmup, b.iters) == (10, 100)
    assert b.benchmark_result is None


def test_benchmark_matmul_placeholders(nkid_socket):
    b = nki.benchmark(warmup=2, iters=20)(matmul)
    assert b(nt.tensor[[256, 128], nl.float32], nt.tensor[[256, 512], nl.float32]) is None
    lat = b.benchmark_result.nc_latency
    assert isinstance(lat, NCLatency)
    vals = [lat.get_latency_percentile(p) for p in (0, 1, 10, 25, 50, 90, 99, 100)]
    assert all(v > 0 for v in vals) and vals == sorted(vals)
    assert len(b.benchmark_result.samples_us) == 20
    assert min(b.benchmark_result.samples_us) == pytest.approx(vals[0])
    s = str(lat)
    assert s.count(" us") == 5 and s.startswith("min ") and "p50" in s and "max" in s
    with pytest.raises(ValueError, match="percentile"):
        lat.get_latency_percentile(75)


def test_benchmark_numpy_inputs_are_not_sent(nkid_socket, monkeypatch):
    sent = []
    client = nk.get_client()
    orig = client.benchmark
    monkeypatch.setattr(client, "benchmark",
                        lambda ref, inputs, *a, **k: sent.append(inputs) or orig(ref, inputs, *a, **k))
    x = np.ones((128, 64), np.float32)
    nki.benchmark(warmup=0, iters=3)(plain_copy)(x)
    assert [(t.name, list(t.shape), t.dtype, t.data) for t in sent[0]] == \
        [("x", [128, 64], "float32", b"")]


def test_benchmark_too_few_iters_has_no_latency(nkid_socket):
    assert nk.MIN_LATENCY_ITERS == 2
    b = nki.benchmark(warmup=0, iters=1)(plain_copy)
    b(nt.tensor[[128, 64], nl.bfloat16])
    assert b.benchmark_result.nc_latency is None


def test_benchmark_grid(nkid_socket):
    b = nki.benchmark(warmup=1, iters=4)(ew.add_spmd)
    g = b[2, 2]
    assert isinstance(g, BenchmarkKernel) and g.grid == (2, 2) and g.iters == 4
    g(nt.tensor[[256, 1024], nl.float16], nt.tensor[[256, 1024], nl.float16])
    assert g.benchmark_result.nc_latency.get_latency_percentile(50) > 0


def test_benchmark_runs_in_the_batch_class_on_one_core(nkid_socket):
    from nkid.client import get_client
    from nkid._proto import nkid_pb2 as pb
    b = nki.benchmark(warmup=0, iters=2)(plain_copy)
    b(nt.tensor[[128, 64], nl.float32])
    jobs = [j for j in get_client().call("Jobs", pb.JobsRequest(all=True)).jobs
            if j.kind == "benchmark"]
    assert jobs and jobs[-1].job_class.lower() == "batch" and jobs[-1].core == 0
    assert jobs[-1].kernel == "plain_copy"


# ---------------------------------------------------------------- profile


def test_profile_requires_working_directory():
    with pytest.raises(ValueError) as e:
        nki.profile(plain_copy)
    assert str(e.value) == "Please specify working directory"
    with pytest.raises(ValueError, match="absolute"):
        nki.profile(plain_copy, working_directory="relative/dir")


def test_profile_defaults():
    sig = inspect.signature(ProfileKernel).parameters
    assert sig["save_neff_name"].default == "file.neff"
    assert sig["save_trace_name"].default == "profile.ntff"
    assert sig["overwrite"].default is False
    p = nki.profile(working_directory="/tmp/x", profile_nth=2, num_execs=5)(plain_copy)
    assert p.executions() == [2, 4]
    assert nki.profile(working_directory="/tmp/x", profile_nth=3, num_execs=1)(
        plain_copy).executions() == [3]


@pytest.mark.parametrize("kw", [{"profile_nth": 0}, {"num_execs": 0}, {"profile_nth": 1001}])
def test_profile_counts_out_of_range(kw):
    name = list(kw)[0]
    with pytest.raises(ValueError, match="%s must be 1 to 1000, got %d" % (name, kw[name])):
        nki.profile(working_directory="/tmp/x", **kw)(plain_copy)


def test_profile_matmul_layout(nkid_socket, tmp_path):
    wd = str(tmp_path / "prof")
    x = np.random.rand(256, 128).astype(np.float32)
    y = np.random.rand(256, 512).astype(np.float32)
    p = nki.profile(working_directory=wd, num_execs=5, profile_nth=2)(matmul)
    out, text = cases.printed(p, x, y)
    assert text == "Profile results are written to %s\n" % wd
    np.testing.assert_allclose(out, x.T @ y, rtol=1e-4, atol=1e-3)
    assert sorted(os.listdir(wd)) == ["file.neff", "json_reports", "profile.ntff",
                                      "profile_exec_4.ntff"]
    assert sorted(os.listdir(os.path.join(wd, "json_reports"))) == \
        ["profile.json", "profile_exec_4.json"]
    trace = json.load(open(os.path.join(wd, "profile.ntff")))
    ev = trace["traceEvents"]
    tracks = {e["tid"]: e["args"]["name"] for e in ev if e["name"] == "thread_name"}
    # 4 compute engines, 16 DMA engines with a load and a store queue each.
    assert len(tracks) == 36 and any("Tensor engine" in n for n in tracks.values())
    slices = [e for e in ev if e["ph"] == "X"]
    assert {"load", "matmul", "store"} <= {e["name"] for e in slices}
    src, start = inspect.getsourcelines(matmul)
    line = start + next(i for i, s in enumerate(src) if "nl.matmul" in s)
    mm = [e for e in slices if e["name"] == "matmul"]
    assert len(mm) == 2 and mm[0]["args"]["line"] == line and mm[0]["dur"] >= 0
    assert all(tracks[e["tid"]].startswith("Tensor") for e in mm)
    summary = json.load(open(os.path.join(wd, "json_reports", "profile.json")))
    assert summary["execution"] == 2 and summary["kernel"] == "matmul"
    ops = {(o["op"], o["line"]): o for o in summary["ops"]}
    assert ops[("matmul", line)]["count"] == 2
    assert sum(o["count"] for o in summary["ops"]) == summary["op_count"] == \
        len(slices)
    # existing artifacts are an error unless overwrite is set
    with pytest.raises(FileExistsError, match="overwrite=True"):
        p(x, y)
    nki.profile(working_directory=wd, num_execs=5, profile_nth=2, overwrite=True,
                save_trace_name="t.ntff", save_neff_name="k.neff")(matmul)(x, y)
    assert {"k.neff", "t.ntff", "t_exec_4.ntff"} <= set(os.listdir(wd))


# ---------------------------------------------------------------- simulate_kernel


def test_simulate_kernel_requires_numpy(nkid_socket):
    with pytest.raises(TypeError, match="must be numpy.ndarray when using this simulate_kernel"):
        nki.simulate_kernel(plain_copy, nt.tensor[[4, 4], nl.float32])
    class FakeTensor:
        shape, dtype = (4, 4), np.float32
    with pytest.raises(TypeError, match="got FakeTensor"):
        nki.simulate_kernel(plain_copy, FakeTensor())


def test_device_print(nkid_socket, tmp_path):
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    out, text = cases.printed(nki.simulate_kernel, ew.print_tile, x)
    np.testing.assert_array_equal(out, x)
    assert "tile t:" in text
    dump = str(tmp_path / "dump.txt")
    _, text = cases.printed(nkid.nki._numpy_kernel.SimulateKernel(ew.print_tile, dump_file=dump), x)
    assert text == "" and "tile t:" in open(dump).read()


def test_simulate_kernel_passes_statics_and_grid(nkid_socket):
    from kernels import layout
    img = np.arange(2 * 6 * 8, dtype=np.float16).reshape(2, 6, 8)
    out = nki.simulate_kernel(layout.pool_mean, img, 2)
    want = img.reshape(2, 3, 2, 4, 2).astype(np.float32).mean((2, 4)).astype(np.float16)
    np.testing.assert_array_equal(out, want)


# ---------------------------------------------------------------- wire


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


def test_dump_config_is_shared():
    from nkid.tracer import trace
    t = trace(plain_copy, (nt.tensor[[128, 64], nl.float32],), {})
    cfg = json.loads(base64.b64decode(BaremetalKernel(plain_copy).dump_config(t)))
    assert cfg["kernel_name"] == "plain_copy" and cfg["format"] == "nkir/1"
    assert base64.b64decode(cfg["ir"]) == t.ir
    assert cfg["inputs"] == [{"name": "x", "shape": [128, 64], "dtype": "float32"}]
    assert JAXKernel.dump_config is PyTorchXLAKernel.dump_config is BaremetalKernel.dump_config


# ---------------------------------------------------------------- errors at the door


def _client_frames(err):
    """The frames of err's traceback inside the nkid package."""
    pkg = os.path.dirname(os.path.abspath(nkid.__file__))
    return [f for f in traceback.extract_tb(err.__traceback__)
            if os.path.abspath(f.filename).startswith(pkg + os.sep)]


def test_float64_input_names_parameter_dtype_and_accepted():
    x = np.zeros((128, 512))                     # numpy's default dtype
    y = np.zeros((128, 512), np.float32)
    for door in (ew.add_tiled, nki.baremetal(ew.add_tiled),
                 nki.benchmark(ew.add_tiled, iters=2),
                 lambda *a: nki.simulate_kernel(ew.add_tiled, *a)):
        with pytest.raises(TypeError) as e:
            door(y, x)
        assert str(e.value) == (
            "kernel 'add_tiled': parameter 'y' has dtype float64, which NKI does not accept;"
            " NKI accepts float32, float16, bfloat16, float8_e4m3fn, float8_e5m2, int8, int16,"
            " int32, uint8, uint16, uint32, bool (convert it first, e.g."
            " y.astype(numpy.float32))")
        assert len(_client_frames(e.value)) <= 1
    with pytest.raises(TypeError) as e:
        ew.add_tiled(np.zeros((2, 2), np.complex64), y)
    assert "parameter 'x' has dtype complex64" in str(e.value)


def test_nkid_error_raised_from_the_callers_frame(nkid_socket):
    x = np.zeros((256, 40), np.float32)
    with pytest.raises(nkid.NkidError) as e:
        ew.wide_partition(x)
    tb = traceback.extract_tb(e.value.__traceback__)
    assert len(_client_frames(e.value)) == 1     # the front door's raise, no deeper
    assert tb[0].name == "test_nkid_error_raised_from_the_callers_frame"
    assert e.value.__cause__ is None and e.value.__suppress_context__
    assert "exceeds architecture limitation of 128" in str(e.value)


def test_full_traceback_on_request(nkid_socket, monkeypatch):
    monkeypatch.setenv("NKID_TRACEBACK", "full")
    with pytest.raises(nkid.NkidError) as e:
        ew.wide_partition(np.zeros((256, 36), np.float32))
    assert len(_client_frames(e.value)) > 3


def test_retry_failed_on_the_front_doors(nkid_socket):
    x = np.zeros((256, 44), np.float32)          # a shape no other test compiles
    with pytest.raises(nkid.NkidError) as e:
        ew.wide_partition(x)
    assert e.value.code == "INVALID_ARGUMENT"
    with pytest.raises(nkid.NkidError) as e:     # the failure is cached ...
        nki.baremetal(ew.wide_partition)(x)
    assert e.value.code == "FAILED_PRECONDITION"
    assert "--retry-failed in nkictl, retry_failed=True in Python" in str(e.value)
    doors = (nki.baremetal(ew.wide_partition, retry_failed=True),
             nki.jit(ew.wide_partition.func, retry_failed=True),
             nki.jit(ew.wide_partition.func, mode="simulation", retry_failed=True),
             lambda a: nki.simulate_kernel(nki.jit(ew.wide_partition.func,
                                                   retry_failed=True), a))
    for door in doors:                           # ... and compiled again on request
        with pytest.raises(nkid.NkidError) as e:
            door(x)
        assert e.value.code == "INVALID_ARGUMENT", door
        assert "exceeds architecture limitation of 128" in str(e.value)
    assert BaremetalKernel(ew.wide_partition.func, retry_failed=True).retry_failed
    assert not BaremetalKernel(ew.wide_partition.func).retry_failed
