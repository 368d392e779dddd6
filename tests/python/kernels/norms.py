"""Tier-2 kernels: normalizations and softmax with masks."""

import math

from nkid import nki
import nkid.nki.isa as nisa
import nkid.nki.language as nl
import numpy as np


@nki.jit
def rms_norm(x, g, eps=1e-6):
    """x / sqrt(mean(x^2) + eps) * g over rows of [N, D], N any size."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    n, d = x.shape
    ip = nl.arange(128)[:, None]
    jf = nl.arange(d)[None, :]
    one = nl.arange(1)[:, None]
    gt = nl.load(g.reshape((1, d))[one, jf])
    gb = gt.broadcast_to((128, d))
    for t in nl.affine_range(math.ceil(n / 128)):
        row = t * 128 + ip
        xt = nl.load(x[row, jf], mask=(row < n))
        ms = nl.mean(nl.square(xt), axis=1)
        r = nl.rsqrt(ms + eps)
        y = nl.multiply(xt, r)
        y[...] = nl.multiply(y, gb, mask=(row < n))
        nl.store(out[row, jf], value=y, mask=(row < n))
    return out


@nki.jit
def softmax_rows(x):
    """Numerically stable softmax over the rows of [N, D]."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    n, d = x.shape
    ip = nl.arange(128)[:, None]
    jf = nl.arange(d)[None, :]
    for t in nl.affine_range((n + 127) // 128):
        row = t * 128 + ip
        xt = nl.load(x[row, jf], mask=(row < n))
        m = nl.max(xt, axis=[1], keepdims=True, mask=(row < n))
        e = nl.exp(nl.subtract(xt, m, mask=(row < n)))
        s = nl.sum(e, axis=[1])
        nl.store(out[row, jf], value=e / s, mask=(row < n))
    return out


@nki.jit
def layer_norm_isa(x, eps, gamma, beta):
    """Layer norm with bn_stats/bn_aggr and tensor_scalar."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    n, d = x.shape
    ip = nl.arange(128)[:, None]
    jf = nl.arange(d)[None, :]
    one = nl.arange(1)[:, None]
    gb = nl.load(gamma.reshape((1, d))[one, jf]).broadcast_to((128, d))
    bb = nl.load(beta.reshape((1, d))[one, jf]).broadcast_to((128, d))
    for t in nl.affine_range(n // 128):
        xt = nl.load(x[t * 128 + ip, jf])
        mv = nisa.bn_aggr(nisa.bn_stats(xt, dtype=np.float32))
        mean = mv[ip, 0]
        var = mv[ip, 1]
        inv = nl.rsqrt(var + eps)
        y = nisa.tensor_scalar(data=xt, op0=np.subtract, operand0=mean,
                               op1=np.multiply, operand1=inv)
        nl.store(out[t * 128 + ip, jf], value=y * gb + bb)
    return out


@nki.jit
def transpose_tile(x):
    """[P, F] -> [F, P] with nisa.nc_transpose (tensor engine, PSUM)."""
    out = nl.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=nl.copy(nisa.nc_transpose(t)))
    return out


@nki.jit
def select_relu(x):
    """where(x > 0, x, 0.1 * x) and relu, max-reduced."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    red = nl.ndarray((x.shape[0], 1), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    leaky = nl.where(t > 0, t, t * 0.1)
    nl.store(out, value=nl.maximum(leaky, nl.relu(t)))
    nl.store(red, value=nl.max(t, axis=1, keepdims=True))
    return out, red


@nki.jit
def transposes(x):
    """nl.transpose of a loaded tile and nl.load_transpose2d: both x.T."""
    o1 = nl.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl.shared_hbm)
    o2 = nl.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(o1, value=nl.transpose(nl.load(x)))
    nl.store(o2, value=nl.load_transpose2d(x))
    return o1, o2


@nki.jit
def iota_affine(x):
    """x + (2*p + f) from nisa.iota, and an index expression as an operand."""
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    p, f = nl.mgrid[0:x.shape[0], 0:x.shape[1]]
    idx = nisa.iota(2 * p + f, dtype=nl.float32)
    nl.store(out, value=nl.load(x) + idx)
    return out
