"""docs/coverage.md's "NKI 0.6" section cannot lie: every name of NKI 0.6's
API reference (docs/coverage-names-06.txt, extracted by
scripts/nki_api_names.py --nki06) is implemented in nkid.nki06 and used by
the test the table names, or marked unsupported with a reason.  Below the
check, tests of the names no other 0.6 test uses, against numpy."""

import math
import os
import re

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
NAMES = os.path.join(ROOT, "docs", "coverage-names-06.txt")
TABLE = os.path.join(ROOT, "docs", "coverage.md")
COMMIT = "81ce03ae"

#: How tests spell each module of the nki package.
ALIASES = {"nki.isa": ("nisa",), "nki.language": ("nl",), "nki.collectives": ("ncc",),
           "nki": ("nki",)}


def listed_names():
    with open(NAMES) as f:
        lines = f.read().splitlines()
    assert COMMIT in lines[0], "docs/coverage-names-06.txt must name aws-neuron-sdk@" + COMMIT
    return [s.strip() for s in lines if s.strip() and not s.startswith("#")]


def table_rows():
    """(name, status, test) of every row of the NKI 0.6 tables: ``| 0.6 |
    `name` | status | test |``."""
    rows = []
    with open(TABLE) as f:
        for line in f:
            m = re.match(r"^\|\s*0\.6\s*\|\s*`([\w.]+)`\s*\|\s*([^|]*?)\s*\|\s*([^|]*?)\s*\|\s*$",
                         line)
            if m:
                rows.append((m.group(1), m.group(2), m.group(3).strip("`")))
    return rows


def resolve(name):
    import nkid.nki06 as nki
    obj = nki
    for part in name.split(".")[1:]:
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


def uses(path, name):
    parts = name.split(".")
    mod = ".".join(parts[:2]) if parts[1] in ("isa", "language", "collectives") else "nki"
    rest = name[len(mod) + 1:]
    with open(os.path.join(ROOT, path), errors="replace") as f:
        text = f.read()
    if "." in rest and rest[0].isupper():
        # a method of a class (NkiTensor.indirect): called on an instance
        return re.search(r"\.%s\(" % re.escape(rest.split(".", 1)[1]), text) is not None
    return any(re.search(r"(?<![\w.])%s\.%s\b" % (re.escape(a), re.escape(rest)), text)
               for a in ALIASES[mod])


def test_every_06_reference_name_is_accounted_for():
    names = listed_names()
    by_name = {}
    for name, status, test in table_rows():
        assert name not in by_name, "coverage.md's 0.6 table lists `%s` twice" % name
        by_name[name] = (status, test)
    missing = [n for n in names if n not in by_name]
    assert not missing, "coverage.md's 0.6 table does not list: %s" % ", ".join(missing)
    extra = [n for n in by_name if n not in names]
    assert not extra, "coverage.md's 0.6 table lists names not in the reference: %s" % extra
    bad = []
    for name in names:
        status, test = by_name[name]
        if status == "implemented":
            if not resolve(name):
                bad.append("`%s` is marked implemented but nkid.nki06 has no such name" % name)
            elif not test or not os.path.exists(os.path.join(ROOT, test)):
                bad.append("`%s`: its test '%s' does not exist" % (name, test))
            elif not test.startswith("tests/") or not uses(test, name):
                bad.append("`%s`: its test '%s' does not use it" % (name, test))
        elif status.startswith("unsupported:"):
            if len(status.split(":", 1)[1].strip()) < 10:
                bad.append("`%s` is unsupported without a reason" % name)
        else:
            bad.append("`%s` has no status (implemented, unsupported: reason)" % name)
    assert not bad, "\n".join(bad)


def test_06_names_list_is_what_the_script_extracts():
    import subprocess
    import sys
    repo = os.environ.get("NKI_SDK_REPO", "")
    if not repo or not os.path.isdir(repo):
        pytest.skip("aws-neuron-sdk not at hand (set NKI_SDK_REPO)")
    out = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "nki_api_names.py"),
                          "--nki06", "--repo", repo], capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("aws-neuron-sdk@%s not readable: %s" % (COMMIT, out.stderr.strip()[-200:]))
    with open(NAMES) as f:
        assert out.stdout == f.read()


# ---------------------------------------------------------------- the names no other test uses

from nkid import nki06 as nki                     # noqa: E402
import nkid.nki06.language as nl                  # noqa: E402
import nkid.nki06.isa as nisa                     # noqa: E402
import nkid.nki06.collectives as ncc              # noqa: E402

RNG = np.random.default_rng(60)
_erf = np.vectorize(math.erf)


def _sig(x):
    return 1 / (1 + np.exp(-x))


UNARY = [
    (nl.abs, np.abs), (nl.arctan, np.arctan), (nl.ceil, np.ceil), (nl.cos, np.cos),
    (nl.floor, np.floor), (nl.negative, np.negative), (nl.sign, np.sign), (nl.sin, np.sin),
    (nl.tan, np.tan), (nl.tanh, np.tanh), (nl.trunc, np.trunc), (nl.sigmoid, _sig),
    (nl.silu, lambda x: x * _sig(x)),
    (nl.silu_dx, lambda x: _sig(x) * (1 + x * (1 - _sig(x)))),
    (nl.gelu, lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2)))),
    (nl.gelu_dx, lambda x: 0.5 * (1 + _erf(x / np.sqrt(2)))
     + x * np.exp(-x * x / 2) / np.sqrt(2 * np.pi)),
    (nl.gelu_apprx_sigmoid, lambda x: x * _sig(1.702 * x)),
    (nl.mish, lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    (nl.softplus, lambda x: np.log1p(np.exp(x))), (nl.erf, _erf),
    (nl.erf_dx, lambda x: 2 / np.sqrt(np.pi) * np.exp(-x * x)),
]
POSITIVE = [(nl.log, np.log), (nl.sqrt, np.sqrt), (nl.reciprocal, np.reciprocal)]
COMPARE = [(nl.equal, np.equal), (nl.not_equal, np.not_equal), (nl.less, np.less),
           (nl.less_equal, np.less_equal), (nl.logical_and, np.logical_and),
           (nl.logical_or, np.logical_or), (nl.logical_xor, np.logical_xor)]
BITS = [(nl.bitwise_and, np.bitwise_and), (nl.bitwise_or, np.bitwise_or),
        (nl.bitwise_xor, np.bitwise_xor), (nl.left_shift, np.left_shift),
        (nl.right_shift, np.right_shift)]


def _unary_kernel(f):
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, nl.float32, buffer=nl.hbm)
        nl.store(out, f(nl.load(a), dtype=nl.float32))
        return out
    return k


@pytest.mark.parametrize("f,ref", UNARY + POSITIVE, ids=lambda v: getattr(v, "__name__", ""))
def test_unary(nkid_socket, f, ref):
    x = RNG.uniform(-2, 2, (16, 32)).astype(np.float32)
    if any(f is g for g, _ in POSITIVE):
        x = np.abs(x) + 0.1
    np.testing.assert_allclose(_unary_kernel(f)(x), ref(x.astype(np.float64)),
                               rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("f,ref", COMPARE, ids=lambda v: getattr(v, "__name__", ""))
def test_compare_and_logic(nkid_socket, f, ref):
    x = RNG.integers(0, 3, (8, 16)).astype(np.float32)
    y = RNG.integers(0, 3, (8, 16)).astype(np.float32)

    @nki.jit
    def k(a, b):
        out = nl.ndarray(a.shape, nl.float32, buffer=nl.shared_hbm)
        nl.store(out, f(nl.load(a), nl.load(b), dtype=nl.float32))
        return out
    np.testing.assert_array_equal(k(x, y), ref(x, y).astype(np.float32))


@pytest.mark.parametrize("f,ref", BITS, ids=lambda v: getattr(v, "__name__", ""))
def test_bitwise(nkid_socket, f, ref):
    x = RNG.integers(0, 1 << 12, (8, 16)).astype(np.int32)
    y = RNG.integers(0, 8, (8, 16)).astype(np.int32)

    @nki.jit
    def k(a, b):
        out = nl.ndarray(a.shape, nl.int32, buffer=nl.shared_hbm)
        nl.store(out, f(nl.load(a), nl.load(b)))
        return out
    np.testing.assert_array_equal(k(x, y), ref(x, y))


def test_logical_not_invert(nkid_socket):
    x = RNG.integers(-4, 4, (8, 16)).astype(np.int32)

    @nki.jit
    def k(a):
        out = nl.ndarray((2,) + a.shape, nl.int32, buffer=nl.shared_hbm)
        t = nl.load(a)
        nl.store(out[0], nl.invert(t))
        nl.store(out[1], nl.logical_not(t, dtype=nl.int32))
        return out
    out = k(x)
    np.testing.assert_array_equal(out[0], np.invert(x))
    np.testing.assert_array_equal(out[1], (x == 0).astype(np.int32))


def test_reductions_and_norms(nkid_socket):
    x = RNG.uniform(0.5, 1.5, (16, 24)).astype(np.float32)
    w = RNG.uniform(0.5, 1.5, (1, 24)).astype(np.float32)

    @nki.jit
    def k(a, b):
        out = nl.ndarray((5, a.shape[0], a.shape[1]), nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        r = nl.ndarray((a.shape[0], 4), nl.float32)
        nisa.tensor_copy(dst=r[:, 0:1], src=nl.min(t, axis=1, keepdims=True))
        nisa.tensor_copy(dst=r[:, 1:2], src=nl.prod(t, axis=1, keepdims=True))
        nisa.tensor_copy(dst=r[:, 2:3], src=nl.var(t, axis=1, keepdims=True))
        nisa.tensor_copy(dst=r[:, 3:4], src=nl.all(nl.greater(t, 0.0), axis=1))
        nl.store(out[0, :, 0:4], r)
        nl.store(out[1], nl.rms_norm(t, nl.load(b).broadcast_to(a.shape), axis=1,
                                     n=a.shape[1]))
        nl.store(out[2], nl.dropout(t, rate=0.0))
        nl.store(out[3], nl.broadcast_to(nl.load(b), a.shape))
        return out
    out = k(x, w)
    np.testing.assert_allclose(out[0, :, 0], x.min(1))
    np.testing.assert_allclose(out[0, :, 1], x.prod(1), rtol=1e-4)
    np.testing.assert_allclose(out[0, :, 2], x.var(1), rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(out[0, :, 3], np.ones(16))
    np.testing.assert_allclose(out[1], x / np.sqrt((x * x).mean(1, keepdims=True) + 1e-6) * w,
                               rtol=1e-4)
    np.testing.assert_array_equal(out[2], x)
    np.testing.assert_array_equal(out[3], np.broadcast_to(w, x.shape))


def test_creation_and_buffers(nkid_socket):
    c = RNG.standard_normal((4, 8)).astype(np.float32)

    @nki.jit
    def k(a):
        out = nl.ndarray((6, 4, 8), nl.float32, buffer=nl.shared_hbm)
        scratch = nl.ndarray((4, 8), nl.float32, buffer=nl.private_hbm)
        assert nl.is_hbm(nl.hbm) and nl.is_hbm(scratch.buffer) and not nl.is_hbm(nl.sbuf)
        assert nl.is_sbuf(nl.sbuf) and nl.is_psum(nl.psum) and nl.is_on_chip(nl.psum)
        assert isinstance(a, nl.NkiTensor)
        nl.store(out[0], nl.ones((4, 8), nl.float32))
        nl.store(out[1], nl.full((4, 8), 2.5, nl.float32))
        t = nl.load(a)
        nl.store(out[2], nl.zeros_like(t))
        e = nl.empty_like(t)
        nisa.tensor_copy(dst=e, src=t)
        nl.store(scratch, e)
        nl.store(out[3], nl.load(scratch))
        nl.store(out[4], nl.load(nl.shared_constant(c)))
        ident = nl.shared_identity_matrix(4, dtype=nl.float32)   # an SBUF tile
        nl.store(out[5, :, 0:4], ident)
        nl.store(out[5, :, 4:8], nl.copy(ident))
        nl.random_seed(3)
        r = nl.rand((4, 8), nl.float32)
        nl.device_print("r", r)
        return out
    out = k(c)
    np.testing.assert_array_equal(out[0], 1)
    np.testing.assert_array_equal(out[1], 2.5)
    np.testing.assert_array_equal(out[2], 0)
    np.testing.assert_array_equal(out[3], c)
    np.testing.assert_array_equal(out[4], c)
    np.testing.assert_array_equal(out[5], np.hstack([np.eye(4), np.eye(4)]))


def test_indexing_helpers_and_loops(nkid_socket):
    x = RNG.standard_normal((8, 32)).astype(np.float32)
    idx = RNG.integers(0, 32, (8, 5)).astype(np.uint32)

    @nki.jit
    def k(a, ix):
        out = nl.ndarray((4, 8, 32), nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        for i in nl.static_range(2):
            nl.store(out[0, :, nl.ds(i * 16, 16)], t[:, nl.ds(16 - i * 16, 16)])
        for j in nl.dynamic_range(1, 2):
            nl.store(out[1], nl.where(nl.greater(t, 0.0), t, nl.negative(t)))
        v = nl.expand_dims(t[:, 0], 1)
        nl.store(out[2], v.broadcast_to((8, 32)))
        g = nl.gather_flattened(t, nl.load(ix))
        nl.store(out[3, :, 0:5], g)
        return out
    out = k(x, idx)
    np.testing.assert_array_equal(out[0], np.hstack([x[:, 16:], x[:, :16]]))
    np.testing.assert_array_equal(out[1], np.abs(x))
    np.testing.assert_array_equal(out[2], np.repeat(x[:, 0:1], 32, 1))
    np.testing.assert_array_equal(out[3, :, 0:5], np.take_along_axis(x, idx.astype(int), 1))


@pytest.mark.parametrize("dt,host", [
    ("bool_", np.bool_), ("int8", np.int8), ("int16", np.int16), ("uint16", np.uint16),
    ("float16", np.float16), ("tfloat32", np.float32), ("float8_e4m3", None),
    ("float8_e5m2", None), ("float8_e4m3fn", None)])
def test_dtypes(nkid_socket, dt, host):
    import ml_dtypes
    d = getattr(nl, dt)
    x = RNG.integers(0, 2, (4, 8)).astype(np.float32)
    h = host or {"float8_e4m3": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2,
                 "float8_e4m3fn": ml_dtypes.float8_e4m3fn}[dt]

    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, d)
        nisa.tensor_copy(dst=t, src=nl.load(a))
        nl.store(out, nl.copy(t, dtype=nl.float32))
        return out
    np.testing.assert_array_equal(k(x), x.astype(h).astype(np.float32))
    assert nl.bool_ is not None and nl.int8 and nl.int16 and nl.uint16 and nl.float16
    assert nl.tfloat32 and nl.float8_e4m3 and nl.float8_e5m2 and nl.float8_e4m3fn


def test_isa_selects_and_gathers(nkid_socket, monkeypatch):
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2")   # range_select: v3+
    x = RNG.standard_normal((32, 16)).astype(np.float32)

    @nki.jit
    def k(a):
        P, F = a.shape
        out = nl.ndarray((5, P, F), nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        y = nl.ndarray((P, F), nl.float32)
        red = nl.ndarray((P, 1), nl.float32)
        nisa.activation_reduce(dst=y, op=nl.exp, data=t, reduce_op=nl.add, reduce_res=red)
        nl.store(out[0], red.broadcast_to((P, F)))
        pr = nl.ndarray((1, F), nl.float32)
        nisa.tensor_partition_reduce(dst=pr, op=nl.maximum, data=t)
        nl.store(out[1], pr.broadcast_to((P, F)))
        lo = nl.full((P, 1), 3.0, nl.float32)
        hi = nl.full((P, 1), 9.0, nl.float32)
        rm = nl.ndarray((P, 1), nl.float32)
        nisa.range_select(dst=y, on_true_tile=t, comp_op0=nl.greater_equal,
                          comp_op1=nl.less, bound0=lo, bound1=hi, reduce_res=rm)
        nl.store(out[2], y)
        pred = nl.ndarray((P, F), nl.uint8)
        nisa.tensor_scalar(dst=pred, data=t, op0=nl.greater, operand0=0.0)
        nisa.select_reduce(dst=y, predicate=pred, on_true=t, on_false=0.0)
        nl.store(out[3], y)
        sh = nl.ndarray((P, F), nl.float32)
        nisa.memset(dst=sh, value=0.0)
        nisa.nc_stream_shuffle(dst=sh, src=t, shuffle_mask=[31 - i for i in range(32)])
        nl.store(out[4], sh)
        nisa.tensor_scalar(dst=y, data=t, op0=nl.bypass, operand0=0.0)
        return out
    out = k(x)
    np.testing.assert_allclose(out[0][:, 0], np.exp(x).sum(1), rtol=1e-4)
    np.testing.assert_array_equal(out[1][0], x.max(0))
    i = np.arange(16)
    np.testing.assert_array_equal(out[2], np.where((i >= 3) & (i < 9), x,
                                                   np.float32(np.finfo(np.float32).min)))
    np.testing.assert_array_equal(out[3], np.where(x > 0, x, 0))
    np.testing.assert_array_equal(out[4], x[::-1])


def test_isa_sequence_bounds_local_gather_nonzero(nkid_socket):
    seg = np.array([[1, 1, 2, 2, 2, 0, 3, 3]], np.int32)
    src = np.zeros((32, 9), np.float32)
    src[0, [1, 2, 5]] = 1
    src[16, [0, 8]] = 4

    @nki.jit
    def k(s, z):
        out = nl.ndarray((1, 2, 8), nl.int32, buffer=nl.shared_hbm)
        nz = nl.ndarray((32, 10), nl.int32, buffer=nl.shared_hbm)
        b = nl.ndarray((1, 2, 8), nl.int32)
        nisa.sequence_bounds(dst=b, segment_ids=nl.load(s))
        nl.store(out, b)
        d = nl.ndarray((32, 10), nl.int32)
        nisa.memset(dst=d, value=7)
        nisa.nonzero_with_count(dst=d, src=nl.load(z), index_offset=16, padding_val=-1)
        nl.store(nz, d)
        tab = nl.load(z)
        ix = nl.ndarray((32, 1), nl.uint16)
        nisa.iota(ix, [[0, 1]], offset=2)
        g = nl.ndarray((32, 16), nl.float32)
        nisa.local_gather(dst=g, src_buffer=tab, index=ix)
        return out, nz
    bounds, nz = k(seg, src)
    np.testing.assert_array_equal(bounds[0, 0], [0, 0, 2, 2, 2, 8, 6, 6])
    np.testing.assert_array_equal(nz[0], [17, 18, 21, -1, -1, -1, -1, -1, -1, 3])
    np.testing.assert_array_equal(nz[16], [16, 24, -1, -1, -1, -1, -1, -1, -1, 2])
    np.testing.assert_array_equal(nz[1], 7)                # other partitions untouched


def test_isa_enums_and_target(nkid_socket):
    seen = {}

    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        seen["v"] = nisa.get_nc_version()
        r = nisa.register_alloc(2)
        seen["reg"] = isinstance(r, nisa.VirtualRegister)
        t = nl.ndarray(a.shape, a.dtype)
        nisa.dma_copy(dst=t, src=a, oob_mode=nisa.oob_mode.error)
        nisa.core_barrier(t, (0, 1))
        nisa.sendrecv(src=t, dst=t, send_to_rank=0, recv_from_rank=0, pipe_id=0,
                      dma_engine=nisa.dma_engine.gpsimd_dma)
        nisa.dma_copy(dst=out, src=t)
        return out
    x = np.ones((4, 8), np.float32)
    np.testing.assert_array_equal(k(x), x)
    assert seen == {"v": nisa.nc_version.gen4, "reg": True}      # trn3 by default
    assert nisa.matmul_perf_mode.double_row.value == "double_row"
    assert nisa.NkiInstruction().depends_on() is not None
    assert nl.tile_size.pmax == 128 and nl.tile_size.psum_bank_fmax == 512


def test_other_collectives_one_rank(nkid_socket):
    x = RNG.standard_normal((8, 16)).astype(np.float32)

    @nki.jit
    def k(a):
        outs = [nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm) for _ in range(7)]
        g = ncc.ReplicaGroup([[0]])
        ncc.all_gather_v([a], [outs[0]], g, metadata_tensor=None)
        ncc.reduce_scatter([a], [outs[1]], g, collective_dim=0, op=nl.add)
        ncc.all_to_all([a], [outs[2]], g, collective_dim=0)
        ncc.all_to_all_v([a], [outs[3]], g, metadata_tensor=None)
        ncc.collective_permute([a], [outs[4]], source_target_pairs=[(0, 0)])
        ncc.collective_permute_implicit([[a]], [[outs[5]]], g)
        ncc.collective_permute_implicit_reduce([[a]], [[a]], [[outs[6]]], g, op=nl.add)
        r = ncc.collective_permute_implicit_current_processing_rank_id(0, g)
        assert isinstance(r, nisa.VirtualRegister)
        return tuple(outs)
    outs = k(x)
    for o in outs[:6]:
        np.testing.assert_array_equal(o, x)
    np.testing.assert_allclose(outs[6], 2 * x)


@nki.jit
def vector_select_rows(a, rows):
    sb = nl.ndarray((64, a.shape[1]), a.dtype)
    r = nl.ndarray((64, 1), nl.int32)
    nisa.dma_copy(dst=r, src=rows)
    v = a.vector_select(0, r)
    assert v.is_indirect() and not a.is_indirect()
    nisa.dma_copy(dst=sb, src=v)
    out = nl.ndarray((64, a.shape[1]), a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=sb)
    return out


@nki.jit
def view_bits(a):
    t = nl.ndarray(a.shape, a.dtype)
    nisa.dma_copy(dst=t, src=a)
    v = t.view(nl.uint8)                # the bytes: exact in the executor's fp32
    u = nl.ndarray(v.shape, nl.uint8)
    nisa.tensor_copy(dst=u, src=v)
    out = nl.ndarray(v.shape, nl.uint8, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=u)
    return out


def test_tensor_vector_select_and_view(nkid_socket):
    a = RNG.standard_normal((128, 32)).astype(np.float32)
    rows = RNG.integers(0, 128, (64, 1)).astype(np.int32)
    np.testing.assert_array_equal(vector_select_rows(a, rows), a[rows[:, 0]])
    np.testing.assert_array_equal(view_bits(a[:8]), a[:8].view(np.uint8))
