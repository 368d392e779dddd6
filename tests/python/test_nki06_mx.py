"""NKI 0.6's MX (OCP microscaling) support and random state, our own
kernels through a real nkid: the MX dtypes through DMA and back to numpy,
nisa.quantize_mx (bit for bit against a numpy reference of the API page's
scale rule), nisa.nc_matmul_mx (fp8 and fp4, tile_position, accumulate),
nisa.rand_get_state / rand_set_state round trips, and every documented
limit's error, with its file:line."""

import ml_dtypes as mld
import numpy as np
import pytest

from nkid import nki06 as nki
import nkid.nki06.language as nl
import nkid.nki06.isa as nisa

pytestmark = pytest.mark.usefixtures("nkid_socket")

RNG = np.random.default_rng(121)
HERE = r"test_nki06_mx\.py:\d+"

#: E_max of each element type (quantize_mx's API page) and its numpy type.
EMAX = {"e4m3": 8, "e5m2": 15}
NP = {"e4m3": mld.float8_e4m3fn, "e5m2": mld.float8_e5m2}
X4 = {"e4m3": nl.float8_e4m3fn_x4, "e5m2": nl.float8_e5m2_x4}


# ---------------------------------------------------------------- numpy references

def ref_quantize(x, kind):
    """(data as uint32 [P, F/4], scales uint8 [P/8, F/4]): per group of 8
    partitions x 4 elements the scale 2^(floor(log2 amax) - (E_max - 1)),
    2^-127 for an all-zero group; data x / scale rounded to the fp8 type."""
    xf = x.astype(np.float32)
    P, F = xf.shape
    g = np.abs(xf).reshape(P // 8, 8, F // 4, 4).max(axis=(1, 3))
    with np.errstate(divide="ignore"):
        e = np.floor(np.log2(np.where(g > 0, g, 1.0))).astype(np.int64)
    sb = np.where(g > 0, e - (EMAX[kind] - 1) + 127, 0).clip(0, 254)
    scale = np.repeat(np.repeat(np.ldexp(1.0, sb - 127), 8, axis=0), 4, axis=1)
    q = (xf.astype(np.float64) / scale).astype(np.float32).astype(NP[kind])
    return q.view(np.uint32), sb.astype(np.uint8)


def scattered(scales, P):
    """Scales [P/8, F] at their partitions of a [P, F] tile: group i of data
    partitions 8i..8i+7 at (8i // 32) * 32 + (8i % 32) // 8."""
    rows = [(8 * i // 32) * 32 + (8 * i % 32) // 8 for i in range(P // 8)]
    return rows


def unpack(data, kind):
    """[K, n] packed elements (uint32 fp8 x4, uint16 fp4 x4) -> float32
    [K, n, 4]."""
    if kind == "fp4":
        b = data.astype(np.uint16)
        nib = np.stack([(b >> (4 * q)) & 0xF for q in range(4)], axis=-1).astype(np.uint8)
        return nib.view(mld.float4_e2m1fn).astype(np.float32)
    return data.view(NP[kind]).reshape(data.shape + (4,)).astype(np.float32)


def ref_matmul(st, mv, sst, smv, ks, km):
    """stationary [K, M], moving [K, N] packed; scales uint8 [K/8, M] and
    [K/8, N] (contiguous): sum over k and the 4 values of an element."""
    a = unpack(st, ks) * np.repeat(np.ldexp(1.0, sst.astype(np.int64) - 127), 8, axis=0)[..., None]
    b = unpack(mv, km) * np.repeat(np.ldexp(1.0, smv.astype(np.int64) - 127), 8, axis=0)[..., None]
    return np.einsum("kiq,kjq->ij", a.astype(np.float64), b.astype(np.float64))


def rand_fp8(shape, kind):
    """Random finite fp8 values, packed 4 to a uint32."""
    v = (RNG.standard_normal(shape + (4,)) * 4).astype(np.float32).astype(NP[kind])
    return v.view(np.uint32).reshape(shape)


def rand_fp4(shape):
    """Random fp4 values packed 4 to a uint16 (every code is finite)."""
    return RNG.integers(0, 1 << 16, size=shape, dtype=np.uint64).astype(np.uint16)


# ---------------------------------------------------------------- the dtypes through DMA

@nki.jit
def roundtrip(a8, a4, e8):
    """uint32 / uint8 HBM viewed as packed MX data, copied to SBUF and back
    into MX-typed HBM tensors; e8m0 in and out."""
    P, F = a8.shape
    v8 = a8.ap(dtype=nl.float8_e5m2_x4, pattern=[[F, P], [1, F]], offset=0)
    v4 = a4.ap(dtype=nl.float4_e2m1fn_x4, pattern=[[F, P], [1, F]], offset=0)
    t8 = nl.ndarray((P, F), dtype=nl.float8_e5m2_x4, buffer=nl.sbuf)
    t4 = nl.ndarray((P, F), dtype=nl.float4_e2m1fn_x4, buffer=nl.sbuf)
    te = nl.ndarray(e8.shape, dtype=nl.float8_e8m0fnu, buffer=nl.sbuf)
    nisa.dma_copy(dst=t8, src=v8)
    nisa.dma_copy(dst=t4, src=v4)
    nisa.dma_copy(dst=te, src=e8)
    o8 = nl.ndarray((P, F), dtype=nl.float8_e5m2_x4, buffer=nl.shared_hbm)
    o4 = nl.ndarray((P, F), dtype=nl.float4_e2m1fn_x4, buffer=nl.shared_hbm)
    oe = nl.ndarray(e8.shape, dtype=nl.float8_e8m0fnu, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=o8, src=t8)
    nisa.dma_copy(dst=o4, src=t4)
    nisa.dma_copy(dst=oe, src=te)
    return o8, o4, oe


def test_mx_dtypes_through_dma():
    # every bit pattern survives: NaN payloads, subnormal float32 patterns
    a8 = RNG.integers(0, 1 << 32, size=(32, 16), dtype=np.uint64).astype(np.uint32)
    a8[0, :4] = [0x7FC00001, 0xFF800000, 0x00000001, 0x80000000]
    a4 = RNG.integers(0, 256, size=(32, 32), dtype=np.uint8)
    e8 = np.arange(32 * 8, dtype=np.uint32).astype(np.uint8).reshape(32, 8).view(mld.float8_e8m0fnu)
    o8, o4, oe = roundtrip(a8, a4, e8)
    assert o8.dtype == np.uint32 and o8.shape == (32, 16)
    np.testing.assert_array_equal(o8, a8)
    assert o4.dtype == np.uint16 and o4.shape == (32, 16)
    np.testing.assert_array_equal(o4.view(np.uint8), a4)
    assert oe.dtype == mld.float8_e8m0fnu
    np.testing.assert_array_equal(oe.view(np.uint8), e8.view(np.uint8))


def test_e8m0_values():
    @nki.jit
    def k(x):
        t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        e = nl.ndarray(x.shape, dtype=nl.float8_e8m0fnu, buffer=nl.sbuf)
        nisa.tensor_copy(dst=e, src=t)
        o = nl.ndarray(x.shape, dtype=nl.float8_e8m0fnu, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=e)
        return o
    x = np.array([[1.0, 1.4, 1.5, 3.0, 0.75, 2.0 ** -127, 2.0 ** -130, 2.0 ** 127,
                   0.0, -1.0, np.inf, np.nan, 6.0, 1e-3, 1e30, 2.5]], np.float32)
    got = k(x)
    np.testing.assert_array_equal(got.view(np.uint8), x.astype(mld.float8_e8m0fnu).view(np.uint8))


# ---------------------------------------------------------------- quantize_mx

@nki.jit
def quantize(x, kind_x4, scale_dtype):
    P, F = x.shape
    t = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    d = nl.ndarray((P, F // 4), dtype=kind_x4, buffer=nl.sbuf)
    s = nl.ndarray((P, F // 4), dtype=scale_dtype, buffer=nl.sbuf)
    nisa.memset(dst=s, value=1)
    nisa.quantize_mx(dst=d, src=t, dst_scale=s)
    od = nl.ndarray((P, F // 4), dtype=kind_x4, buffer=nl.shared_hbm)
    os_ = nl.ndarray((P, F // 4), dtype=scale_dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=od, src=d)
    nisa.dma_copy(dst=os_, src=s)
    return od, os_


@pytest.mark.parametrize("kind", ["e4m3", "e5m2"])
@pytest.mark.parametrize("src_dt", [mld.bfloat16, np.float16])
def test_quantize_mx_bit_exact(kind, src_dt):
    P, F = 128, 64
    x = (RNG.standard_normal((P, F)) * np.exp(RNG.uniform(-6, 6, (P, 1)))).astype(src_dt)
    x[8:16, 4:8] = 0                        # an all-zero group: 2^-127
    x[16:24, 8:12] = 3e-5                   # tiny values: subnormal fp8 results
    od, os_ = quantize(x, X4[kind], nl.uint8)
    want_d, want_s = ref_quantize(x, kind)
    np.testing.assert_array_equal(od, want_d)
    rows = scattered(want_s, P)
    np.testing.assert_array_equal(os_[rows], want_s)
    others = np.setdiff1d(np.arange(P), rows)
    assert (os_[others] == 1).all()         # the partitions between: untouched
    assert want_s[1, 1] == 0


def test_quantize_mx_e8m0_scales_and_small_tile():
    x = RNG.standard_normal((32, 16)).astype(mld.bfloat16)
    want_d, want_s = ref_quantize(x, "e4m3")
    # Run and Simulate (NKI_PRECISE_FP unset: fp32 tiles) alike
    for run in (quantize, nki.simulate(quantize)):
        od, os_ = run(x, nl.float8_e4m3fn_x4, nl.float8_e8m0fnu)
        np.testing.assert_array_equal(od, want_d)
        np.testing.assert_array_equal(os_.view(np.uint8)[:4], want_s)


# ---------------------------------------------------------------- nc_matmul_mx

def _evict(ps):
    """The matmul result in PSUM tile ps, through SBUF, as the kernel's HBM
    output (a sub-kernel of the kernels below)."""
    r = nl.ndarray(ps.shape, dtype=ps.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=r, src=ps)
    o = nl.ndarray(ps.shape, dtype=ps.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=o, src=r)
    return o


@nki.jit
def mx_matmul(st, sst, mv, smv, st_x4, mv_x4, tile=None, acc_twice=False):
    """Packed stationary [K, M] and moving [K, N] from HBM (uint views),
    contiguous scales [K/8, .] scattered to their quadrants by DMA."""
    K, M = st.shape[0], sst.shape[1]
    N = smv.shape[1]
    vs = st.ap(dtype=st_x4, pattern=[[M, K], [1, M]], offset=0)
    vm = mv.ap(dtype=mv_x4, pattern=[[N, K], [1, N]], offset=0)
    ts = nl.ndarray((K, M), dtype=st_x4, buffer=nl.sbuf)
    tm = nl.ndarray((K, N), dtype=mv_x4, buffer=nl.sbuf)
    nisa.dma_copy(dst=ts, src=vs)
    nisa.dma_copy(dst=tm, src=vm)
    ss = nl.ndarray((K, M), dtype=nl.uint8, buffer=nl.sbuf)
    sm = nl.ndarray((K, N), dtype=nl.uint8, buffer=nl.sbuf)
    for q in nl.static_range(K // 32):
        nisa.dma_copy(dst=ss[32 * q:32 * q + 4, :], src=sst[4 * q:4 * q + 4, :])
        nisa.dma_copy(dst=sm[32 * q:32 * q + 4, :], src=smv[4 * q:4 * q + 4, :])
    ps = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    if tile is None:
        nisa.nc_matmul_mx(ps, ts, tm, ss, sm)
    else:
        nisa.nc_matmul_mx(dst=ps, stationary=ts, moving=tm, stationary_scale=ss,
                          moving_scale=sm, tile_position=(tile, 0), tile_size=(K, 128))
    if acc_twice:
        nisa.nc_matmul_mx(ps, ts, tm, ss, sm, accumulate=True)
    return _evict(ps)


def _scales(K, n):
    return RNG.integers(118, 132, size=(K // 8, n), dtype=np.uint16).astype(np.uint8)


@pytest.mark.parametrize("ks,km", [("e5m2", "e5m2"), ("e4m3", "e5m2"), ("fp4", "fp4"),
                                   ("fp4", "e4m3")])
def test_nc_matmul_mx(ks, km):
    K, M, N = 128, 64, 256
    st = rand_fp4((K, M)) if ks == "fp4" else rand_fp8((K, M), ks)
    mv = rand_fp4((K, N)) if km == "fp4" else rand_fp8((K, N), km)
    sst, smv = _scales(K, M), _scales(K, N)
    x4 = {"fp4": nl.float4_e2m1fn_x4, **X4}
    # fp4 data travels as uint8 pairs, as the deep dive's pack_mx_data_into_x4
    # packs it
    host = [a.view(np.uint8) if a.dtype == np.uint16 else a for a in (st, mv)]
    got = mx_matmul(host[0], sst, host[1], smv, x4[ks], x4[km])
    want = ref_matmul(st, mv, sst, smv, ks, km)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6 * np.abs(want).max())


def test_nc_matmul_mx_tile_position_and_accumulate():
    K, M, N = 32, 128, 128
    st, mv = rand_fp8((K, M), "e4m3"), rand_fp8((K, N), "e4m3")
    sst, smv = _scales(K, M), _scales(K, N)
    want = ref_matmul(st, mv, sst, smv, "e4m3", "e4m3")
    for row in (0, 32, 96):
        got = mx_matmul(st, sst, mv, smv, nl.float8_e4m3fn_x4, nl.float8_e4m3fn_x4, tile=row)
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6 * np.abs(want).max())
    got = mx_matmul(st, sst, mv, smv, nl.float8_e4m3fn_x4, nl.float8_e4m3fn_x4,
                    acc_twice=True)
    np.testing.assert_allclose(got, 2 * want, rtol=2e-5, atol=1e-6 * np.abs(want).max())


@nki.jit
def mx_matmul_ktiles(st, sst, mv, smv, explicit=False):
    """K = 128 as two 64-partition nc_matmul_mx into one PSUM tile,
    accumulate=None (NKI's auto mode: the group starts at zero), or a
    memset zero and accumulate=True."""
    K, M = st.shape
    N = mv.shape[1]
    ts = nl.ndarray((K, M), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    tm = nl.ndarray((K, N), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    nisa.dma_copy(dst=ts, src=st.ap(dtype=nl.float8_e4m3fn_x4, pattern=[[M, K], [1, M]]))
    nisa.dma_copy(dst=tm, src=mv.ap(dtype=nl.float8_e4m3fn_x4, pattern=[[N, K], [1, N]]))
    ss = nl.ndarray((K, M), dtype=nl.uint8, buffer=nl.sbuf)
    sm = nl.ndarray((K, N), dtype=nl.uint8, buffer=nl.sbuf)
    for q in nl.static_range(K // 32):
        nisa.dma_copy(dst=ss[32 * q:32 * q + 4, :], src=sst[4 * q:4 * q + 4, :])
        nisa.dma_copy(dst=sm[32 * q:32 * q + 4, :], src=smv[4 * q:4 * q + 4, :])
    ps = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    if explicit:
        nisa.memset(dst=ps, value=0.0)
    for kt in nl.affine_range(2):
        nisa.nc_matmul_mx(ps, ts[64 * kt:64 * kt + 64, :], tm[64 * kt:64 * kt + 64, :],
                          ss[64 * kt:64 * kt + 64, :], sm[64 * kt:64 * kt + 64, :],
                          accumulate=True if explicit else None)
    return _evict(ps)


def test_nc_matmul_mx_accumulates_k_tiles():
    K, M, N = 128, 32, 64
    st, mv = rand_fp8((K, M), "e4m3"), rand_fp8((K, N), "e4m3")
    sst, smv = _scales(K, M), _scales(K, N)
    want = ref_matmul(st, mv, sst, smv, "e4m3", "e4m3")
    for explicit in (False, True):
        got = mx_matmul_ktiles(st, sst, mv, smv, explicit)
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6 * np.abs(want).max())


@nki.jit
def _q_mm(st, sst, x):
    """nc_matmul_mx of st's float8_e5m2_x4 bits (scales sst) by x [K, 4N]
    quantized on chip by quantize_mx (moving), bf16 through PSUM."""
    K, M = st.shape
    N = x.shape[1] // 4
    ts = nl.ndarray((K, M), dtype=nl.float8_e5m2_x4, buffer=nl.sbuf)
    nisa.dma_copy(dst=ts, src=st.ap(dtype=nl.float8_e5m2_x4, pattern=[[M, K], [1, M]]))
    ss = nl.ndarray((K, M), dtype=nl.uint8, buffer=nl.sbuf)
    for q in nl.static_range(K // 32):
        nisa.dma_copy(dst=ss[32 * q:32 * q + 4, :], src=sst[4 * q:4 * q + 4, :])
    tx = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tx, src=x)
    tm = nl.ndarray((K, N), dtype=nl.float8_e5m2_x4, buffer=nl.sbuf)
    sm = nl.ndarray((K, N), dtype=nl.uint8, buffer=nl.sbuf)
    nisa.quantize_mx(dst=tm, src=tx, dst_scale=sm)
    ps = nl.ndarray((M, N), dtype=nl.bfloat16, buffer=nl.psum)
    nisa.nc_matmul_mx(dst=ps, stationary=ts, moving=tm, stationary_scale=ss, moving_scale=sm)
    return _evict(ps)


def test_quantize_then_matmul_mx_bf16_out():
    """quantize_mx's output feeds nc_matmul_mx directly (moving), as the
    deep dive's on-device quantization does; bf16 PSUM result."""
    K, M, N = 64, 32, 128
    st, sst = rand_fp8((K, M), "e5m2"), _scales(K, M)
    x = RNG.standard_normal((K, 4 * N)).astype(mld.bfloat16)
    qd, qs = ref_quantize(x, "e5m2")
    want = ref_matmul(st, qd, sst, qs, "e5m2", "e5m2")
    got = _q_mm(st, sst, x).astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2 * np.abs(want).max())


@nki.jit
def mx_matmul_indirect(st, sst, mv, smv, idx):
    """moving and its scales through NkiTensor.indirect: the packed columns
    are gathered as they are (Tensor Indirection with MX data)."""
    K, M = st.shape[0], sst.shape[1]
    N, n = smv.shape[1], idx.size
    ts = nl.ndarray((K, M), dtype=nl.float8_e5m2_x4, buffer=nl.sbuf)
    tm = nl.ndarray((K, N), dtype=nl.float8_e5m2_x4, buffer=nl.sbuf)
    nisa.dma_copy(dst=ts, src=st.ap(dtype=nl.float8_e5m2_x4, pattern=[[M, K], [1, M]]))
    nisa.dma_copy(dst=tm, src=mv.ap(dtype=nl.float8_e5m2_x4, pattern=[[N, K], [1, N]]))
    ss = nl.ndarray((K, M), dtype=nl.uint8, buffer=nl.sbuf)
    sm = nl.ndarray((K, N), dtype=nl.uint8, buffer=nl.sbuf)
    nisa.dma_copy(dst=ss[0:4, :], src=sst)
    nisa.dma_copy(dst=sm[0:4, :], src=smv)
    ix = nl.ndarray(idx.shape, dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=ix, src=idx)
    ps = nl.ndarray((M, n), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul_mx(ps, ts, tm.indirect(ix), ss, sm.indirect(ix), accumulate=False)
    return _evict(ps)


def test_nc_matmul_mx_indirect_moving():
    K, M, N = 32, 32, 128
    st, mv = rand_fp8((K, M), "e5m2"), rand_fp8((K, N), "e5m2")
    sst, smv = _scales(K, M), _scales(K, N)
    cols = RNG.permutation(N)[:64]
    idx = np.zeros((32, 2), np.int32)          # offset i at [i % 32, i // 32]
    for i, c in enumerate(cols):
        idx[i % 32, i // 32] = c
    got = mx_matmul_indirect(st, sst, mv, smv, idx)
    want = ref_matmul(st, np.ascontiguousarray(mv[:, cols]), sst,
                      np.ascontiguousarray(smv[:, cols]), "e5m2", "e5m2")
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6 * np.abs(want).max())


# ---------------------------------------------------------------- documented limits

def _q_kernel(P=32, F=16, src_dt=nl.bfloat16, dst_dt=nl.float8_e4m3fn_x4, dst_f=None,
              scale_dt=nl.uint8, scale_p=None, scale_f=None, src_buf=nl.sbuf):
    @nki.jit
    def k(a):
        t = nl.ndarray((P, F), dtype=src_dt, buffer=src_buf)
        nisa.memset(dst=t, value=1.0)
        d = nl.ndarray((P, F // 4 if dst_f is None else dst_f), dtype=dst_dt, buffer=nl.sbuf)
        s = nl.ndarray((P if scale_p is None else scale_p, F // 4 if scale_f is None else scale_f),
                       dtype=scale_dt, buffer=nl.sbuf)
        nisa.quantize_mx(dst=d, src=t, dst_scale=s)
        o = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=a)
        return o
    return k


@pytest.mark.parametrize("kw,msg", [
    ({"src_dt": nl.float32}, "The input src tile must be float16 or bfloat16, got float32"),
    ({"P": 48}, "The partition dimension size of src must be a multiple of 32 and must not"
                " exceed 128, got 48"),
    ({"F": 18, "dst_f": 4, "scale_f": 4}, "The free dimension size of src must be a multiple"
                                          " of 4, got 18"),
    ({"dst_f": 5}, "a free dimension size that is 1/4 of src free dimension size: expected"
                   r" \[32, 4\], got \[32, 5\]"),
    ({"dst_dt": nl.float4_e2m1fn_x4}, "The output dst tile must be float8_e5m2_x4 or"
                                      " float8_e4m3fn_x4"),
    ({"scale_dt": nl.float32}, "The dst_scale tile must be float8_e8m0fnu or uint8"),
    ({"P": 64, "scale_p": 8}, "dst_scale has 8 partitions: data of 64 partitions needs 36"),
    ({"scale_f": 3}, r"the free dimension size of dst_scale \(3\) must match its data's"),
    ({"src_buf": nl.psum, "src_dt": nl.float16},
     "Expected operand 'src' of 'quantize_mx' to be in address space 'sbuf'"),
])
def test_quantize_mx_limits(kw, msg):
    with pytest.raises(Exception, match=msg + ".*" + HERE):
        _q_kernel(**kw)(np.zeros((1, 1), np.float32))


def _mm_kernel(K=32, M=32, N=64, st_dt=nl.float8_e5m2_x4, mv_k=None, dst_dt=nl.float32,
               scale_dt=nl.uint8, scale_p=None, st_buf=nl.sbuf, **mmkw):
    @nki.jit
    def k(a):
        ts = nl.ndarray((K, M), dtype=st_dt, buffer=st_buf)
        tm = nl.ndarray((K if mv_k is None else mv_k, N), dtype=nl.float8_e5m2_x4,
                        buffer=nl.sbuf)
        ss = nl.ndarray((K if scale_p is None else scale_p, M), dtype=scale_dt, buffer=nl.sbuf)
        sm = nl.ndarray((K, N), dtype=nl.uint8, buffer=nl.sbuf)
        ps = nl.ndarray((M, N), dtype=dst_dt, buffer=nl.psum)
        nisa.nc_matmul_mx(ps, ts, tm, ss, sm, **mmkw)
        o = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=a)
        return o
    return k


@pytest.mark.parametrize("kw,msg", [
    ({"mv_k": 64}, "The partition dimension size of stationary and moving must be identical"
                   " and be a multiple of 32, not exceeding 128, got 32 and 64"),
    ({"K": 48}, "must be identical and be a multiple of 32, not exceeding 128, got 48"),
    ({"M": 31}, "The free dimension size of stationary must be even and not exceed 128,"
                " got 31"),
    ({"st_dt": nl.bfloat16}, "The input stationary and moving tiles must be float8_e5m2_x4,"
                             " float8_e4m3fn_x4, or float4_e2m1fn_x4, got bfloat16"),
    ({"dst_dt": nl.float16}, "The dst tile can be float32 or bfloat16, got float16"),
    ({"scale_dt": nl.int8}, "The stationary_scale tile must be float8_e8m0fnu or uint8"),
    ({"K": 64, "scale_p": 32}, "stationary_scale has 32 partitions: data of 64 partitions"
                               " needs 36"),
    ({"st_buf": nl.psum}, "Expected operand 'stationary' of 'nc_matmul_mx' to be in address"
                          " space 'sbuf'"),
    ({"tile_position": (0, 0)}, "tile_position and tile_size must both be set"),
    ({"tile_position": (0, 0), "tile_size": (32, 64)}, "the column_size of tile_size must be"
                                                       " 128, got 64"),
    ({"tile_position": (16, 0), "tile_size": (32, 128)}, "the start_row of tile_position must"
                                                         " be a multiple of row_size"),
    ({"tile_position": (0, 32), "tile_size": (32, 128)}, "the start_column of tile_position"
                                                         " must be 0"),
    ({"K": 64, "tile_position": (0, 0), "tile_size": (32, 128)},
     r"the stationary tile size \[64, 32\] must not exceed the chosen tile_size"),
])
def test_nc_matmul_mx_limits(kw, msg):
    with pytest.raises(Exception, match=msg + ".*" + HERE):
        _mm_kernel(**kw)(np.zeros((1, 1), np.float32))


def test_mx_needs_neuroncore_v4(monkeypatch):
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2")
    with pytest.raises(Exception, match="nc_matmul_mx"):
        _mm_kernel()(np.zeros((1, 1), np.float32))
    with pytest.raises(Exception, match="quantize_mx"):
        _q_kernel()(np.zeros((1, 1), np.float32))


def test_packed_tiles_are_not_computed_on():
    @nki.jit
    def k(a):
        t = nl.ndarray((32, 4), dtype=nl.float8_e5m2_x4, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a.ap(dtype=nl.float8_e5m2_x4, pattern=[[4, 32], [1, 4]]))
        f = nl.ndarray((32, 4), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=f, src=t)
        o = nl.ndarray((32, 4), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=f)
        return o
    with pytest.raises(Exception, match="cannot compute on packed MX data.*" + HERE):
        k(np.zeros((32, 4), np.uint32))


def test_hbm_dtype_view_is_read_only():
    @nki.jit
    def k(a):
        v = a.ap(dtype=nl.float8_e5m2_x4, pattern=[[4, 32], [1, 4]])
        t = nl.ndarray((32, 4), dtype=nl.float8_e5m2_x4, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=v)
        nisa.dma_copy(dst=v, src=t)
        o = nl.ndarray((32, 4), dtype=nl.float8_e5m2_x4, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=t)
        return o
    with pytest.raises(Exception, match="keeps read-only.*" + HERE):
        k(np.zeros((32, 4), np.uint32))


# ---------------------------------------------------------------- random state

@nki.jit
def rand_state_roundtrip(x, vector):
    """Draws a, saves the state, draws b, restores it, draws c: c == b."""
    P, F = x.shape
    eng = nisa.engine.vector if vector else nisa.engine.gpsimd
    W = 24 if vector else 6
    seeds = nl.ndarray((P, W), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.memset(dst=seeds, value=7)
    nisa.rand_set_state(seeds, engine=eng)
    out = nl.ndarray((3, P, F), dtype=nl.float32, buffer=nl.shared_hbm)
    st = nl.ndarray((P, W), dtype=nl.uint32, buffer=nl.sbuf)
    r = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.rand2(dst=r, min=0.0, max=1.0)
    nisa.dma_copy(dst=out[0], src=r)
    nisa.rand_get_state(st, engine=eng)
    for i in nl.sequential_range(2):
        r2 = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
        nisa.rand2(dst=r2, min=0.0, max=1.0)
        nisa.dma_copy(dst=out[1 + i], src=r2)
        nisa.rand_set_state(st, engine=eng)
    so = nl.ndarray((P, W), dtype=nl.uint32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=so, src=st)
    return out, so


@pytest.mark.parametrize("vector", [False, True])
def test_rand_state_roundtrip(vector):
    out, st = rand_state_roundtrip(np.zeros((64, 32), np.float32), vector)
    np.testing.assert_array_equal(out[2], out[1])
    assert not np.array_equal(out[0], out[1])
    # every lane the same 24-bit words; the draws advanced the stream from
    # the seeds' state (its words as rand_set_state took them)
    assert (st == st[0]).all() and st.max() < 2 ** 24 and (st[0] != 7).any()
    again, st2 = rand_state_roundtrip(np.zeros((64, 32), np.float32), vector)
    np.testing.assert_array_equal(again, out)
    np.testing.assert_array_equal(st2, st)


def test_rand_set_state_seeds_use_every_word():
    @nki.jit
    def k(x, lane):
        seeds = nl.ndarray((32, 6), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.memset(dst=seeds, value=1)
        nisa.memset(dst=seeds[lane:lane + 1, 5:6], value=2)
        nisa.rand_set_state(seeds)
        r = nl.ndarray((32, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.rand2(dst=r, min=0.0, max=1.0)
        o = nl.ndarray((32, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=r)
        return o
    x = np.zeros((1, 1), np.float32)
    a, b, c = k(x, 3), k(x, 17), k(x, 3)
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, b)


def _state_kernel(get=True, dt=nl.uint32, W=6, buf=nl.sbuf, eng=None):
    @nki.jit
    def k(a):
        t = nl.ndarray((32, W), dtype=dt, buffer=buf)
        kw = {} if eng is None else {"engine": eng}
        if get:
            nisa.rand_get_state(t, **kw)
        else:
            nisa.memset(dst=t, value=0)
            nisa.rand_set_state(t, **kw)
        o = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=a)
        return o
    return k


@pytest.mark.parametrize("kw,msg", [
    ({"dt": nl.int32}, "The output dst tile must be uint32, got int32"),
    ({"get": False, "dt": nl.float32}, "The input src_seeds tile must be uint32, got float32"),
    ({"W": 8}, "dst element count for XORWOW must be 6 elements .GpSimd. or 24 elements"
               " .Vector., got 8 for the GpSimd Engine"),
    ({"W": 6, "eng": nisa.engine.vector}, "got 6 for the Vector Engine"),
    ({"buf": nl.psum}, "Since GpSimd Engine cannot access PSUM, dst must be in SBUF"),
    ({"get": False, "buf": nl.psum}, "Expected operand 'src_seeds' of 'rand_set_state' to be"
                                     " in address space 'sbuf'"),
    ({"eng": nisa.engine.scalar}, "Supported engines: NeuronCore-v3: GpSimd. NeuronCore-v4\\+:"
                                  " GpSimd, Vector"),
])
def test_rand_state_limits(kw, msg):
    with pytest.raises(Exception, match=msg + ".*" + HERE):
        _state_kernel(**kw)(np.zeros((1, 1), np.float32))


def test_rand_state_psum_on_vector_and_targets(monkeypatch):
    k = _state_kernel(W=24, buf=nl.psum, eng=nisa.engine.vector)
    k(np.zeros((1, 1), np.float32))             # NeuronCore-v4: PSUM through the Vector Engine
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2")
    with pytest.raises(Exception, match="the Vector Engine needs NeuronCore-v4"):
        _state_kernel(W=24, eng=nisa.engine.vector)(np.zeros((1, 1), np.float32))
    _state_kernel()(np.zeros((1, 1), np.float32))
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn1")
    with pytest.raises(Exception, match="rand_get_state"):
        _state_kernel()(np.zeros((1, 1), np.float32))


# ---------------------------------------------------------------- the cost model

def test_mx_ops_costed_by_the_model(tmp_path):
    """nkimodel costs nc_matmul_mx on the Tensor Engine (an x4 element a
    cycle: the same cycles as a bf16 matmul of that many elements, 4x its
    flops), quantize_mx on the Vector Engine, its scales' op as part of
    it (docs/model.md)."""
    import json
    import os
    import subprocess
    from nkid import trace as ktrace
    nkimodel = os.path.join(os.path.dirname(os.path.dirname(HERE_DIR)), "build", "bin",
                            "nkimodel")
    if not os.path.exists(nkimodel):
        pytest.skip("build/bin/nkimodel not built (run make)")
    path, out = str(tmp_path / "k.nkir"), str(tmp_path / "k.json")
    st = np.zeros((128, 128), np.uint32)
    mv = np.zeros((128, 2048), mld.bfloat16)
    sst = np.zeros((16, 128), np.uint8)
    ktrace.trace_to_file(_q_mm, (st, sst, mv), path, target="trn3")
    p = subprocess.run([nkimodel, "-j", "-o", out, path], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    ev = json.load(open(out))["traceEvents"]
    tracks = {e["tid"]: e["args"]["name"] for e in ev if e["name"] == "thread_name"}
    sl = {e["name"]: (tracks[e["tid"]], e["dur"]) for e in ev if e["ph"] == "X"}
    assert sl["nc_matmul_mx"][0].lower().startswith("tensor")
    assert sl["quantize_mx"][0].lower().startswith("vector")
    # max(min(64, 128), 512) TensorE cycles at trn3's 2.4 GHz; 2048 / 4
    # VectorE cycles at 1.2 GHz
    assert sl["nc_matmul_mx"][1] == pytest.approx(512 / 2.4 / 1000, rel=0.01)
    assert sl["quantize_mx"][1] == pytest.approx(512 / 1.2 / 1000, rel=0.01)
    assert json.loads(p.stdout)["flops"] == pytest.approx(2 * 128 * 512 * 128 * 4)


HERE_DIR = __import__("os").path.dirname(__import__("os").path.abspath(__file__))
