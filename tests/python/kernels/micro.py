"""Microbenchmark kernels for the NeuronCore model (docs/model.md,
"Microbenchmarks"): each exercises one instruction or one DMA pattern
between a load and a store, so that tests/python/test_model_micro.py can
pin the cost NKI's documents imply for it, swept over sizes and dtypes.
Written for this project."""

from nkid import nki
import nkid.nki.isa as nisa
import nkid.nki.language as nl

P = 128


def _io(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    return out, nl.load(x)


@nki.jit
def act_exp(x):
    """ScalarE: one activation over [P, N]."""
    out, t = _io(x)
    nl.store(out, value=nisa.activation(op=nl.exp, data=t))
    return out


@nki.jit
def tt_add(x, y):
    """VectorE: one tensor_tensor add of two SBUF tiles."""
    out, a = _io(x)
    b = nl.load(y)
    nl.store(out, value=nisa.tensor_tensor(a, b, op=nl.add))
    return out


@nki.jit
def tt_mul(x, y):
    """VectorE: one tensor_tensor multiply of two SBUF tiles."""
    out, a = _io(x)
    b = nl.load(y)
    nl.store(out, value=nisa.tensor_tensor(a, b, op=nl.multiply))
    return out


@nki.jit
def ts_mul(x):
    """VectorE: one tensor_scalar multiply by a constant."""
    out, t = _io(x)
    nl.store(out, value=nisa.tensor_scalar(data=t, op0=nl.multiply, operand0=2.0))
    return out


@nki.jit
def reduce_add(x):
    """VectorE: one tensor_reduce add along the free axis."""
    out = nl.ndarray((x.shape[0], 1), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=nisa.tensor_reduce(op=nl.add, data=t, axis=(1,), keepdims=True))
    return out


@nki.jit
def matmul_one(a, b):
    """TensorE: one nc_matmul of a [K, M] stationary and a [K, N] moving tile."""
    K, M = a.shape
    _, N = b.shape
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    sa = nl.load(a)
    sb = nl.load(b)
    acc = nisa.nc_matmul(sa, sb)
    nl.store(out, value=nl.copy(acc, dtype=nl.float32))
    return out


@nki.jit
def copy_hbm(x):
    """DMA: one [P, F] load and one store, contiguous rows."""
    out, t = _io(x)
    nl.store(out, value=t)
    return out


@nki.jit
def rows_one_by_one(x):
    """DMA: the rows of a [P, F] tile loaded one partition at a time, then
    stored at once (writes disjoint only in their partitions)."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    for i in nl.affine_range(x.shape[0]):
        t[i:i + 1, :] = nl.load(x[i:i + 1, :])
    nl.store(out, value=t)
    return out


@nki.jit
def column_gather(x):
    """DMA: a [P, F] tile read from the transpose of a [F, P] tensor in HBM
    (every element its own contiguous run)."""
    F, Pn = x.shape
    out = nl.ndarray((Pn, F), dtype=x.dtype, buffer=nl.shared_hbm)
    i, j = nl.mgrid[0:Pn, 0:F]
    t = nl.load(x[j, i])
    nl.store(out, value=t)
    return out


@nki.jit
def vector_beside_gpsimd(x):
    """A VectorE and a GpSimd instruction on the same SBUF tile, independent
    of each other (tensor_tensor add; tensor_tensor power runs on GpSimd)."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    out2 = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=nisa.tensor_tensor(t, t, op=nl.add))
    nl.store(out2, value=nisa.tensor_tensor(t, t, op=nl.power))
    return out, out2


@nki.jit
def masked_rows(x, rows):
    """DMA: a [P, F] load and store masked to the first `rows` partitions."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    ip, jf = nl.mgrid[0:x.shape[0], 0:x.shape[1]]
    t = nl.load(x[ip, jf], mask=(ip < rows))
    nl.store(out[ip, jf], value=t, mask=(ip < rows))
    return out


@nki.jit
def live_tiles(x):
    """SBUF capacity: x [k, P, F] loaded as k tiles, all live, then summed in
    a chain (each sum a new tile): k + 1 tiles of F elements per partition
    are live at the first sum."""
    k = x.shape[0]
    out = nl.ndarray(x.shape[1:], dtype=x.dtype, buffer=nl.shared_hbm)
    t = [nl.load(x[i]) for i in range(k)]
    s = t[0]
    for i in range(1, k):
        s = nisa.tensor_tensor(s, t[i], op=nl.add)
    nl.store(out, value=s)
    return out


@nki.jit
def two_chains(x):
    """Scheduling: x [2, P, F], two independent iterations of an
    affine_range loop, each exp (ScalarE), 4 squares (VectorE), exp (ScalarE).
    In program order ScalarE would run the second iteration's first exp
    after the first iteration's second; its input is ready long before."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0]):
        t = nl.load(x[i])
        b = nisa.activation(op=nl.exp, data=t)
        for _ in range(4):
            b = nisa.tensor_tensor(b, b, op=nl.multiply)
        nl.store(out[i], value=nisa.activation(op=nl.exp, data=b))
    return out


@nki.jit
def merged_reshape(x):
    """x [2, 64, F] reshaped to [128, F] (a view in NKI; nkid's tracer
    copies it), then loaded and stored as one [128, F] tile."""
    out = nl.ndarray((x.shape[0] * x.shape[1], x.shape[2]), dtype=x.dtype,
                     buffer=nl.shared_hbm)
    v = x.reshape((x.shape[0] * x.shape[1], x.shape[2]))
    nl.store(out, value=nl.load(v))
    return out


@nki.jit
def reused_tile(x):
    """x [n, P, F]: one tile declared (zeroed) before an affine_range loop,
    loaded into and summed in every iteration (adaptive_avg_pool2d's
    window tile): one buffer, so each load waits for the previous sum. (An
    nl.ndarray whose first write covers it leaves no trace of where it was
    declared in NKIR: the model takes it as declared at that write.)"""
    n = x.shape[0]
    out = nl.ndarray((n, x.shape[1], 1), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.zeros((x.shape[1], x.shape[2]), dtype=x.dtype, buffer=nl.sbuf)
    for i in nl.affine_range(n):
        t[...] = nl.load(x[i])
        nl.store(out[i], value=nisa.tensor_reduce(op=nl.add, data=t, axis=(1,),
                                                   keepdims=True))
    return out


@nki.jit
def dma_transpose_hbm(x):
    """DMA: an HBM tensor [F, P] transposed into an SBUF tile [P, F] by
    nisa.dma_transpose, then stored."""
    F, Pn = x.shape
    out = nl.ndarray((Pn, F), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nisa.dma_transpose(x))
    return out


@nki.jit
def dma_transpose_sbuf(x):
    """DMA: a [F, P] tile loaded into SBUF, transposed SBUF to SBUF by
    nisa.dma_transpose into [P, F], then stored."""
    F, Pn = x.shape
    out = nl.ndarray((Pn, F), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nisa.dma_transpose(nl.load(x)))
    return out


@nki.jit
def reduce_negate_into_column(x):
    """One nisa.tensor_reduce(negate=True) per column of a [P, 4] tile,
    written through an integer index (t[:, j] = ...): the tracer writes a
    reduce, a negation and a copy; the hardware one VectorE instruction."""
    out = nl.ndarray((x.shape[0], 4), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    cols = nl.ndarray((x.shape[0], 4), dtype=x.dtype, buffer=nl.sbuf)
    for j in range(4):                      # unrolled: four instructions
        cols[:, j] = nisa.tensor_reduce(op=nl.maximum, data=t, axis=(1,), negate=True)
    nl.store(out, value=cols)
    return out


@nki.jit
def copy_beside_activation(x):
    """An activation of one half of a [P, 2F] tile and an nl.copy of the
    other, both ready at once: the copy names no engine, so the compiler
    may put it on VectorE while ScalarE runs the activation."""
    f = x.shape[1] // 2
    out = nl.ndarray((x.shape[0], f), dtype=x.dtype, buffer=nl.shared_hbm)
    out2 = nl.ndarray((x.shape[0], f), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=nisa.activation(op=nl.exp, data=t[:, 0:f]))
    nl.store(out2, value=nl.copy(t[:, f:2 * f]))
    return out, out2


@nki.jit
def four_fills(x):
    """Four nl.zeros tiles of x's shape, each stored: fills that name no
    engine, all ready at once."""
    out = nl.ndarray((4, x.shape[0], x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in range(4):                      # unrolled: four instructions
        nl.store(out[i], value=nl.zeros(x.shape, dtype=x.dtype, buffer=nl.sbuf))
    return out


@nki.jit
def ts_two_ops(x):
    """VectorE: one tensor_scalar with two operators (subtract a [P, 1]
    column, then multiply by a constant): one instruction."""
    out, t = _io(x)
    col = nisa.tensor_reduce(op=nl.maximum, data=t, axis=(1,), keepdims=True)
    nl.store(out, value=nisa.tensor_scalar(data=t, op0=nl.subtract, operand0=col,
                                           op1=nl.multiply, operand1=0.5))
    return out


@nki.jit
def add_by_program(a, b):
    """A [4 x 128 x k, F] sum, each program of a grid of 4 adding its
    quarter, 128 rows at a time."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    rows = a.shape[0] // 4
    i = nl.program_id(0)
    for t in nl.affine_range(rows // P):
        r = i * rows + t * P
        x = nl.load(a[r:r + P, :])
        y = nl.load(b[r:r + P, :])
        nl.store(out[r:r + P, :], value=nl.add(x, y))
    return out
