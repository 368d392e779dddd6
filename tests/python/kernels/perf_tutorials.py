"""Kernels for validating the NeuronCore model (docs/model.md) against the
latencies NKI's tutorials publish, written for this project from the
tutorials' descriptions of each optimization step (aws-neuron-sdk@8a38e733,
general/nki/tutorials/matrix_multiplication.rst and fused_mamba.rst).

Matrix multiplication, lhsT [K, M] @ rhs [K, N] -> [M, N]:
  mm_tiled          every (m, n, k) tile loaded, accumulated in PSUM
  mm_hoisted        a column of lhsT tiles per m, of rhs tiles per n
  mm_blocked_free   2 x 2 output tiles per block, loads shared in a block
  mm_optimized      blocks of 16 x 2 tiles, K blocked by 8 (sequential),
                    partial sums in SBUF, wide loads and stores

Mamba (delta, u [B, C, L]; A [C, S]; B_, C_ [B, S, L]):
  mamba_v1          loops batch, state, channel tile; everything loaded inside
  mamba_v2          loops batch, channel tile, state: delta/u loaded once per tile
  mamba_v3          v2 with seq_len tiled by 512 inside the state loop

nkid's tracer has no nisa.tensor_tensor_scan yet: the scan step is a
tensor_tensor of the same two [P, L] operands into a [P, L] tile. That is the
same engine (VectorE), the same operands and the same documented cost
(max(MIN_II, 2N) VectorE cycles) as the scan, so the model costs it the same;
its values are not a scan. These Mamba kernels are for the model only.
"""

from nkid import nki
import nkid.nki.isa as nisa
import nkid.nki.language as nl

from . import matmul

TK = 128    # contraction tile (partitions)
TM = 128    # stationary free size
TN = 512    # moving free size


# The tutorial's first two steps are the kernels of kernels/matmul.py: the
# same loads, matmuls and stores, so the same model figures.
mm_tiled = matmul.mm_tiled
mm_hoisted = matmul.mm_hoisted


@nki.jit
def mm_blocked_free(lhsT, rhs, bm=2, bn=2):
    K, M, N, out = matmul.mm_out(lhsT, rhs)
    io = nl.mgrid[0:TM, 0:TN]
    for mb in nl.affine_range(M // (TM * bm)):
        cols = matmul.load_block(lhsT, mb, bm, TM)
        for nb in nl.affine_range(N // (TN * bn)):
            rows = matmul.load_block(rhs, nb, bn, TN)
            for i in nl.affine_range(bm):
                for j in nl.affine_range(bn):
                    acc = matmul.block_product(cols, rows, i, j)
                    nl.store(out[(mb * bm + i) * TM + io.p, (nb * bn + j) * TN + io.x],
                             value=nl.copy(acc, dtype=out.dtype))
    return out


@nki.jit
def mm_optimized(lhsT, rhs, tm=16, tn=2, tk=8):
    K, M, N, out = matmul.mm_out(lhsT, rhs)
    BM, BN, BK = TM * tm, TN * tn, TK * tk
    nbm = M // BM
    ia, ib, io = matmul.tile_grids()
    irow = nl.mgrid[0:TK, 0:BN]
    icol = nl.mgrid[0:TK, 0:BM]
    iw = nl.mgrid[0:TM, 0:BN]
    for n in nl.affine_range(N // BN):
        part = nl.zeros((nbm, tm, tn, nl.par_dim(TM), TN), dtype=lhsT.dtype, buffer=nl.sbuf)
        for kb in nl.sequential_range(K // BK):
            rows = nl.ndarray((tk, nl.par_dim(TK), BN), dtype=rhs.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(tk):
                rows[k, irow.p, irow.x] = nl.load(rhs[(kb * tk + k) * TK + irow.p, n * BN + irow.x])
            for m in nl.affine_range(nbm):
                cols = nl.ndarray((tk, nl.par_dim(TK), BM), dtype=lhsT.dtype, buffer=nl.sbuf)
                for k in nl.affine_range(tk):
                    cols[k, icol.p, icol.x] = nl.load(
                        lhsT[(kb * tk + k) * TK + icol.p, m * BM + icol.x])
                for j in nl.affine_range(tn):
                    for i in nl.affine_range(tm):
                        acc = nl.zeros((TM, TN), nl.float32, buffer=nl.psum)
                        for k in nl.affine_range(tk):
                            acc[...] += nisa.nc_matmul(cols[k, ia.p, i * TM + ia.x],
                                                       rows[k, ib.p, j * TN + ib.x])
                        part[m, i, j, io.p, io.x] += acc[io.p, io.x]
        for m in nl.affine_range(nbm):
            for i in nl.affine_range(tm):
                wide = nl.ndarray((TM, BN), dtype=part.dtype, buffer=nl.sbuf)
                for j in nl.affine_range(tn):
                    wide[io.p, j * TN + io.x] = nl.copy(part[m, i, j, io.p, io.x])
                nl.store(out[(m * tm + i) * TM + iw.p, n * BN + iw.x], value=wide[iw.p, iw.x])
    return out


def _scan(delta_a, delta_bu):
    """The scan step's stand-in (see the module docstring)."""
    return nisa.tensor_tensor(delta_a, delta_bu, op=nl.multiply)


def _state_term(dA, d_i, u_i, B_row, C_row):
    """One state's term of the output for a [P, n] tile: the scan of
    exp(delta * A) and delta * u * B, times C (B_row, C_row: [1, n] in HBM)."""
    P, n = d_i.shape
    b_i = nl.load(B_row)
    dU = nisa.tensor_tensor(d_i, u_i, op=nl.multiply)
    dBu = nisa.tensor_tensor(dU, b_i.broadcast_to((P, n)), op=nl.multiply)
    h = _scan(dA, dBu)
    c_i = nl.load(C_row)
    return nisa.tensor_tensor(h, c_i.broadcast_to((P, n)), op=nl.multiply)


def _mamba_out(delta, A):
    """A Mamba layer's sizes and its output in HBM: nb, C, L, S, out."""
    nb, C, L = delta.shape
    _, S = A.shape
    return nb, C, L, S, nl.ndarray((nb, C, L), dtype=delta.dtype, buffer=nl.shared_hbm)


def _channel_tile(delta, u, b, c, P):
    """Channel tile c of batch b, as v2 and v3 hold it for all the states: a
    zeroed [P, L] accumulator and the delta and u tiles, loaded once."""
    L = delta.shape[2]
    acc = nl.zeros((nl.par_dim(P), L), dtype=delta.dtype)
    d_i = nl.load(delta[b, c * P:(c + 1) * P, 0:L])
    u_i = nl.load(u[b, c * P:(c + 1) * P, 0:L])
    return acc, d_i, u_i


@nki.jit
def mamba_v1(delta, u, A, B_, C_):
    nb, C, L, S, out = _mamba_out(delta, A)
    P = 128
    for b in nl.affine_range(nb):
        acc = nl.zeros((C // P, nl.par_dim(P), L), dtype=delta.dtype)
        for s in nl.affine_range(S):
            for c in nl.affine_range(C // P):
                d_i = nl.load(delta[b, c * P:(c + 1) * P, 0:L])
                a_i = nl.load(A[c * P:(c + 1) * P, s:s + 1])
                dA = nisa.activation(op=nl.exp, data=d_i, scale=a_i)
                u_i = nl.load(u[b, c * P:(c + 1) * P, 0:L])
                acc[c, 0:P, 0:L] += _state_term(dA, d_i, u_i, B_[b, s:s + 1, 0:L],
                                                C_[b, s:s + 1, 0:L])
        for c in nl.affine_range(C // P):
            nl.store(out[b, c * P:(c + 1) * P, 0:L], acc[c, 0:P, 0:L])
    return out


@nki.jit
def mamba_v2(delta, u, A, B_, C_):
    nb, C, L, S, out = _mamba_out(delta, A)
    P = 128
    for b in nl.affine_range(nb):
        for c in nl.affine_range(C // P):
            acc, d_i, u_i = _channel_tile(delta, u, b, c, P)
            for s in nl.affine_range(S):
                a_i = nl.load(A[c * P:(c + 1) * P, s:s + 1])
                dA = nisa.activation(op=nl.exp, data=d_i, scale=a_i)
                acc[0:P, 0:L] += _state_term(dA, d_i, u_i, B_[b, s:s + 1, 0:L],
                                             C_[b, s:s + 1, 0:L])
            nl.store(out[b, c * P:(c + 1) * P, 0:L], acc[0:P, 0:L])
    return out


@nki.jit
def mamba_v3(delta, u, A, B_, C_):
    nb, C, L, S, out = _mamba_out(delta, A)
    P, F = 128, 512
    for b in nl.affine_range(nb):
        for c in nl.affine_range(C // P):
            acc, d_i, u_i = _channel_tile(delta, u, b, c, P)
            for s in nl.affine_range(S):
                a_i = nl.load(A[c * P:(c + 1) * P, s:s + 1])
                for t in nl.static_range(L // F):
                    dA = nisa.activation(op=nl.exp, data=d_i[0:P, t * F:(t + 1) * F], scale=a_i)
                    acc[0:P, t * F:(t + 1) * F] += _state_term(
                        dA, d_i[0:P, t * F:(t + 1) * F], u_i[0:P, t * F:(t + 1) * F],
                        B_[b, s:s + 1, t * F:(t + 1) * F], C_[b, s:s + 1, t * F:(t + 1) * F])
            nl.store(out[b, c * P:(c + 1) * P, 0:L], acc[0:P, 0:L])
    return out


# ---------------------------------------------------------------- validation

#: Latencies NKI publishes (ms, trn1), aws-neuron-sdk@8a38e733:
#: tutorials/matrix_multiplication.rst ([4096,8192] @ [8192,8192] bf16) and
#: tutorials/fused_mamba.rst (batch 1, channels 4096, state 16, fp32; the
#: seq_len table; v1 also at channels 256).
MATMUL_PUBLISHED = [("mm_tiled", 51.80), ("mm_hoisted", 42.96),
                    ("mm_blocked_free", 22.07), ("mm_optimized", 6.97)]
MAMBA_V3_PUBLISHED = {512: 1.6, 1024: 3.3, 2048: 6.6, 3072: 10.1, 4096: 13.3,
                      5120: 17.3, 6144: 19.6, 7168: 24.2, 8192: 27.8}
MAMBA_V2_PUBLISHED = {512: 1.61, 1024: 4.4, 2048: 8.9, 3072: 13.1, 4096: 17.6,
                      5120: 23.7, 6144: 27.5, 7168: 41.3, 8192: 52.2}
MAMBA_V1_PUBLISHED = {256: 0.17293, 4096: 2.34}     # channels, seq_len 512


def matmul_args():
    import nkid.nki.typing as nt
    return (nt.tensor[[8192, 4096], nl.bfloat16], nt.tensor[[8192, 8192], nl.bfloat16])


def mamba_args(channels, seq_len, state=16, batch=1):
    import nkid.nki.typing as nt
    f = nl.float32
    return (nt.tensor[[batch, channels, seq_len], f], nt.tensor[[batch, channels, seq_len], f],
            nt.tensor[[channels, state], f], nt.tensor[[batch, state, seq_len], f],
            nt.tensor[[batch, state, seq_len], f])


def model(kernel, args, nkimodel, tmpdir, target="trn1", unfitted=False):
    """Trace kernel with placeholder args, then plan and cost it with
    nkimodel (build/bin/nkimodel) without executing: its JSON summary.
    unfitted: without the model's one calibrated constant (nkimodel -U)."""
    import json
    import os
    import subprocess
    from nkid import tracer, trace as ktrace
    fn = getattr(kernel, "func", kernel)
    traced = tracer.trace(fn, args, {}, (), target=target)
    path = os.path.join(tmpdir, "%s-%d.nkir" % (fn.__name__, os.getpid()))
    ktrace.save(traced, path)
    out = subprocess.run([nkimodel, "-j"] + (["-U"] if unfitted else []) + [path],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError("nkimodel failed: %s" % out.stderr.strip())
    return json.loads(out.stdout)


# ------------------------------------------------------------ public figures

#: LayerNorm tutorial (aws-neuron-sdk@8a38e733 general/nki/tutorials/
#: layernorm.rst), NCLatency p50 on trn1: 2311 us (v1), 1969 us (v2). Its text
#: says "(300, 1000)"; the script that writes the profiles it shows
#: (examples/layernorm/layernorm_nki_kernel.py, --mode perf) runs its defaults,
#: 4096 rows x 8192 columns float32, the shape costed here (docs/model.md,
#: "Layernorm: what 2311/1969 us include").
LAYERNORM_PUBLISHED = {"layernorm_v1": 2.311, "layernorm_v2": 1.969}
LAYERNORM_SHAPE = (4096, 8192)
#: nki-samples' adaptive_avg_pool2d unit test (aws-neuron/nki-samples@0898a77,
#: test/unit/test_adaptive_avg_pool2d.py): each shape's latency measured on
#: the hardware, a p99 (the test's threshold is it x 1.05), in ms; the
#: kernel is perf_pool.adaptive_avg_pool2d, which models as nki-samples' does
POOL_PUBLISHED = [((1, 64, 56, 56), 7, "float32", 0.065),
                  ((2, 128, 28, 28), 7, "float32", 0.109),
                  ((1, 256, 14, 14), 7, "float16", 0.088),
                  ((4, 64, 56, 56), (7, 7), "float32", 0.152),
                  ((2, 128, 28, 28), (14, 14), "float32", 0.327),
                  ((1, 512, 7, 7), 1, "float32", 0.014),
                  ((8, 64, 32, 32), (4, 4), "float16", 0.103),
                  ((2, 2048, 32, 32), (3, 3), "float32", 0.564),
                  ((2, 64, 256, 256), 1, "float32", 0.255)]


def pool_case(shape, out, dtype):
    """A pooling case's name: pool_NxCxHxW_out_dtype."""
    o = out if isinstance(out, int) else "x".join(map(str, out))
    return "pool_%s_%s_%s" % ("x".join(map(str, shape)), o, dtype)


def public_cases():
    """Every published latency the model is checked against, as
    (family, case, kernel, args, published ms, target): what `make bench`
    reports (model_public_*) and docs/model.md tabulates. The model's one
    calibrated constant comes from the matmul family (mm_hoisted); the others
    fit nothing."""
    from . import perf_layernorm as ln
    cases = [("matmul", name, globals()[name], matmul_args(), pub)
             for name, pub in MATMUL_PUBLISHED]
    cases += [("mamba", "mamba_v3_%d" % l, mamba_v3, mamba_args(4096, l), pub)
              for l, pub in sorted(MAMBA_V3_PUBLISHED.items())]
    cases += [("mamba", "mamba_v2_%d" % l, mamba_v2, mamba_args(4096, l), pub)
              for l, pub in sorted(MAMBA_V2_PUBLISHED.items())]
    cases += [("mamba", "mamba_v1_c%d" % c, mamba_v1, mamba_args(c, 512), pub)
              for c, pub in sorted(MAMBA_V1_PUBLISHED.items())]
    cases += [("layernorm", name, getattr(ln, name), ln.args(*LAYERNORM_SHAPE), pub)
              for name, pub in sorted(LAYERNORM_PUBLISHED.items())]
    from . import perf_pool as pp
    cases += [("pooling", pool_case(shape, out, dt), pp.adaptive_avg_pool2d,
               pp.args(shape, out, dt), pub) for shape, out, dt, pub in POOL_PUBLISHED]
    cases = [c + ("trn1",) for c in cases]
    cases += [("matmul_trn2", name + "_trn2", globals()[name], trn2_tiled_args(), pub, "trn2")
              for name, pub in TRN2_MATMUL_PUBLISHED]
    return cases


#: the family the model's calibrated constant was fitted on
FITTED_FAMILY = "matmul"


def ratio(model_ms, published_ms):
    """max(modeled / published, published / modeled): 1 is exact."""
    return max(model_ms / published_ms, published_ms / model_ms)


def public_report(nkimodel, tmpdir):
    """Model every public case: rows (family, case, published ms, modeled
    ms, ratio, held-out modeled ms, held-out ratio). The held-out figure is
    the model with nothing fitted to the case's family: for the matmul
    family the model without its calibrated constant (nkimodel -U), for
    the others the model itself."""
    rows = []
    for fam, name, kern, args, pub, target in public_cases():
        ms = model(kern, args, nkimodel, tmpdir, target=target)["total_time_us"] / 1e3
        lo = model(kern, args, nkimodel, tmpdir, unfitted=True)["total_time_us"] / 1e3 \
            if fam == FITTED_FAMILY else ms
        rows.append((fam, name, pub, ms, ratio(ms, pub), lo, ratio(lo, pub)))
    return rows


#: aws-neuron-sdk@81ce03ae nki/guides/tutorials/kernel-optimization.rst (trn2):
#: the tiled kernel's profile, lhsT [8192, 4096] and rhs [8192, 8192] float32:
#: percent of the time each was active (no latency is published).
TRN2_TILED_ACTIVE = {"tensor": 87.28, "dma": 99.93}
#: its second kernel, the loads hoisted out of the k loop (mm_hoisted)
TRN2_HOISTED_ACTIVE = {"tensor": 99.85, "dma": 99.73}
#: the same tutorial's profiles (figures v2-full .. v5-full): each kernel's
#: whole run on trn2, in ms, with those inputs. Its four kernels are this
#: project's mm_tiled, mm_hoisted, mm_blocked_free (2 x 2 blocks) and
#: mm_optimized (16, 2, 8 tiles a block), written from the 2.24 tutorial.
TRN2_MATMUL_PUBLISHED = [("mm_tiled", 39.89), ("mm_hoisted", 28.20),
                         ("mm_blocked_free", 28.41), ("mm_optimized", 28.30)]


def trn2_tiled_args():
    import nkid.nki.typing as nt
    return (nt.tensor[[8192, 4096], nl.float32], nt.tensor[[8192, 8192], nl.float32])
