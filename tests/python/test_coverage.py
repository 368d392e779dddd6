"""docs/coverage.md cannot lie: every name of NKI's API reference
(docs/coverage-names.txt, extracted by scripts/nki_api_names.py) is either
implemented in nkid.nki and used by the test coverage.md names, or marked
unsupported with a reason.  Below the check, tests of the names no other test
uses, against numpy."""

import math
import os
import re

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
NAMES = os.path.join(ROOT, "docs", "coverage-names.txt")
TABLE = os.path.join(ROOT, "docs", "coverage.md")
COMMIT = "8a38e733"

#: How tests spell each module (``nisa.dma_copy``, ``nl.exp``, ...).
ALIASES = {"nki.isa": ("nisa", "isa", "nki.isa"), "nki.language": ("nl", "language",
                                                                   "nki.language"),
           "nki.compiler": ("ncc", "compiler", "nki.compiler"), "nki": ("nki",)}


def listed_names():
    with open(NAMES) as f:
        lines = f.read().splitlines()
    assert COMMIT in lines[0], "docs/coverage-names.txt must name aws-neuron-sdk@" + COMMIT
    return [s.strip() for s in lines if s.strip() and not s.startswith("#")]


def table_rows():
    """(name, status, test, section) of every table row of coverage.md."""
    rows, section = [], ""
    with open(TABLE) as f:
        for line in f:
            if line.startswith("## "):
                section = line.strip()
            m = re.match(r"^\|\s*`([\w.]+)`\s*\|\s*([^|]*?)\s*\|\s*([^|]*?)\s*\|\s*$", line)
            if m:
                rows.append((m.group(1), m.group(2), m.group(3).strip("`"), section))
    return rows


def resolve(name):
    import nkid.nki as nki
    obj = nki
    for part in name.split(".")[1:]:
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


def uses(path, name):
    """True if the file at path spells name through one of its aliases."""
    parts = name.split(".")
    mod = ".".join(parts[:2]) if parts[1] in ("isa", "language", "compiler") else "nki"
    rest = name[len(mod) + 1:]
    with open(os.path.join(ROOT, path), errors="replace") as f:
        text = f.read()
    return any(re.search(r"(?<![\w.])%s\.%s\b" % (re.escape(a), re.escape(rest)), text)
               for a in ALIASES[mod])


def test_every_reference_name_is_accounted_for():
    names = listed_names()
    rows = table_rows()
    by_name = {}
    for name, status, test, section in rows:
        assert name not in by_name, "coverage.md lists `%s` twice" % name
        by_name[name] = (status, test, section)
    missing = [n for n in names if n not in by_name]
    assert not missing, "coverage.md does not list: %s" % ", ".join(missing)
    extra = [n for n in by_name if n not in names]
    assert not extra, "coverage.md lists names that are not in the reference: %s" % extra
    bad = []
    for name in names:
        status, test, section = by_name[name]
        if status == "implemented":
            if not resolve(name):
                bad.append("`%s` is marked implemented but nkid.nki has no such name" % name)
            elif not test or not os.path.exists(os.path.join(ROOT, test)):
                bad.append("`%s`: its test '%s' does not exist" % (name, test))
            elif not test.startswith("tests/") or not uses(test, name):
                bad.append("`%s`: its test '%s' does not use it" % (name, test))
        elif status.startswith("unsupported:"):
            if len(status.split(":", 1)[1].strip()) < 10:
                bad.append("`%s` is unsupported without a reason" % name)
        else:
            bad.append("`%s` has no status (implemented, unsupported: reason)"
                       % name)
    assert not bad, "\n".join(bad)


def test_names_list_is_what_the_script_extracts():
    """The checked-in list is the script's output (when the reference's
    repository is at hand)."""
    import subprocess
    import sys
    repo = os.environ.get("NKI_SDK_REPO", "")
    if not repo or not os.path.isdir(repo):
        pytest.skip("aws-neuron-sdk not at hand (set NKI_SDK_REPO)")
    out = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "nki_api_names.py"),
                          "--repo", repo], capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("aws-neuron-sdk@%s not readable: %s" % (COMMIT, out.stderr.strip()[-200:]))
    with open(NAMES) as f:
        assert out.stdout == f.read()


# ---------------------------------------------------------------- the names no other test uses

from nkid import nki                              # noqa: E402
import nkid.nki.language as nl                    # noqa: E402

_erf = np.vectorize(math.erf)

UNARY = [
    (nl.abs, np.abs), (nl.sign, np.sign), (nl.trunc, np.trunc), (nl.floor, np.floor),
    (nl.ceil, np.ceil), (nl.cos, np.cos), (nl.sin, np.sin), (nl.tanh, np.tanh),
    (nl.sigmoid, lambda x: 1 / (1 + np.exp(-x))), (nl.erf, _erf),
    (nl.gelu, lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2)))),
    (nl.gelu_apprx_tanh,
     lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
    (nl.silu, lambda x: x / (1 + np.exp(-x))), (nl.softplus, lambda x: np.log1p(np.exp(x))),
    (nl.logical_not, lambda x: (x == 0).astype(np.float32)),
    # bitwise not of the integer part (tests/python/test_isa_alu.py: integer dtypes)
    (nl.invert, lambda x: np.invert(np.trunc(x).astype(np.int32)).astype(np.float32)),
]
POSITIVE = [(nl.log, np.log), (nl.sqrt, np.sqrt), (nl.reciprocal, np.reciprocal)]
BINARY = [
    (nl.divide, np.divide), (nl.power, np.power), (nl.minimum, np.minimum),
    (nl.mod, np.mod), (nl.fmod, np.mod), (nl.equal, np.equal), (nl.not_equal, np.not_equal),
    (nl.greater, np.greater), (nl.greater_equal, np.greater_equal), (nl.less, np.less),
    (nl.less_equal, np.less_equal), (nl.logical_and, np.logical_and),
    (nl.logical_or, np.logical_or), (nl.logical_xor, np.logical_xor),
]
BITWISE = [(nl.bitwise_and, np.bitwise_and), (nl.bitwise_or, np.bitwise_or),
           (nl.bitwise_xor, np.bitwise_xor), (nl.left_shift, np.left_shift),
           (nl.right_shift, np.right_shift)]
REDUCE = [(nl.min, np.min), (nl.var, np.var), (nl.prod, np.prod),
          (nl.all, lambda x, axis: np.all(x != 0, axis=axis).astype(np.float32))]


def _apply1(f):
    @nki.jit
    def k(x):
        out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, f(nl.load(x), dtype=nl.float32))
        return out
    return k


def _apply2(f, dtype=nl.float32):
    @nki.jit
    def k(x, y):
        out = nl.ndarray(x.shape, dtype=dtype, buffer=nl.shared_hbm)
        nl.store(out, f(nl.load(x), nl.load(y), dtype=dtype))
        return out
    return k


def _names(table):
    by_id = {}
    for n in dir(nl):
        by_id.setdefault(id(getattr(nl, n)), n)
    return [by_id.get(id(f), "f%d" % i) for i, (f, _) in enumerate(table)]


@pytest.mark.parametrize("f,ref", UNARY + POSITIVE, ids=_names(UNARY + POSITIVE))
def test_language_unary(nkid_socket, f, ref):
    g = np.random.default_rng(1)
    x = g.uniform(-3, 3, (64, 40)).astype(np.float32)
    x[0, :4] = 0.0
    if (f, ref) in POSITIVE:
        x = np.abs(x) + 0.25
    np.testing.assert_allclose(_apply1(f)(x), ref(x), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("f,ref", BINARY, ids=_names(BINARY))
def test_language_binary(nkid_socket, f, ref):
    g = np.random.default_rng(2)
    x = g.uniform(0.5, 3, (64, 40)).astype(np.float32)
    y = g.uniform(0.5, 3, (64, 40)).astype(np.float32)
    y[:, :5] = x[:, :5]
    np.testing.assert_allclose(_apply2(f)(x, y), ref(x, y), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("f,ref", BITWISE, ids=_names(BITWISE))
def test_language_bitwise(nkid_socket, f, ref):
    g = np.random.default_rng(3)
    x = g.integers(0, 1 << 12, (16, 24)).astype(np.int32)
    y = g.integers(0, 8, (16, 24)).astype(np.int32)
    np.testing.assert_array_equal(_apply2(f, nl.int32)(x, y), ref(x, y))


@pytest.mark.parametrize("f,ref", REDUCE, ids=_names(REDUCE))
def test_language_reductions(nkid_socket, f, ref):
    @nki.jit
    def k(x):
        out = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, f(nl.load(x), axis=1, keepdims=True))
        return out

    x = np.random.default_rng(4).uniform(0.5, 1.5, (32, 12)).astype(np.float32)
    x[0, 3] = 0.0
    np.testing.assert_allclose(k(x)[:, 0], ref(x, axis=1), rtol=1e-5, atol=1e-6)


@nki.jit
def creations(x):
    """empty_like, zeros_like, ones, broadcast_to, expand_dims, a
    private_hbm scratch tensor, tfloat32 and float8_e4m3 casts."""
    out = nl.ndarray((x.shape[0], 5 * x.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    scratch = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.private_hbm)
    t = nl.load(x)
    e = nl.empty_like(t)
    e[...] = nl.multiply(t, 2.0)
    z = nl.zeros_like(t)
    o = nl.ones(x.shape, dtype=nl.float32)
    row = nl.broadcast_to(t[0:1, :], (x.shape[0], x.shape[1]))
    nl.store(scratch, nl.expand_dims(t[:, 0], 1).broadcast_to(x.shape))
    w = x.shape[1]
    nl.store(out[:, 0:w], e)
    nl.store(out[:, w:2 * w], nl.add(z, o))
    nl.store(out[:, 2 * w:3 * w], row)
    nl.store(out[:, 3 * w:4 * w], nl.load(scratch))
    nl.store(out[:, 4 * w:5 * w],
             nl.copy(nl.copy(t, dtype=nl.tfloat32), dtype=nl.float8_e4m3))
    return out


def test_language_creation_and_dtypes(nkid_socket):
    import ml_dtypes
    x = np.random.default_rng(5).uniform(-2, 2, (16, 8)).astype(np.float32)
    out = creations(x)
    w = 8
    np.testing.assert_array_equal(out[:, 0:w], 2 * x)
    np.testing.assert_array_equal(out[:, w:2 * w], np.ones_like(x))
    np.testing.assert_array_equal(out[:, 2 * w:3 * w], np.broadcast_to(x[0:1], x.shape))
    np.testing.assert_array_equal(out[:, 3 * w:4 * w], np.broadcast_to(x[:, :1], x.shape))
    bits = x.view(np.uint32)                       # tfloat32: 10 mantissa bits, nearest even
    tf32 = ((bits + 0xFFF + ((bits >> 13) & 1)) & ~np.uint32(0x1FFF)).view(np.float32)
    np.testing.assert_array_equal(out[:, 4 * w:], tf32.astype(ml_dtypes.float8_e4m3fn)
                                  .astype(np.float32))


@nki.jit
def tensor_methods(x):
    """nki.tensor's methods on a kernel's tensors."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    assert isinstance(x, nki.tensor)
    t = nl.load(x.view(x.dtype).assert_shape(x.shape))
    nl.store(out, t.expand_dims(2).reshape(x.shape))
    return out


def test_nki_tensor(nkid_socket):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(tensor_methods(x), x)
