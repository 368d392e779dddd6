"""nki.isa's enums and target queries, nc_matmul's PE tiling and
double-row mode, the names that cannot run off the device, and the
NeuronCore model's costs for the new instructions (profile/benchmark)."""

import json
import os

import numpy as np
import pytest

import nkid
from nkid import nki
import nkid.nki.isa as nisa
import nkid.nki.language as nl
import nkid.nki.typing as nt

from isa_helpers import out_kernel, assert_refused


def test_enums_mirror_nki():
    assert [(e.name, int(e)) for e in nisa.reduce_cmd] == [
        ("idle", 0), ("reset", 1), ("reset_reduce", 3), ("reduce", 2)]
    assert [(e.name, int(e)) for e in nisa.dge_mode] == [
        ("none", 0), ("swdge", 1), ("hwdge", 2), ("unknown", 3)]
    assert [(e.name, int(e)) for e in nisa.oob_mode] == [("error", 0), ("skip", 1)]
    assert (int(nisa.nc_version.gen2), int(nisa.nc_version.gen3)) == (2, 3)
    assert int(nisa.engine.vector) == 5 and nisa.vector_engine is nisa.engine.vector
    assert nisa.unknown_engine == nisa.engine.unknown == 0
    assert nisa.fp32.min == np.finfo(np.float32).min
    # outside a kernel, the default target
    assert nisa.get_nc_version() == nisa.nc_version.gen2


@nki.jit
def version_tile(x):
    """Writes 3 on NeuronCore-v3 targets, 2 elsewhere."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    v = 3.0 if nisa.get_nc_version() == nisa.nc_version.gen3 else 2.0
    nl.store(out, nl.add(nl.load(x), v))
    return out


def test_get_nc_version_follows_the_target(nkid_socket):
    x = np.zeros((2, 2), np.float32)
    assert (version_tile(x) == 2).all()
    assert (nki.jit(version_tile.func, platform_target="trn2")(x) == 3).all()


def test_bad_enum_member(nkid_socket):
    assert_refused(out_kernel(lambda x, out: nisa.dma_copy(dst=out, src=x, dge_mode=7)),
                   nkid.NKIError, "dge_mode must be a member of nisa.dge_mode, got 7",
                   np.zeros((2, 2), np.float32))


# ---------------------------------------------------------------- nc_matmul

@nki.jit
def tiled_pe(a, b):
    """Two 64x64 products placed on quarters of the PE array."""
    out = nl.ndarray((2, 64, b.shape[2]), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in range(2):
        ta = nl.load(a[i])
        tb = nl.load(b[i])
        r = nisa.nc_matmul(ta, tb, tile_position=(i * 64, i * 64), tile_size=(64, 64))
        nl.store(out[i], r)
    return out


def test_nc_matmul_pe_tiling(nkid_socket):
    g = np.random.default_rng(1)
    a = g.standard_normal((2, 64, 64)).astype(np.float32)
    b = g.standard_normal((2, 64, 100)).astype(np.float32)
    ref = np.stack([a[i].T @ b[i] for i in range(2)])
    np.testing.assert_allclose(tiled_pe(a, b), ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("pos,size,msg", [
    ((0, 0), (), "tile_position and tile_size must be both set"),
    ((0, 16), (64, 64), "values in tile_position must be multiples of 32, got 16"),
    ((0, 0), (32, 32), "both the row and column sizes in tile_size cannot be 32"),
    ((0, 0), (32, 64), r"tile_size \[32, 64\] must be larger than or equal to the accessed"),
    ((96, 0), (64, 64), r"tile_position \[96, 0\] with tile_size \[64, 64\] exceeds"),
])
def test_nc_matmul_pe_tiling_limits(nkid_socket, pos, size, msg):
    @nki.jit
    def k(a, b):
        out = nl.ndarray((64, b.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, nisa.nc_matmul(nl.load(a), nl.load(b), tile_position=pos,
                                     tile_size=size))
        return out

    with pytest.raises(nkid.NKIError, match=msg):
        k(np.zeros((64, 64), np.float32), np.zeros((64, 8), np.float32))


@nki.jit(platform_target="trn2")
def double_row(a, b):
    out = nl.ndarray((a.shape[2], b.shape[2]), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, nisa.nc_matmul(nl.load(a), nl.load(b), perf_mode="double_row_gen3"))
    return out


def test_nc_matmul_double_row(nkid_socket):
    g = np.random.default_rng(2)
    a = g.standard_normal((128, 2, 16)).astype(nl.float8_e5m2)
    b = g.standard_normal((128, 2, 64)).astype(nl.float8_e5m2)
    ref = np.einsum("kli,klj->ij", a.astype(np.float32), b.astype(np.float32))
    np.testing.assert_allclose(double_row(a, b), ref, rtol=1e-4, atol=1e-3)
    with pytest.raises(nkid.NKIError, match="needs NeuronCore-v3"):
        nki.jit(double_row.func)(a, b)


def pe_transpose_kernel(a):
    """A bf16 tile transposed by nc_matmul's transpose mode into a PSUM tile
    of its own dtype, as nki-samples' allocated_fused_rms_norm_qkv does on
    NeuronCore-v3 (fp32 on v2)."""
    out = nl.ndarray((a.shape[1], a.shape[0]), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    ident = nl.shared_identity_matrix(n=a.shape[0], dtype=a.dtype)
    i = nl.load(ident)
    dt = a.dtype if nisa.get_nc_version() != nisa.nc_version.gen2 else nl.float32
    ps = nl.ndarray((a.shape[1], a.shape[0]), dtype=dt, buffer=nl.psum)
    ps[...] = nisa.nc_matmul(t, i, is_transpose=True)
    nl.store(out, nl.copy(ps, dtype=a.dtype))
    return out


def test_nc_matmul_transpose_mode(nkid_socket):
    """trn2: transpose mode is bit-accurate (NaN and Inf kept) and writes
    the input's dtype to PSUM; trn1: an fp32 matmul with the identity."""
    g = np.random.default_rng(3)
    a = g.standard_normal((64, 32)).astype(nl.bfloat16)
    a[3, 5], a[7, 1] = np.inf, np.nan
    got = nki.jit(pe_transpose_kernel, platform_target="trn2")(a)
    np.testing.assert_array_equal(got.view(np.uint16), np.ascontiguousarray(a.T).view(np.uint16))
    b = g.standard_normal((64, 32)).astype(nl.bfloat16)
    np.testing.assert_array_equal(nki.jit(pe_transpose_kernel)(b).astype(np.float32),
                                  b.T.astype(np.float32))


def test_nc_matmul_transpose_mode_needs_the_identity(nkid_socket):
    def k(a, out):
        t = nl.load(a)
        ident = nl.load(nl.shared_identity_matrix(n=32, dtype=a.dtype))
        nl.store(out, nisa.nc_matmul(t, ident, is_transpose=True))
    with pytest.raises(nkid.NKIError, match=r"nc_matmul with is_transpose=True: moving must"
                       r" be the identity of stationary's partitions \(64\), got shape"
                       r" \[32, 32\] \(test_isa_misc.py:\d+\)"):
        out_kernel(k, shape=lambda x: (16, 64), platform_target="trn2")(
            np.zeros((64, 16), np.float32))


# ---------------------------------------------------------------- device only

def test_builtin_custom_op_cannot_run_off_the_device(nkid_socket):
    k = out_kernel(lambda x, out: nisa.builtin_custom_op("my_fn", "libmine.so", 1, 1,
                                                         [nl.load(x)], [out]))
    assert_refused(k, nkid.NKIError, "builtin_custom_op runs a custom GpSimd microcode"
                   " library .* cannot run it", np.zeros((2, 2), np.float32))


# ---------------------------------------------------------------- the model

@nki.jit
def model_mix(a, b, idx):
    """One of each costed family: indirect DMA, scan, affine_select,
    activation with a readout, dma_transpose."""
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    sums = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    it = nl.load(idx)
    ip, jf = nl.mgrid[0:128, 0:512]
    ta = nl.ndarray((128, 512), dtype=nl.float32)
    nisa.dma_copy(dst=ta[ip, jf], src=a[it[ip, 0], jf])
    tb = nl.load(b)
    h = nisa.tensor_tensor_scan(ta, tb, 0.0, np.multiply, np.add)
    m = nisa.affine_select(pred=(ip >= jf), on_true_tile=h, on_false_value=0.0)
    s = nl.ndarray((128, 1), dtype=nl.float32)
    e = nisa.activation_reduce(op=nl.exp, data=m, reduce_op=nl.add, reduce_res=s)
    nl.store(out, e)
    nl.store(sums, s)
    return out, sums


def test_profile_costs_the_new_instructions(nkid_socket, tmp_path):
    g = np.random.default_rng(3)
    a = g.uniform(0, 0.01, (300, 512)).astype(np.float32)
    b = g.uniform(0, 0.01, (128, 512)).astype(np.float32)
    idx = g.integers(0, 300, (128, 1)).astype(np.int32)
    wd = str(tmp_path / "prof")
    out, sums = nki.profile(working_directory=wd)(model_mix.func)(a, b, idx)
    trace = json.load(open(os.path.join(wd, "profile.ntff")))
    ev = trace["traceEvents"]
    tracks = {e["tid"]: e["args"]["name"] for e in ev if e["name"] == "thread_name"}
    slices = {}
    for e in ev:
        if e["ph"] == "X":
            slices.setdefault(e["name"], []).append(e)
    track = {n: tracks[v[0]["tid"]].split()[0] for n, v in slices.items()}
    assert track["dma_copy"] == "DMA"
    assert track["tensor_tensor_scan"].startswith("Vector")
    assert track["affine_select"].startswith("GpSimd")
    assert track["activation"].startswith("Scalar")
    assert track["reduce_res"].startswith("Scalar")
    # isa: tensor_tensor_scan is max(MIN_II, 2N) VectorE cycles (N = 512,
    # 1.12 GHz); affine_select GPSIMD_START + N (1.4 GHz); reading the
    # accumulators MIN_II ScalarE cycles.
    # (the trace keeps microseconds to 3 decimals)
    assert slices["tensor_tensor_scan"][0]["dur"] == pytest.approx(1024 / 1.12e3, abs=1e-3)
    assert slices["affine_select"][0]["dur"] == pytest.approx((150 + 512) / 1.4e3, abs=1e-3)
    assert slices["reduce_res"][0]["dur"] == pytest.approx(64 / 1.4e3, abs=1e-3)
    # and the run itself computed the kernel
    ref_h = np.zeros((128, 512))
    s = np.zeros(128)
    ga = a[idx[:, 0]]
    for i in range(512):
        s = ga[:, i] * s + b[:, i]
        ref_h[:, i] = s
    ref = np.exp(np.where(np.arange(128)[:, None] >= np.arange(512)[None, :], ref_h, 0.0))
    np.testing.assert_allclose(out, ref, rtol=1e-4)
    np.testing.assert_allclose(sums[:, 0], ref.sum(axis=1), rtol=1e-4)


def test_benchmark_with_new_instructions(nkid_socket):
    args = (nt.tensor[[300, 512], nl.float32], nt.tensor[[128, 512], nl.float32],
            nt.tensor[[128, 1], nl.int32])
    bench = nki.benchmark(warmup=1, iters=2)(model_mix.func)
    bench(*args)
    r = bench.benchmark_result
    assert r.nc_latency.source == "model" and r.model_us > 0
