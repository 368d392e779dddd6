"""The NeuronCore model (docs/model.md) against NKI's published latencies,
and Benchmark/Profile on the cpu backend reporting it.

Kernels: tests/python/kernels/perf_tutorials.py, written for this project
from the tutorials' descriptions; they are traced with placeholders and
costed by build/bin/nkimodel without executing.
"""

import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
NKIMODEL = os.path.join(ROOT, "build", "bin", "nkimodel")
sys.path.insert(0, HERE)

from kernels import perf_tutorials as pt  # noqa: E402

#: Each step within the issue's 30% of its published latency, and within
#: PINNED of it (today's figures plus a margin) so that a regression shows:
#: e.g. the hoisted and blocked kernels' loads into disjoint slices of one
#: tile ordered as if they overlapped (+7.5% and +11.9%).
#: trn1's DMA rate is calibrated on the hoisted kernel's bytes over its
#: published time (docs/model.md, "DMA on trn1"); the other steps are
#: predictions.
TARGET = 0.30
PINNED = {"mm_tiled": 0.05, "mm_hoisted": 0.05, "mm_blocked_free": 0.05,
          "mm_optimized": 0.06}

needs_model = pytest.mark.skipif(not os.path.exists(NKIMODEL),
                                 reason="build/bin/nkimodel not built (run make)")


def rel(model_ms, published_ms):
    return abs(model_ms - published_ms) / published_ms


@needs_model
def test_model_matmul_ladder(tmp_path):
    got = {}
    for name, pub in pt.MATMUL_PUBLISHED:
        s = pt.model(getattr(pt, name), pt.matmul_args(), NKIMODEL, str(tmp_path))
        assert s["source"] == "model" and s["deterministic"] and s["target"] == "trn1"
        got[name] = s["total_time_us"] / 1e3
        bound = min(TARGET, PINNED[name])
        assert rel(got[name], pub) <= bound, (name, got[name], pub)
    # The modeled order of the optimization steps is the published order.
    order = [n for n, _ in pt.MATMUL_PUBLISHED]
    assert sorted(order, key=lambda n: -got[n]) == order
    # The fully optimized kernel is TensorE-bound, like the tutorial's 85% HFU.
    s = pt.model(pt.mm_optimized, pt.matmul_args(), NKIMODEL, str(tmp_path))
    assert s["critical_path_engine"] == "tensor" and 70 <= s["hfu_percent"] <= 95


@needs_model
def test_model_mamba_v3_series(tmp_path):
    for seq_len, pub in sorted(pt.MAMBA_V3_PUBLISHED.items()):
        s = pt.model(pt.mamba_v3, pt.mamba_args(4096, seq_len), NKIMODEL, str(tmp_path))
        assert rel(s["total_time_us"] / 1e3, pub) <= TARGET, (seq_len, s["total_time_us"])
        assert s["critical_path_engine"] == "vector"


@needs_model
def test_model_mamba_versions(tmp_path):
    v1 = pt.model(pt.mamba_v1, pt.mamba_args(4096, 512), NKIMODEL, str(tmp_path))
    v2 = pt.model(pt.mamba_v2, pt.mamba_args(4096, 512), NKIMODEL, str(tmp_path))
    assert rel(v1["total_time_us"] / 1e3, pt.MAMBA_V1_PUBLISHED[4096]) <= TARGET
    assert rel(v2["total_time_us"] / 1e3, pt.MAMBA_V2_PUBLISHED[512]) <= TARGET
    assert v2["total_time_us"] < v1["total_time_us"]    # loop reordering pays


@needs_model
def test_model_mamba_v2_series_spills(tmp_path):
    """mamba_v2 without seq_len tiling: every published point within 30%
    (model 5: a [1, L] broadcast wider than a PSUM bank is copied to SBUF,
    1.35x under from seq_len 1024 before; live tiles beyond the 192 KiB
    SBUF spill from seq_len 7168, 2.03x under at 8192 before), slower than
    v3 from seq_len 1024 as published; v3 never spills."""
    for seq_len, pub in sorted(pt.MAMBA_V2_PUBLISHED.items()):
        v2 = pt.model(pt.mamba_v2, pt.mamba_args(4096, seq_len), NKIMODEL, str(tmp_path))
        v3 = pt.model(pt.mamba_v3, pt.mamba_args(4096, seq_len), NKIMODEL, str(tmp_path))
        ms = v2["total_time_us"] / 1e3
        assert pt.ratio(ms, pub) <= 1.3, (seq_len, ms, pub)
        assert v3["spill_bytes"] == 0
        assert (v2["spill_bytes"] > 0) == (seq_len >= 7168), (seq_len, v2["spill_bytes"])
        if seq_len > 512:
            assert v2["total_time_us"] > v3["total_time_us"], seq_len


@needs_model
def test_model_layernorm_order(tmp_path):
    """Layernorm v1 (2311 us) slower than v2 (1969 us) as published, each
    within 30%: their [1, 8192] gamma and beta broadcasts are wider than a
    PSUM bank, so read from SBUF (model 4 had v1 1663 us < v2 1776 us)."""
    from kernels import perf_layernorm as ln
    got = {}
    for name, pub in pt.LAYERNORM_PUBLISHED.items():
        s = pt.model(getattr(ln, name), ln.args(*pt.LAYERNORM_SHAPE), NKIMODEL,
                     str(tmp_path))
        got[name] = s["total_time_us"] / 1e3
        assert rel(got[name], pub) <= TARGET, (name, got[name], pub)
    assert got["layernorm_v1"] > got["layernorm_v2"]


@needs_model
def test_model_deterministic_and_targets(tmp_path):
    a = pt.model(pt.mm_hoisted, pt.matmul_args(), NKIMODEL, str(tmp_path))
    b = pt.model(pt.mm_hoisted, pt.matmul_args(), NKIMODEL, str(tmp_path))
    assert a["total_time_us"] == b["total_time_us"] and a["ops"] == b["ops"]
    t2 = pt.model(pt.mm_optimized, pt.matmul_args(), NKIMODEL, str(tmp_path), target="trn2")
    t1 = pt.model(pt.mm_optimized, pt.matmul_args(), NKIMODEL, str(tmp_path))
    # trn2's TensorE runs at 2.4 GHz against trn1's 2.8: a TensorE-bound
    # kernel is slower per core.
    assert t2["target"] == "trn2" and t2["total_time_us"] > t1["total_time_us"]


@needs_model
def test_model_speed(tmp_path):
    """At most 1 s of modeling per million modeled instructions, in CPU
    time of the nkimodel process: its wall time (model_seconds) is what the
    bench reports, but on this shared 2-CPU machine at a load of 10 it is
    5-10x the CPU time (1.0-1.4 s per million for ~0.15 s of CPU)."""
    import resource
    import nkid.nki.language as nl
    import nkid.nki.typing as nt
    args = (nt.tensor[[16384, 8192], nl.bfloat16], nt.tensor[[16384, 16384], nl.bfloat16])
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    s = pt.model(pt.mm_tiled, args, NKIMODEL, str(tmp_path))
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    assert s["instructions"] > 500000 and s["model_seconds"] > 0
    assert cpu / (s["instructions"] / 1e6) <= 1.0


def _model_trace(kernel, args, tmp_path):
    """nkimodel's JSON summary and its trace's slices (name, line, track,
    start, end) for kernel traced with placeholder args."""
    import subprocess
    from nkid import tracer, trace as ktrace
    fn = getattr(kernel, "func", kernel)
    path, out = str(tmp_path / "k.nkir"), str(tmp_path / "k.json")
    ktrace.save(tracer.trace(fn, args, {}, (), target="trn1"), path)
    p = subprocess.run([NKIMODEL, "-j", "-o", out, path], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    ev = json.load(open(out))["traceEvents"]
    tracks = {e["tid"]: e["args"]["name"] for e in ev if e["name"] == "thread_name"}
    return json.loads(p.stdout), [(e["name"], e["args"]["line"], tracks[e["tid"]], e["ts"],
                                   e["ts"] + e["dur"]) for e in ev if e["ph"] == "X"]


@needs_model
def test_model_store_does_not_hold_loads(tmp_path):
    """A store waiting on compute does not hold back the loads after it:
    loads and stores go on different DMA queues (docs/model.md, "DMA")."""
    from nkid import nki
    import nkid.nki.language as nl
    import nkid.nki.typing as nt

    @nki.jit
    def store_then_load(x, y):
        o1 = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        o2 = nl.ndarray(y.shape, dtype=y.dtype, buffer=nl.shared_hbm)
        a = nl.load(x)
        nl.store(o1, value=nl.exp(a))
        b = nl.load(y)
        nl.store(o2, value=b)
        return o1, o2

    t = nt.tensor[[128, 2048], nl.float32]
    _, sl = _model_trace(store_then_load, (t, t), tmp_path)
    loads = sorted({line for n, line, _, _, _ in sl if n == "load"})
    stores = sorted({line for n, line, _, _, _ in sl if n == "store"})
    start = {(n, line): min(s for m, ln, _, s, _ in sl if (m, ln) == (n, line))
             for n, line in [("load", loads[1]), ("store", stores[0])]}
    # y's load (the second) starts before the first store: it waits for
    # the first load's queue, not for exp and the store.
    assert start[("load", loads[1])] < start[("store", stores[0])]


@needs_model
def test_model_dma_engines_shared(tmp_path):
    """Loads and stores overlap, but a DMA engine moves bytes at its one
    rate: the modeled DMA bandwidth stays under the engines' peak."""
    from nkid import nki
    import nkid.nki.language as nl
    import nkid.nki.typing as nt

    @nki.jit
    def copy_tiles(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(x.shape[0] // 128):
            nl.store(out[i * 128:(i + 1) * 128, :], value=nl.load(x[i * 128:(i + 1) * 128, :]))
        return out

    s, _ = _model_trace(copy_tiles, (nt.tensor[[128 * 32, 8192], nl.float32],), tmp_path)
    # 32 KiB per partition: the engines' sustained rate binds, 70% of
    # their peak on trn1 (perf guide, large transfers).
    assert 65 <= s["dma_bandwidth_utilization_percent"] <= 70.5


@needs_model
def test_model_bad_target(tmp_path):
    with pytest.raises(RuntimeError, match="target 'trn9'"):
        pt.model(pt.mm_tiled, pt.matmul_args(), NKIMODEL, str(tmp_path), target="trn9")


def test_benchmark_reports_the_model(nkid_socket, monkeypatch):
    from nkid import nki
    import nkid.nki.language as nl
    import nkid.nki.typing as nt
    args = (nt.tensor[[256, 128], nl.bfloat16], nt.tensor[[256, 512], nl.bfloat16])
    monkeypatch.delenv("NKID_BENCHMARK_LATENCY", raising=False)
    b = nki.benchmark(warmup=1, iters=5)(pt.mm_tiled)
    b(*args)
    r = b.benchmark_result
    lat = r.nc_latency
    assert lat.source == "model" and "deterministic" in r.note and r.model_target == "trn1"
    vals = {lat.get_latency_percentile(p) for p in lat.PERCENTILES}
    assert all(v == pytest.approx(r.model_us) for v in vals) and r.model_us > 0
    assert r.samples_us == [r.model_us] * 5
    assert r.cpu_latency is not None and len(r.cpu_samples_us) == 5
    assert "modeled NeuronCore latency" in str(lat)
    # The environment variable picks the executor's time instead.
    monkeypatch.setenv("NKID_BENCHMARK_LATENCY", "cpu")
    b(*args)
    r2 = b.benchmark_result
    assert r2.nc_latency.source == "cpu" and r2.samples_us == r2.cpu_samples_us
    monkeypatch.setenv("NKID_BENCHMARK_LATENCY", "gpu")
    with pytest.raises(ValueError, match="NKID_BENCHMARK_LATENCY must be"):
        b(*args)


def test_profile_writes_the_modeled_timeline(nkid_socket, tmp_path):
    import numpy as np
    from nkid import nki
    x = np.random.rand(256, 128).astype(np.float32)
    y = np.random.rand(256, 512).astype(np.float32)
    wd = str(tmp_path / "prof")
    out = nki.profile(working_directory=wd)(pt.mm_tiled)(x, y)
    np.testing.assert_allclose(out, x.T @ y, rtol=1e-4, atol=1e-3)
    trace = json.load(open(os.path.join(wd, "profile.ntff")))
    ev = trace["traceEvents"]
    tracks = {e["tid"]: e["args"]["name"] for e in ev if e["name"] == "thread_name"}
    # Each of the 16 DMA engines has a load queue and a store queue.
    assert sum(n.startswith("DMA engine") for n in tracks.values()) == 32
    slices = [e for e in ev if e["ph"] == "X"]
    mm = [e for e in slices if e["name"] == "matmul"]
    assert len(mm) == 2 and all(tracks[e["tid"]].startswith("Tensor") for e in mm)
    loads = [e for e in slices if e["name"] == "load"]
    assert loads and all(tracks[e["tid"]].startswith("DMA engine") and
                         tracks[e["tid"]].endswith("loads") for e in loads)
    stores = [e for e in slices if e["name"] == "store"]
    assert stores and all(tracks[e["tid"]].endswith("stores") for e in stores)
    # Engines overlap on the modeled core: a load runs while a matmul does
    # or the two matmuls wait on loads (the executor's trace never overlaps).
    s = json.load(open(os.path.join(wd, "json_reports", "profile.json")))
    assert s["source"] == "model" and s["total_time_us"] > 0
    assert {"tensor", "vector", "scalar", "gpsimd"} <= set(s["engines"])
    assert s["hfu_percent"] > 0 and s["dma_bytes"] == (256 * 128 + 256 * 512 + 128 * 512) * 4
    assert s["critical_path_engine"] in ("dma", "tensor", "vector", "scalar", "gpsimd")
    # The timeline is the kernel's work: its last slice, the store's bytes
    # moving, ends 0.7 us before the store lands (docs/model.md, "DMA");
    # the total adds the execution's start-up and tear-down, which it does
    # not draw (docs/profile.md).
    end = max(e["ts"] + e["dur"] for e in slices)
    assert s["overhead_us"] > 0
    assert end + 0.7 == pytest.approx(s["total_time_us"] - s["overhead_us"], rel=1e-3)
    # No two slices overlap on a track: ts and dur are whole ns, the end
    # rounded as the start is (docs/profile.md).
    last = {}
    for e in sorted(slices, key=lambda e: (e["tid"], e["ts"])):
        ts, dur = round(e["ts"] * 1000), round(e["dur"] * 1000)
        assert abs(e["ts"] * 1000 - ts) < 1e-6 and abs(e["dur"] * 1000 - dur) < 1e-6, e
        assert ts >= last.get(e["tid"], 0), e
        last[e["tid"]] = ts + dur
    assert s["target"] == "trn1" and s["model_version"] and \
        trace["otherData"]["model_version"] == s["model_version"]


def test_benchmark_target_and_version(nkid_socket, monkeypatch):
    """platform_target reaches the model (trn2, trn3 through its alias
    gen4); the result says which target and model version made it."""
    from nkid import nki
    import nkid.nki.language as nl
    import nkid.nki.typing as nt
    args = (nt.tensor[[256, 128], nl.bfloat16], nt.tensor[[256, 512], nl.bfloat16])
    monkeypatch.delenv("NKID_BENCHMARK_LATENCY", raising=False)
    got = {}
    for target, want in (("", "trn1"), ("trn2", "trn2"), ("gen4", "trn3")):
        b = nki.benchmark(warmup=0, iters=2, platform_target=target)(pt.mm_tiled)
        b(*args)
        r = b.benchmark_result
        assert r.model_target == want and r.model_version, (target, r.model_target)
        assert ("by model %s" % r.model_version) in r.note
        got[want] = r.model_us
    assert got["trn1"] != got["trn2"], got       # the request's target was modeled


@pytest.mark.parametrize("front", ["benchmark", "profile", "jit"])
def test_unknown_target_refused(front, tmp_path):
    """An unknown target is refused before anything runs, naming the
    targets NKI names (no host CPU time labelled as latency)."""
    from nkid import nki
    with pytest.raises(ValueError, match=r"unknown target 'trn7': NKI names trn1 \(inf2, "
                                         r"gen2\), trn2 \(gen3\), trn3 \(gen4\)"):
        kw = {"working_directory": str(tmp_path)} if front == "profile" else {}
        getattr(nki, front)(platform_target="trn7", **kw)(pt.mm_tiled)


def test_trace_cli_refuses_unknown_target(tmp_path, capsys):
    from nkid import trace as ktrace
    with pytest.raises(SystemExit) as e:
        ktrace.main(["kernels.perf_tutorials:mm_tiled", "--shape", "256,128",
                     "--shape", "256,512", "--target", "trn7",
                     "-o", str(tmp_path / "k.nkir")])
    assert e.value.code == 2
    assert "unknown target 'trn7': NKI names trn1" in capsys.readouterr().err
    assert not (tmp_path / "k.nkir").exists()


@needs_model
def test_model_public_figures(tmp_path):
    """Every published latency (perf_tutorials.public_cases): within 2.1x
    (the long mamba_v2 sequences spill on hardware; the model does not),
    at least 80% within 1.5x; and each family within 1.5x (but for the
    spilling mamba_v2 points) when modeled with nothing fitted to it."""
    rows = pt.public_report(NKIMODEL, str(tmp_path))
    assert len(rows) == 26 + len(pt.POOL_PUBLISHED) + len(pt.TRN2_MATMUL_PUBLISHED)
    assert all(r[4] <= 2.1 for r in rows), [r[:5] for r in rows if r[4] > 2.1]
    assert sum(r[4] <= 1.5 for r in rows) >= 0.8 * len(rows)
    spill = {"mamba_v2_7168", "mamba_v2_8192"}
    held = [r for r in rows if r[1] not in spill]
    assert all(r[6] <= 1.5 for r in held), [(r[1], r[6]) for r in held if r[6] > 1.5]
    # The unfitted model keeps the ladder's order too.
    lo = {r[1]: r[5] for r in rows if r[0] == "matmul"}
    order = [n for n, _ in pt.MATMUL_PUBLISHED]
    assert sorted(order, key=lambda n: -lo[n]) == order


@pytest.mark.parametrize("shape,oh,ow", [((1, 8, 10, 12), 3, 5), ((1, 3, 7, 7), 1, 1),
                                         ((1, 2, 130, 260), 1, 2)])
def test_pool_kernel_matches_numpy(nkid_socket, shape, oh, ow):
    """The pooling family's kernel (kernels/perf_pool.py) computes what
    nki-samples' does: uneven windows, a global pool, and windows wider
    than one DMA piece (128 x 128)."""
    import numpy as np
    from kernels import perf_pool as pp
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    got = pp.adaptive_avg_pool2d(x, oh, ow)
    np.testing.assert_allclose(got, pp.reference(x, oh, ow), rtol=1e-5, atol=1e-5)


@needs_model
def test_model_trn2_tiled_utilization(tmp_path):
    """trn2's only published figures: the kernel-optimization tutorial's
    tiled fp32 matmul keeps TensorE 87.28% and the DMA engines 99.93% busy.
    The model (hardware DGE per DMA instruction, 1300 ns landing) keeps
    TensorE within 20 points of that (71%); with trn2's old knee it was
    48.8%, the kernel 1.8x slower than the profile implies."""
    s = pt.model(pt.mm_tiled, pt.trn2_tiled_args(), NKIMODEL, str(tmp_path), target="trn2")
    assert s["target"] == "trn2"
    assert abs(s["engines"]["tensor"]["active_percent"] - pt.TRN2_TILED_ACTIVE["tensor"]) <= 20
    assert s["dma_active_percent"] >= 70
