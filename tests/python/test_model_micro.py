"""Microbenchmarks of the NeuronCore model (docs/model.md, "Microbenchmarks"):
one instruction or one DMA pattern (tests/python/kernels/micro.py), swept
over sizes, dtypes and targets, each pinned to the cost NKI's documents
imply, computed here from the cited rule. A change to a rule moves exactly
the figures of the rows it governs.

Sources (docs/model.md, "Costs and their sources"): isa = aws-neuron-sdk@
8a38e733 general/nki/api/nki/isa/__init__.py, arch = its
general/nki/arch/trainium_inferentia2_arch.rst; trn2/trn3 arch, dma intro,
dma-bandwidth = aws-neuron-sdk@81ce03ae nki/guides/architecture/,
nki/get-started/about/nki-dma-overview.rst, nki/deep-dives/.
"""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
NKIMODEL = os.path.join(ROOT, "build", "bin", "nkimodel")
sys.path.insert(0, HERE)

from kernels import micro as mc            # noqa: E402
from kernels import perf_tutorials as pt   # noqa: E402

#: The module's own temporary directory, where each traced kernel's NKIR is
#: written for nkimodel (pytest removes it).
_TMP = [None]


@pytest.fixture(scope="module", autouse=True)
def _model_tmp(tmp_path_factory):
    _TMP[0] = str(tmp_path_factory.mktemp("model_micro"))
    yield
    _TMP[0] = None


pytestmark = pytest.mark.skipif(not os.path.exists(NKIMODEL),
                                reason="build/bin/nkimodel not built (run make)")

#: arch / trn2 arch / trn3 arch: clocks (GHz) of Tensor, Vector, Scalar
GHZ = {"trn1": (2.8, 1.12, 1.4), "trn2": (2.4, 0.96, 1.2), "trn3": (2.4, 1.2, 1.2)}
#: VectorE elements per partition per cycle: other dtypes, all 16-bit
VEC = {"trn1": (1, 1), "trn2": (2, 4), "trn3": (2, 4)}
#: ScalarE, all 16-bit (trn3 arch: 256 BF16/FP16/FP8, 128 others)
SCA16 = {"trn1": 1, "trn2": 1, "trn3": 2}
MIN_II = 64                   # isa: "MIN_II is roughly 64 engine cycles"
P = 128
#: bytes of engine time a DMA buffer (a contiguous run) costs at least
#: (GUESSED, bounded by nki-samples' SD attention kernel; docs/model.md)
BUF_MIN = 32
#: ns a transfer lands after its bytes moved: dma-bandwidth's ~1300 ns fixed
#: cost less the ~600 ns descriptor setup (dge) a hardware DGE does and trn1
#: does before the run
LANDING = 700
#: ns of an execution's start-up and tear-down (fused_mamba.rst's profile)
OVERHEAD = 10000


def dma_eff(pp_bytes):
    """trn1's share of the 17 B/ns peak a DMA engine sustains (docs/model.md:
    calibrated 37.9% to 1 KiB per partition, 70% from 2 KiB, a line between)."""
    lo, hi = 0.379, 0.70
    if pp_bytes <= 1024:
        return lo
    if pp_bytes >= 2048:
        return hi
    return lo + (hi - lo) * (pp_bytes - 1024) / 1024


def run(kernel, shapes, dtype, target="trn1"):
    import nkid.nki.typing as nt
    import nkid.nki.language as nl
    dt = getattr(nl, dtype)
    return pt.model(kernel, tuple(nt.tensor[list(s), dt] for s in shapes), NKIMODEL,
                    _TMP[0], target=target)


def busy(s, engine):
    return s["engines"][engine]["busy_us"] * 1e3      # ns


SIZES = (64, 512, 2048)
DTYPES = ("float32", "bfloat16")
TARGETS = ("trn1", "trn2", "trn3")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_activation(n, dtype, target):
    """isa activation: max(MIN_II, N) ScalarE cycles (trn3: 2 elements per
    cycle for 16-bit)."""
    s = run(mc.act_exp, [(P, n)], dtype, target)
    per = SCA16[target] if dtype == "bfloat16" else 1
    want = max(MIN_II, n / per) / GHZ[target][2]
    assert busy(s, "scalar") == pytest.approx(want, abs=1.0)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("kernel", ["tt_add", "tt_mul"])
def test_tensor_tensor(kernel, n, dtype, target):
    """isa tensor_tensor: max(MIN_II, N) for bf16 add/multiply/subtract of
    contiguous SBUF tiles, else max(MIN_II, 2N); trn2/trn3 arch: the
    VectorE's elements per cycle."""
    s = run(getattr(mc, kernel), [(P, n), (P, n)], dtype, target)
    cyc = n if dtype == "bfloat16" else 2 * n
    cyc /= VEC[target][1] if dtype == "bfloat16" else VEC[target][0]
    want = max(MIN_II, cyc) / GHZ[target][1]
    assert busy(s, "vector") == pytest.approx(want, abs=1.0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_tensor_scalar(n, dtype):
    """isa tensor_scalar: max(MIN_II, N) VectorE cycles, any dtype."""
    s = run(mc.ts_mul, [(P, n)], dtype)
    assert busy(s, "vector") == pytest.approx(max(MIN_II, n) / 1.12, abs=1.0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_tensor_reduce(n, dtype):
    """isa tensor_reduce: N/2 cycles for a bf16 add or max, else N (at
    least MIN_II)."""
    s = run(mc.reduce_add, [(P, n)], dtype)
    cyc = n / 2 if dtype == "bfloat16" else n
    assert busy(s, "vector") == pytest.approx(max(MIN_II, cyc) / 1.12, abs=1.0)


@pytest.mark.parametrize("target", ("trn1", "trn2"))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m,n", [(128, 512), (32, 512), (128, 16)])
def test_matmul(m, n, dtype, target):
    """isa nc_matmul: max(min(64, M), N) TensorE cycles, 4x for fp32."""
    s = run(mc.matmul_one, [(P, m), (P, n)], dtype, target)
    cyc = max(min(64, m), n) * (4 if dtype == "float32" else 1)
    assert busy(s, "tensor") == pytest.approx(cyc / GHZ[target][0], abs=1.0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("f", (64, 256, 512, 1024, 4096))
def test_dma_contiguous(f, dtype):
    """A [128, F] load and its store on trn1: 16 transfers of 8 partitions,
    one per engine (arch), each moving 8 x F x dtype bytes at the engine's
    sustained share of 17 B/ns (dma intro table; docs/model.md)."""
    s = run(mc.copy_hbm, [(P, f)], dtype)
    pp = f * (4 if dtype == "float32" else 2)
    want = 2 * 8 * pp / (17.0 * dma_eff(pp))
    assert s["dma_queues"]["dma0"]["busy_us"] * 1e3 == pytest.approx(want, abs=1.0)
    assert s["dma_bytes"] == 2 * P * pp


@pytest.mark.parametrize("dtype", DTYPES)
def test_dma_element_runs(dtype):
    """A tile read from the transpose of an HBM tensor: every element a
    contiguous run of its own, each costing at least BUF_MIN bytes of
    engine time (GUESSED, docs/model.md)."""
    f = 256
    s = run(mc.column_gather, [(f, P)], dtype)
    es = 4 if dtype == "float32" else 2
    load = 8 * f * BUF_MIN / (17.0 * dma_eff(f * es))
    store = 8 * f * es / (17.0 * dma_eff(f * es))
    assert s["dma_queues"]["dma0"]["busy_us"] * 1e3 == pytest.approx(load + store, abs=1.0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_dma_rows_not_ordered(dtype):
    """128 loads into the rows (partitions) of one tile: disjoint writes, so
    none waits for another to land (LANDING each) and the queues pipeline
    them. The model ordered them until model 4 (167 us)."""
    s = run(mc.rows_one_by_one, [(P, 256)], dtype)
    assert s["overhead_us"] * 1e3 == OVERHEAD
    assert s["total_time_us"] - s["overhead_us"] < 10, s["total_time_us"]


@pytest.mark.parametrize("target,bw", [("trn2", 23.0), ("trn3", 33.0)])
@pytest.mark.parametrize("f", (64, 1024, 4096))
def test_dma_hardware_dge(f, target, bw):
    """trn2/trn3: each DMA instruction's descriptors take ~600 ns on one of
    two hardware DGE instances (dge); the bytes move at the engine's peak
    (dma intro / dma-bandwidth tables); a transfer lands LANDING after its
    bytes moved. A load then its store: the store's descriptors are made
    while the load runs; then the execution's start-up and tear-down."""
    s = run(mc.copy_hbm, [(P, f)], "float32", target)
    occ = 8 * f * 4 / bw
    load = 600 + occ + LANDING
    want = OVERHEAD + load + occ + LANDING
    assert s["total_time_us"] * 1e3 == pytest.approx(want, abs=1.0)
    assert s["dma_queues"]["dma0"]["busy_us"] * 1e3 == pytest.approx(2 * occ, abs=1.0)


def slices(kernel, shapes, dtype, target, tmp_path):
    """The modeled trace's instruction slices (nkimodel -o)."""
    import json
    import subprocess
    import nkid.nki.typing as nt
    import nkid.nki.language as nl
    from nkid import tracer, trace as ktrace
    dt = getattr(nl, dtype)
    t = tracer.trace(kernel.func, tuple(nt.tensor[list(s), dt] for s in shapes), {}, (),
                     target=target)
    ktrace.save(t, str(tmp_path / "k.nkir"))
    subprocess.run([NKIMODEL, "-o", str(tmp_path / "t.json"), str(tmp_path / "k.nkir")],
                   check=True, capture_output=True)
    ev = json.load(open(tmp_path / "t.json"))["traceEvents"]
    return [e for e in ev if e.get("ph") == "X"]


@pytest.mark.parametrize("target", ("trn1", "trn2"))
def test_vector_gpsimd_share_sbuf_on_trn1(target, tmp_path):
    """arch (NeuronCore-v2): "Vector Engine and GpSimd Engine cannot access
    SBUF in parallel"; trn2 arch: lifted on NeuronCore-v3. Two independent
    instructions on the same tile: one after the other on trn1, side by
    side on trn2."""
    ev = slices(mc.vector_beside_gpsimd, [(P, 2048)], "float32", target, tmp_path)
    v = [e for e in ev if e["cat"] == "vector"]
    g = [e for e in ev if e["cat"] == "gpsimd"]
    assert len(v) == 1 and len(g) == 1
    v, g = v[0], g[0]
    apart = g["ts"] >= v["ts"] + v["dur"] or v["ts"] >= g["ts"] + g["dur"]
    assert apart == (target == "trn1"), (v, g)


@pytest.mark.parametrize("rows", (1, 44, 128))
def test_dma_masked_partitions(rows):
    """A load and a store masked to their first `rows` partitions move those
    rows only: ceil(rows / 8) transfers, rows x F x 4 bytes each way (until
    model 4 a masked DMA was costed at its full shape)."""
    import nkid.nki.typing as nt
    import nkid.nki.language as nl
    f = 1024
    s = pt.model(mc.masked_rows, (nt.tensor[[P, f], nl.float32], rows), NKIMODEL,
                 _TMP[0])
    assert s["dma_bytes"] == 2 * rows * f * 4
    load = [o for o in s["ops"] if o["op"] == "load"][0]
    assert load["count"] == (rows + 7) // 8


#: arch / trn2 arch / trn3 arch: SBUF bytes per partition
SBUF_PP = {"trn1": 192 * 1024, "trn2": 224 * 1024, "trn3": 256 * 1024}


@pytest.mark.parametrize("target", ("trn1", "trn2", "trn3"))
def test_sbuf_spill(target):
    """SBUF capacity (docs/model.md, "SBUF capacity"): k tiles of [P, F]
    float32 loaded and summed in a chain have k + 1 tiles live at the first
    sum. While they fit in the target's SBUF per partition nothing spills;
    one tile more and the tile used last is stored after its load and
    reloaded before its sum: 2 x P x F x 4 bytes more DMA, and later."""
    import nkid.nki.typing as nt
    import nkid.nki.language as nl
    f = 4096
    fit = SBUF_PP[target] // (f * 4) - 1          # k + 1 tiles fill SBUF
    got = {}
    for k in (fit, fit + 1):
        s = pt.model(mc.live_tiles, (nt.tensor[[k, P, f], nl.float32],), NKIMODEL,
                     _TMP[0], target=target)
        got[k] = s
        assert s["dma_bytes"] == (k + 1) * P * f * 4 + s["spill_bytes"]
    assert got[fit]["spill_bytes"] == 0
    assert got[fit + 1]["spill_bytes"] == 2 * P * f * 4
    # the reload waits for the first sum, where the tile did not fit
    assert got[fit + 1]["total_time_us"] > got[fit]["total_time_us"]


def test_engine_fills_gaps(tmp_path):
    """An instruction whose inputs are ready runs in its engine's idle gap
    (docs/model.md, "Schedule"): the second iteration's first exp starts
    before the first iteration's squares (VectorE) end, which the first
    iteration's second exp waits for (model 4 ran ScalarE in program order:
    after that second exp)."""
    ev = slices(mc.two_chains, [(2, P, 2048)], "float32", "trn1", tmp_path)
    act = sorted((e for e in ev if e["cat"] == "scalar"), key=lambda e: e["ts"])
    vec = sorted((e for e in ev if e["cat"] == "vector"), key=lambda e: e["ts"])
    assert len(act) == 4 and len(vec) == 8
    # ScalarE: the two first exps, then the second exps; the second
    # iteration's first exp runs while the first iteration's squares do
    assert act[1]["ts"] < vec[3]["ts"] + vec[3]["dur"]
    assert all(a["ts"] >= b["ts"] + b["dur"] - 1e-3 for a, b in zip(act[1:], act))


def test_merged_reshape_is_a_view():
    """A reshape of an HBM tensor that merges dimensions is a view (no
    DMA): the kernel moves its load and its store only (model 4 also costed
    nkid's copy of the whole tensor)."""
    f = 1024
    s = run(mc.merged_reshape, [(2, 64, f)], "float32")
    assert s["dma_bytes"] == 2 * P * f * 4
    assert [o["op"] for o in s["ops"] if o["engine"] == "dma"].count("dma_copy") == 0


def test_tile_declared_outside_loop_is_one_buffer(tmp_path):
    """A tile declared before an affine_range loop is one buffer: each
    iteration's load into it starts after the previous iteration's sum read
    it (model 4 renamed it: the loads did not wait)."""
    ev = slices(mc.reused_tile, [(4, P, 2048)], "float32", "trn1", tmp_path)
    red = sorted((e for e in ev if e["name"] == "tensor_reduce"), key=lambda e: e["ts"])
    loads = sorted({e["ts"] for e in ev if e["name"] == "load"})
    assert len(red) == 4 and len(loads) == 4
    for i in range(1, 4):
        assert loads[i] >= red[i - 1]["ts"] + red[i - 1]["dur"] - 1e-3, (loads, red)


@pytest.mark.parametrize("target,bw", [("trn2", 23.0), ("trn3", 33.0)])
@pytest.mark.parametrize("f", (64, 128))
@pytest.mark.parametrize("kernel,share", [("dma_transpose_hbm", 0.90),
                                          ("dma_transpose_sbuf", 0.50)])
def test_dma_transpose_hw(kernel, share, f, target, bw):
    """trn2 arch ("DMA Transpose"): the DMA engines transpose 2-byte
    elements as they move them, "up to 90% DMA throughput utilization"
    from HBM and "up to 50% of DMA throughput" SBUF to SBUF: the
    transpose's P x F x 2 bytes at that share of the engines' peak (dma
    intro / dma-bandwidth tables), beside the plain load and store at the
    peak (trn3 as trn2). Engine time of each op summed over its transfers."""
    s = run(getattr(mc, kernel), [(f, P)], "bfloat16", target)
    nbytes = P * f * 2
    ops = {o["op"]: o for o in s["ops"] if o["engine"] == "dma"}
    assert ops["dma_transpose"]["count"] == P // 8
    assert ops["dma_transpose"]["total_us"] * 1e3 == pytest.approx(nbytes / (bw * share),
                                                                   abs=1.0)
    assert ops["store"]["total_us"] * 1e3 == pytest.approx(nbytes / bw, abs=1.0)
    assert s["dma_bytes"] == (2 if kernel == "dma_transpose_hbm" else 3) * nbytes


@pytest.mark.parametrize("target,dtype", [("trn1", "float32"), ("trn1", "bfloat16"),
                                          ("trn2", "float32")])
def test_dma_transpose_element_wise(target, dtype):
    """trn1 (perf: DMA transposes have "much lower DMA bandwidth"; no
    figure), and 4-byte elements on trn2 (isa dma_transpose: the hardware
    transpose takes 2-byte elements): every element a buffer of its own, at
    least BUF_MIN bytes of engine time each (GUESSED, as the element-wise
    gather)."""
    f = 256
    s = run(mc.dma_transpose_hbm, [(f, P)], dtype, target)
    es = 4 if dtype == "float32" else 2
    rate = 17.0 * dma_eff(f * es) if target == "trn1" else 23.0
    load = 8 * f * BUF_MIN / rate
    store = 8 * f * es / rate
    assert s["dma_queues"]["dma0"]["busy_us"] * 1e3 == pytest.approx(load + store, abs=1.0)


@pytest.mark.parametrize("f", SIZES)
def test_reduce_negate_through_an_index_is_one_instruction(f):
    """isa tensor_reduce: negate is a field of the one instruction, and an
    instruction writes its dst wherever it is: t[:, j] =
    tensor_reduce(..., negate=True) is one VectorE instruction per column,
    max(MIN_II, N) cycles, and nothing on ScalarE (the tracer's negation
    and copy are free; until model 7 each cost a ScalarE instruction)."""
    s = run(mc.reduce_negate_into_column, [(P, f)], "float32")
    assert busy(s, "vector") == pytest.approx(4 * max(MIN_II, f) / GHZ["trn1"][1], abs=1.0)
    assert busy(s, "scalar") == 0


@pytest.mark.parametrize("target", ("trn1", "trn2"))
def test_copy_goes_where_it_ends_first(target):
    """isa tensor_copy: an engine left unnamed is the compiler's choice. An
    nl.copy beside an activation runs on VectorE while ScalarE runs the
    activation: ScalarE does the activation alone, VectorE the copy."""
    f = 2048
    s = run(mc.copy_beside_activation, [(P, 2 * f)], "float32", target)
    ghz, vec = GHZ[target], VEC[target][0]
    assert busy(s, "scalar") == pytest.approx(f / ghz[2], abs=1.0)
    assert busy(s, "vector") == pytest.approx(f / vec / ghz[1], abs=1.0)


def test_fills_share_vector_and_gpsimd():
    """isa memset: "using Vector or GpSimd Engine", the compiler's choice.
    Four fills of [P, F] float32, ready at once, on trn2 (no shared SBUF
    port): each goes where it ends first, VectorE (N / 2 cycles) for the
    first, GpSimd (150 + N) for the second, VectorE for the other two."""
    f = 2048
    s = run(mc.four_fills, [(P, f)], "float32", "trn2")
    ghz = GHZ["trn2"][1]
    assert busy(s, "vector") == pytest.approx(3 * f / VEC["trn2"][0] / ghz, abs=1.0)
    assert busy(s, "gpsimd") == pytest.approx((150 + f) / 1.2, abs=1.0)


@pytest.mark.parametrize("f", SIZES)
def test_tensor_scalar_two_ops_is_one_instruction(f):
    """isa tensor_scalar: op0 and op1 in one instruction, max(MIN_II, N)
    cycles (the tracer writes two ops; until model 7 each cost a pass):
    VectorE does the reduce that makes the column and one pass."""
    s = run(mc.ts_two_ops, [(P, f)], "float32")
    assert busy(s, "vector") == pytest.approx(2 * max(MIN_II, f) / GHZ["trn1"][1], abs=1.0)


@pytest.mark.parametrize("target", ("trn1", "trn2", "trn3"))
def test_programs_on_the_cores_the_grid_asks_for(target):
    """nl.nc(2) in the grid spreads its programs over two physical
    NeuronCores (nki.language nc: "Physical NC [0]: kernel[0, 0], kernel[0,
    1]"), which a logical core of trn2 and trn3 has and trn1's does not
    (nki_faq, lnc.rst): each core runs half, so the kernel's own time
    halves there; on trn1 it is the grid of 4 on one core."""
    import nkid.nki.language as nl
    import nkid.nki.typing as nt
    from nkid import tracer
    from nkid.nki._numpy_kernel import normalize_grid
    args = (nt.tensor[[4096, 1024], nl.float32],) * 2
    got = {}
    for grid in ((4,), (nl.spmd_dim(nl.nc(2), 2),)):
        g = normalize_grid(grid)
        t = tracer.trace(mc.add_by_program.func, args, {}, g, target=target)
        assert t.kernel.cores == (2 if grid != (4,) else 0)
        got[g.cores] = pt_model_nkir(t)
    one, two = got[1], got[2]
    assert one["cores"] == 1 and one["dma_bytes"] == two["dma_bytes"]
    if target == "trn1":
        assert two["cores"] == 1 and two["total_time_us"] == one["total_time_us"]
    else:
        assert two["cores"] == 2
        work1 = one["total_time_us"] - one["overhead_us"]
        work2 = two["total_time_us"] - two["overhead_us"]
        assert work2 == pytest.approx(work1 / 2, rel=0.05)


def test_nki06_launch_is_on_cores():
    """NKI 0.6's kernel[n] runs on n physical cores of a logical one
    (lnc.rst): its trace says so."""
    import numpy as np
    from nkid import nki06
    import nkid.nki06.language as nl6

    @nki06.jit
    def k(a):
        out = nl6.ndarray(a.shape, dtype=a.dtype, buffer=nl6.shared_hbm)
        t = nl6.load(a)
        nl6.store(out, t)
        return out
    a = np.zeros((128, 64), np.float32)
    assert k[2].trace06_to((a,), (2,), target="trn2").kernel.cores == 2
    assert k.trace06_to((a,), (), target="trn2").kernel.cores == 0


def pt_model_nkir(traced):
    """nkimodel -j of a traced kernel."""
    import json
    import os
    import subprocess
    from nkid import trace as ktrace
    path = os.path.join(_TMP[0], "cores-%d.nkir" % os.getpid())
    ktrace.save(traced, path)
    out = subprocess.run([NKIMODEL, "-j", path], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)
