"""The unary operators of NKI's ALU table (aws-neuron-sdk@8a38e733,
general/nki/api/nki.api.shared.rst, "Supported Math Operators for NKI ISA"):
invert, logical_not, rsqrt, reciprocal and abs, as op/op0/op1 of every
instruction that takes ALU operators, against numpy.

The reading tested (docs/nkir.md, "Unary ALU operators"): a unary operator
applies to its left-hand input -- the data side, or the operand when
reverse swaps them -- and ignores the other (the docs' own example is
``nisa.tensor_scalar(op0=nl.rsqrt, operand0=0.0)``); invert is the bitwise
not of the integer in the bits of the instruction's output dtype."""

import numpy as np
import pytest

import nkid
import nkid.nki.isa as nisa
import nkid.nki.language as nl

from isa_helpers import rng, tile_kernel, out_kernel, row_reduced, assert_refused

#: nkid's operator, numpy's reference, positive data (for rsqrt)
ARITH = [(nl.abs, np.abs, False), (nl.rsqrt, lambda x: 1.0 / np.sqrt(x), True),
         (nl.reciprocal, np.reciprocal, False),
         (nl.logical_not, lambda x: np.logical_not(x).astype(np.float32), False)]
IDS = ["abs", "rsqrt", "reciprocal", "logical_not"]


def data(seed, positive, shape=(64, 96)):
    g = rng(seed)
    x = g.standard_normal(shape).astype(np.float32)
    if positive:
        x = np.abs(x) + 0.25
    else:
        x[:, ::7] = 0.0            # logical_not's ones
    return x


def safe(x, ref):
    """x without the zeros reciprocal would turn into inf (compared apart)."""
    return np.where(x == 0.0, 1.0, x) if ref is np.reciprocal else x


# ---------------------------------------------------------------- tensor_scalar

@pytest.mark.parametrize("op,ref,pos", ARITH, ids=IDS)
def test_tensor_scalar_op0_unary(nkid_socket, op, ref, pos):
    x = safe(data(1, pos), ref)
    k = tile_kernel(lambda t: nisa.tensor_scalar(t, op, 7.0, dtype=nl.float32),
                    dtype=nl.float32)
    np.testing.assert_allclose(k(x), ref(x), rtol=1e-6)


@pytest.mark.parametrize("op,ref,pos", ARITH, ids=IDS)
def test_tensor_scalar_op1_unary(nkid_socket, op, ref, pos):
    """(x * 2) op1 operand1: op1 applies to op0's result."""
    x = safe(data(2, pos), ref)
    k = tile_kernel(lambda t: nisa.tensor_scalar(t, np.multiply, 2.0, op1=op, operand1=-3.0,
                                                 dtype=nl.float32), dtype=nl.float32)
    np.testing.assert_allclose(k(x), ref(x * 2.0), rtol=1e-6)


def test_tensor_scalar_rsqrt_gpsimd_form(nkid_socket):
    """The docs' form: nki.isa.tensor_scalar(op0=nl.rsqrt, operand0=0.0)."""
    x = data(3, True)
    k = tile_kernel(lambda t: nisa.tensor_scalar(t, op0=nl.rsqrt, operand0=0.0,
                                                 engine=nisa.gpsimd_engine))
    np.testing.assert_allclose(k(x), 1.0 / np.sqrt(x), rtol=1e-6)


def test_tensor_scalar_unary_reversed_takes_operand(nkid_socket):
    """reverse0 makes operand0 the left-hand input: abs applies to it."""
    x = data(4, False, (32, 16))
    k = tile_kernel(lambda t: nisa.tensor_scalar(t, nl.abs, -2.5, reverse0=True))
    np.testing.assert_array_equal(k(x), np.full(x.shape, 2.5, np.float32))


def test_tensor_scalar_tile_operand_unary(nkid_socket):
    """A [P, 1] operand0 is ignored by a unary op0; op1 uses its own."""
    x = data(5, False, (16, 24))
    s = rng(6).standard_normal((16, 1)).astype(np.float32)

    def fill(a, out, b):
        nl.store(out, nisa.tensor_scalar(nl.load(a), nl.abs, nl.load(b), op1=np.add,
                                         operand1=nl.load(b)))

    k = nkid.nki.jit(lambda a, b: _with_out(a, fill, b))
    np.testing.assert_allclose(k(x, s), np.abs(x) + s, rtol=1e-6)


def _with_out(a, fill, *more):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    fill(a, out, *more)
    return out


# ---------------------------------------------------------------- tensor_tensor

@pytest.mark.parametrize("op,ref,pos", ARITH, ids=IDS)
def test_tensor_tensor_unary(nkid_socket, op, ref, pos):
    """op(data1, data2) of a unary op is op(data1)."""
    x = safe(data(7, pos), ref)

    def fill(a, out):
        t = nl.load(a)
        nl.store(out, nisa.tensor_tensor(t, nl.multiply(t, 3.0), op, dtype=nl.float32))

    np.testing.assert_allclose(out_kernel(fill)(x), ref(x), rtol=1e-6)


# ---------------------------------------------------------------- scalar_tensor_tensor

@pytest.mark.parametrize("op,ref,pos", ARITH, ids=IDS)
def test_scalar_tensor_tensor_op0_unary(nkid_socket, op, ref, pos):
    """(op0 data) * data: operand0 ignored."""
    x = safe(data(8, pos), ref)
    k = tile_kernel(lambda t: nisa.scalar_tensor_tensor(data=t, op0=op, operand0=5.0,
                                                        op1=np.multiply, operand1=t))
    np.testing.assert_allclose(k(x), ref(x) * x, rtol=1e-6)


@pytest.mark.parametrize("op,ref,pos", ARITH, ids=IDS)
def test_scalar_tensor_tensor_op1_unary(nkid_socket, op, ref, pos):
    """op1 (data * 2): operand1 ignored."""
    x = safe(data(9, pos), ref)
    k = tile_kernel(lambda t: nisa.scalar_tensor_tensor(data=t, op0=np.multiply,
                                                        operand0=2.0, op1=op, operand1=t))
    np.testing.assert_allclose(k(x), ref(x * np.float32(2.0)), rtol=1e-6)


# ---------------------------------------------------------------- tensor_scalar_reduce

@pytest.mark.parametrize("op,ref,pos", ARITH, ids=IDS)
@pytest.mark.parametrize("rop,rref", [(np.add, np.sum), (np.maximum, np.max)],
                         ids=["add", "max"])
def test_tensor_scalar_reduce_unary(nkid_socket, op, ref, pos, rop, rref):
    """rmsnorm_quant's form: op0=nl.abs with a max reduction (absmax)."""
    x = safe(data(10, pos), ref)

    def fill(a):
        return row_reduced(a, lambda r: nisa.tensor_scalar_reduce(
            data=nl.load(a), op0=op, operand0=0.0, reduce_op=rop, reduce_res=r))

    y, m = nkid.nki.jit(fill)(x)
    np.testing.assert_allclose(y, ref(x), rtol=1e-6)
    np.testing.assert_allclose(m[:, 0], rref(ref(x), axis=1), rtol=1e-5)


def test_tensor_scalar_reduce_invert_refused(nkid_socket):
    """isa (tensor_scalar_reduce): op0 "can only be arithmetic"; invert is bitvec."""
    x = np.arange(32, dtype=np.int32).reshape(4, 8)

    def fill(a):
        return row_reduced(a, lambda r: nisa.tensor_scalar_reduce(
            data=nl.load(a), op0=nl.invert, operand0=0, reduce_op=np.add, reduce_res=r))

    assert_refused(nkid.nki.jit(fill), nkid.NkidError, "unsupported operator 'invert' for 'op0' of 'tensor_scalar_reduce'", x)


# ---------------------------------------------------------------- tensor_tensor_scan

def test_tensor_tensor_scan_unary_op1(nkid_socket):
    """s = |data0[i] + s|, data1 ignored by op1 = abs."""
    g = rng(11)
    a = g.standard_normal((32, 40)).astype(np.float32)
    b = g.standard_normal((32, 40)).astype(np.float32)
    ref = np.empty_like(a)
    s = np.full((32,), 0.5, np.float32)
    for i in range(a.shape[1]):
        s = np.abs(a[:, i] + s)
        ref[:, i] = s

    def fill(x, y):
        out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, nisa.tensor_tensor_scan(nl.load(x), nl.load(y), 0.5, np.add, nl.abs))
        return out

    np.testing.assert_allclose(nkid.nki.jit(fill)(a, b), ref, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- invert (bitvec)

INTS = [(nl.uint8, np.uint8), (nl.int8, np.int8), (nl.uint16, np.uint16),
        (nl.int16, np.int16), (nl.int32, np.int32)]


@pytest.mark.parametrize("dt,npdt", INTS, ids=[d.__name__ for _, d in INTS])
def test_invert_bit_patterns(nkid_socket, dt, npdt):
    """~x in the bits of the dtype, through nl.invert, the ~ operator,
    tensor_scalar and tensor_tensor."""
    info = np.iinfo(npdt)
    x = rng(12).integers(max(info.min, -2**20), min(info.max, 2**20), (8, 16),
                         dtype=np.int64).astype(npdt)
    # int32 tiles hold fp32 values (docs/nkir.md): exact within 2^24
    x[0, :4] = [0, 1, min(info.max, 2**24 - 1), max(info.min, -2**24)]
    cases = [(nl.invert, np.invert(x)), (lambda t: ~t, np.invert(x)),
             (lambda t: nisa.tensor_scalar(t, nl.invert, 0), np.invert(x)),
             (lambda t: nisa.tensor_scalar(t, np.bitwise_and, 0x7f, op1=np.invert,
                                           operand1=0), np.invert(x & npdt(0x7f))),
             (lambda t: nisa.tensor_scalar(t, nl.invert, 0, op1=np.bitwise_and,
                                           operand1=0x7f), np.invert(x) & npdt(0x7f)),
             (lambda t: nisa.tensor_tensor(t, t, nl.invert), np.invert(x))]
    for i, (compute, want) in enumerate(cases):
        got = tile_kernel(compute)(x)
        assert got.dtype == npdt
        np.testing.assert_array_equal(got, want, err_msg="case %d" % i)


def test_invert_uint32_below_2_24(nkid_socket):
    """uint32 tiles hold fp32 values (docs/nkir.md): ~x exactly where x and
    ~x fit; here x in the top 2^24 so ~x < 2^24."""
    x = (np.uint32(0xffffffff) - rng(13).integers(0, 2**24, (4, 8)).astype(np.uint32))
    x = x & np.uint32(0xffffff00)          # representable in fp32
    got = tile_kernel(nl.invert)(x)
    np.testing.assert_array_equal(got, np.invert(x))


def test_invert_bool(nkid_socket):
    """A bool result: invert is not (numpy.invert on bool)."""
    x = (rng(14).standard_normal((8, 8)) > 0)
    got = tile_kernel(nl.invert)(x)
    np.testing.assert_array_equal(got, np.invert(x))


def test_logical_not_and_invert_differ(nkid_socket):
    """nl.invert is the bitwise not, not logical_not (NKI: "Bitwise NOT")."""
    x = np.array([[0, 1, 2, 5]], np.int32)
    np.testing.assert_array_equal(tile_kernel(nl.invert)(x), [[-1, -2, -3, -6]])
    np.testing.assert_array_equal(tile_kernel(nl.logical_not)(x), [[1, 0, 0, 0]])


# ---------------------------------------------------------------- refusals

UNARY = {"abs": nl.abs, "invert": nl.invert, "logical_not": nl.logical_not,
         "rsqrt": nl.rsqrt, "reciprocal": nl.reciprocal}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_not_a_reduction(nkid_socket, name):
    """The ALU table: none of the five is a legal reduction op."""
    x = np.ones((4, 8), np.float32)
    k = tile_kernel(lambda t: nisa.tensor_reduce(UNARY[name], t, axis=1),
                    shape=lambda a: (4, 1))
    assert_refused(k, nkid.NkidError, "unsupported reduce operator '%s' in 'tensor_reduce'"
                   % name, x)


def test_unary_not_a_range_select_comparison(nkid_socket):
    x = np.ones((4, 8), np.float32)
    b = np.zeros((4, 1), np.float32)

    def fill(a, lo):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.load(lo)
        nl.store(out, nisa.range_select(on_true_tile=nl.load(a), comp_op0=nl.abs,
                                        comp_op1=np.less, bound0=t, bound1=t))
        return out

    assert_refused(nkid.nki.jit(fill, platform_target="trn2"), nkid.NkidError,
                   "unsupported operator 'abs' for 'comp_op0' of 'range_select'", x, b)
