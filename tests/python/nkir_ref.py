"""A slow, obvious NKIR interpreter in numpy: the tests' reference semantics.

It executes a nkir.v1.Kernel exactly as proto/nkir.proto describes it, so the
tracer's output can be checked for meaning (not just structure) without the
daemon.  It is no validator: hardware limits are the daemon's business.
:class:`RefClient` stands in for nkid's client (Run / Simulate).
"""

import warnings

import numpy as np
import ml_dtypes

from nkid._proto import nkir_pb2 as ir
from nkid._proto import nkid_pb2 as pb
from nkid.client import from_wire, to_wire

_NP = {
    ir.DT_FLOAT32: np.float32, ir.DT_FLOAT16: np.float16, ir.DT_BFLOAT16: ml_dtypes.bfloat16,
    ir.DT_INT8: np.int8, ir.DT_INT16: np.int16, ir.DT_INT32: np.int32, ir.DT_UINT8: np.uint8,
    ir.DT_UINT16: np.uint16, ir.DT_UINT32: np.uint32, ir.DT_FP8_E4M3: ml_dtypes.float8_e4m3fn,
    ir.DT_FP8_E5M2: ml_dtypes.float8_e5m2, ir.DT_TFLOAT32: np.float32, ir.DT_BOOL: np.bool_,
}

_ALU = {
    ir.ALU_ADD: np.add, ir.ALU_SUBTRACT: np.subtract, ir.ALU_MULTIPLY: np.multiply,
    ir.ALU_DIVIDE: np.divide, ir.ALU_MAXIMUM: np.maximum, ir.ALU_MINIMUM: np.minimum,
    ir.ALU_POWER: np.power, ir.ALU_GREATER: np.greater, ir.ALU_GREATER_EQUAL: np.greater_equal,
    ir.ALU_LESS: np.less, ir.ALU_LESS_EQUAL: np.less_equal, ir.ALU_EQUAL: np.equal,
    ir.ALU_NOT_EQUAL: np.not_equal, ir.ALU_LOGICAL_AND: np.logical_and,
    ir.ALU_LOGICAL_OR: np.logical_or, ir.ALU_LOGICAL_XOR: np.logical_xor, ir.ALU_MOD: np.fmod,
    ir.ALU_BYPASS: lambda a, b: a,
}

_REDUCE = {ir.ALU_ADD: np.sum, ir.ALU_MULTIPLY: np.prod, ir.ALU_MAXIMUM: np.max,
           ir.ALU_MINIMUM: np.min, ir.ALU_MEAN: np.mean, ir.ALU_VAR: np.var,
           ir.ALU_LOGICAL_AND: np.all, ir.ALU_LOGICAL_OR: np.any}


def _gelu(x):
    from math import erf
    return 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))


_ACT = {
    ir.ACT_IDENTITY: lambda x: x, ir.ACT_EXP: np.exp, ir.ACT_LOG: np.log,
    ir.ACT_SQUARE: np.square, ir.ACT_SQRT: np.sqrt, ir.ACT_RSQRT: lambda x: 1 / np.sqrt(x),
    ir.ACT_RECIPROCAL: lambda x: 1 / x, ir.ACT_TANH: np.tanh,
    ir.ACT_SIGMOID: lambda x: 1 / (1 + np.exp(-x)), ir.ACT_RELU: lambda x: np.maximum(x, 0),
    ir.ACT_GELU: _gelu, ir.ACT_SILU: lambda x: x / (1 + np.exp(-x)),
    ir.ACT_NEGATIVE: np.negative, ir.ACT_ABS: np.abs, ir.ACT_SIGN: np.sign,
    ir.ACT_SIN: np.sin, ir.ACT_COS: np.cos, ir.ACT_CEIL: np.ceil, ir.ACT_FLOOR: np.floor,
    ir.ACT_TRUNC: np.trunc, ir.ACT_LOGICAL_NOT: lambda x: (x == 0).astype(np.float32),
    ir.ACT_SOFTPLUS: lambda x: np.log1p(np.exp(x)),
}


class RefError(Exception):
    pass


class Interp:
    def __init__(self, kernel, inputs, pid=(), hbm=None):
        self.k = kernel
        self.pid = pid
        self.loops = {}
        self.prints = []
        self.mem = hbm if hbm is not None else {}
        for i, t in enumerate(kernel.tensors):
            if i in self.mem:
                continue
            dt = _NP[t.dtype]
            if t.kind == ir.TENSOR_PARAM:
                continue
            if t.kind == ir.TENSOR_HBM and hbm is not None:
                continue
            self.mem[i] = self._new(t)
        for p, arr in zip(kernel.params, inputs):
            if p.tensor not in self.mem:
                self.mem[p.tensor] = np.array(arr, dtype=_NP[kernel.tensors[p.tensor].dtype])

    def _new(self, t):
        dt = _NP[t.dtype]
        a = np.empty(tuple(t.shape), dtype=dt)
        if t.fill == ir.FILL_ZERO and t.kind == ir.TENSOR_HBM:
            a[...] = 0
        elif np.dtype(dt).kind in "fV":
            a[...] = np.nan
        else:
            a[...] = np.iinfo(dt).min if np.dtype(dt).kind in "iu" else 0
        return a

    def _aff(self, a, grids):
        v = a.constant
        for t in a.terms:
            if t.kind == ir.TERM_AXIS:
                v = v + t.coef * grids[t.index]
            elif t.kind == ir.TERM_LOOP:
                v = v + t.coef * self.loops[t.index]
            elif t.kind == ir.TERM_PROGRAM:
                v = v + t.coef * self.pid[t.index]
        return v

    def _index(self, acc):
        shape = tuple(acc.shape)
        grids = np.ogrid[tuple(slice(0, n) for n in shape)] if len(shape) > 1 else \
            [np.arange(shape[0])]
        idx = [np.broadcast_to(np.asarray(self._aff(a, grids)), shape) for a in acc.index]
        mask = np.ones(shape, bool)
        for m in acc.mask:
            mask &= np.broadcast_to(np.asarray(self._aff(m, grids)) >= 0, shape)
        arr = self.mem[acc.tensor]
        for d, ix in enumerate(idx):
            bad = mask & ((ix < 0) | (ix >= arr.shape[d]))
            if bad.any():
                raise RefError("out of bounds access to tensor %d dim %d (line ?)" % (acc.tensor, d))
        idx = tuple(np.where(mask, ix, 0) for ix in idx)
        return arr, idx, mask

    def read(self, o, shape=None):
        if not o.HasField("access"):
            return np.float32(o.scalar) if shape is None else np.full(shape, o.scalar, np.float32)
        arr, idx, mask = self._index(o.access)
        return arr[idx].astype(np.float32) if arr.dtype != np.bool_ else arr[idx].astype(np.float32)

    def write(self, acc, val):
        arr, idx, mask = self._index(acc)
        val = np.broadcast_to(np.asarray(val, dtype=np.float32), tuple(acc.shape))
        v = val.astype(arr.dtype)
        arr[tuple(ix[mask] for ix in idx)] = v[mask]

    def run(self, ops):
        for op in ops:
            k = op.kind
            if k == ir.OP_LOOP:
                lp = op.loop
                for i in range(lp.start, lp.stop, lp.step):
                    self.loops[lp.var] = i
                    self.run(lp.body)
            elif k == ir.OP_ALLOC:
                t = self.k.tensors[op.dst.tensor]
                v = {ir.FILL_ZERO: 0.0, ir.FILL_VALUE: op.value}.get(op.fill, np.nan)
                if op.fill == ir.FILL_UNINIT and np.dtype(_NP[t.dtype]).kind in "iu":
                    v = 0
                self.write(op.dst, v)
            elif k in (ir.OP_LOAD, ir.OP_STORE, ir.OP_COPY):
                self.write(op.dst, self.read(op.src[0]))
            elif k == ir.OP_TENSOR_TENSOR:
                a, b = self.read(op.src[0]), self.read(op.src[1])
                if op.alu in (ir.ALU_BITWISE_AND, ir.ALU_BITWISE_OR, ir.ALU_BITWISE_XOR,
                              ir.ALU_LEFT_SHIFT, ir.ALU_RIGHT_SHIFT):
                    f = {ir.ALU_BITWISE_AND: np.bitwise_and, ir.ALU_BITWISE_OR: np.bitwise_or,
                         ir.ALU_BITWISE_XOR: np.bitwise_xor, ir.ALU_LEFT_SHIFT: np.left_shift,
                         ir.ALU_RIGHT_SHIFT: np.right_shift}[op.alu]
                    r = f(np.asarray(a).astype(np.int64), np.asarray(b).astype(np.int64))
                else:
                    r = _ALU[op.alu](a, b)
                self.write(op.dst, np.asarray(r, dtype=np.float32))
            elif k == ir.OP_ACTIVATION:
                x = self.read(op.src[0]) * op.scale
                if len(op.src) > 1:
                    x = x + self.read(op.src[1])
                self.write(op.dst, _ACT[op.act](x))
            elif k == ir.OP_REDUCE:
                x = self.read(op.src[0])
                arr, idx, mask = self._index(op.src[0].access)
                if not mask.all():
                    x = np.where(mask, x, np.nan)
                    f = {ir.ALU_ADD: np.nansum, ir.ALU_MAXIMUM: np.nanmax, ir.ALU_MINIMUM: np.nanmin,
                         ir.ALU_MEAN: np.nanmean, ir.ALU_VAR: np.nanvar, ir.ALU_MULTIPLY: np.nanprod}[op.alu]
                else:
                    f = _REDUCE[op.alu]
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    self.write(op.dst, f(x, axis=tuple(op.axes), keepdims=True))
            elif k == ir.OP_MATMUL:
                x, y = self.read(op.src[0]), self.read(op.src[1])
                p = (x.T @ y) if op.transpose_x else (x @ y)
                if op.accumulate:
                    p = p + self.read(pb_access(op.dst))
                self.write(op.dst, p)
            elif k == ir.OP_TRANSPOSE:
                self.write(op.dst, self.read(op.src[0]).T)
            elif k == ir.OP_IOTA:
                shape = tuple(op.dst.shape)
                grids = np.ogrid[tuple(slice(0, n) for n in shape)]
                self.write(op.dst, np.broadcast_to(self._aff(op.expr, grids), shape))
            elif k == ir.OP_SELECT:
                c, a, b = (self.read(s) for s in op.src)
                self.write(op.dst, np.where(c != 0, a, b))
            elif k == ir.OP_PRINT:
                self.prints.append("%s %s\n" % (op.text, self.read(op.src[0])))
            elif k == ir.OP_BN_STATS:
                x = self.read(op.src[0])
                _, _, act = self._index(op.src[0].access)
                x = np.where(act, x, np.nan)
                chunks = []
                for c in range(0, x.shape[1], 512):
                    xc = x[:, c:c + 512]
                    n = (~np.isnan(xc)).sum(1, keepdims=True).astype(np.float32)
                    with np.errstate(all="ignore"):
                        m = np.where(n > 0, np.nanmean(xc, 1, keepdims=True), 0)
                        v = np.where(n > 0, np.nanvar(xc, 1, keepdims=True), 0)
                    chunks.append(np.concatenate([n, m, v, np.zeros((x.shape[0], 3),
                                                                    np.float32)], 1))
                self.write(op.dst, np.concatenate(chunks, 1))
            elif k == ir.OP_BN_AGGR:
                s = self.read(op.src[0]).reshape(op.src[0].access.shape[0], -1, 6)
                n, m, v = s[:, :, 0], s[:, :, 1], s[:, :, 2]
                tot = n.sum(1)
                mean = (n * m).sum(1) / tot
                var = (n * (v + (m - mean[:, None]) ** 2)).sum(1) / tot
                self.write(op.dst, np.stack([mean, var], 1))
            else:
                raise RefError("op %s not supported by the reference" % ir.OpKind.Name(k))


def pb_access(acc):
    o = ir.Operand()
    o.access.CopyFrom(acc)
    return o


def execute(kernel, inputs):
    """Run every program of the grid; return (outputs, device_print text)."""
    grid = list(kernel.grid) or [1]
    shared = {}
    prints = []
    first = Interp(kernel, inputs, pid=(0,) * len(grid))
    for i, t in enumerate(kernel.tensors):
        if t.kind in (ir.TENSOR_PARAM, ir.TENSOR_HBM):
            shared[i] = first.mem[i]
    for pid in np.ndindex(*grid):
        it = Interp(kernel, inputs, pid=pid, hbm=shared)
        it.run(kernel.body)
        prints.extend(it.prints)
    return [shared[o] for o in kernel.outputs], "".join(prints)


class RefClient:
    """Stands in for nkid.client.Client: Run and Simulate on the reference."""

    def __init__(self):
        self.calls = []

    def _exec(self, ref, inputs):
        assert ref.kernel.format == "nkir/1"
        k = ir.Kernel()
        k.ParseFromString(ref.kernel.ir)
        arrs = [from_wire(t) for t in inputs]
        self.calls.append((k, ref))
        return execute(k, arrs)

    def run(self, ref, inputs, core=-1, job_class=0):
        outs, _ = self._exec(ref, inputs)
        k = self.calls[-1][0]
        return pb.RunReply(outputs=[to_wire(k.tensors[o].name, a) for o, a in zip(k.outputs, outs)])

    def simulate(self, ref, inputs):
        outs, text = self._exec(ref, inputs)
        k = self.calls[-1][0]
        return pb.SimulateReply(outputs=[to_wire(k.tensors[o].name, a)
                                         for o, a in zip(k.outputs, outs)], device_print=text)
