"""LayerNorm as NKI's tutorial describes its two versions
(aws-neuron-sdk@8a38e733 general/nki/tutorials/layernorm.rst), written for
this project to check the model against the tutorial's published latency
(docs/model.md, "Layernorm"): rows tiled by 128 partitions, gamma and beta
loaded once as [1, N] rows and broadcast over the partitions.

  layernorm_v1   nki.language only: mean, mean of squares minus the squared
                 mean, (x - mean) * rsqrt(var + eps), * gamma + beta
  layernorm_v2   bn_stats over 512-element chunks, bn_aggr, one
                 tensor_scalar for the shift and the scale
"""

import math

from nkid import nki
import nkid.nki.isa as nisa
import nkid.nki.language as nl

P = 128
EPS = 1e-5


def _params(x, gamma, beta):
    rows, n = x.shape
    out = nl.ndarray((rows, n), dtype=x.dtype, buffer=nl.shared_hbm)
    g = nl.load(gamma.reshape((1, n)))
    b = nl.load(beta.reshape((1, n)))
    return rows, n, out, g.broadcast_to((P, n)), b.broadcast_to((P, n))


@nki.jit
def layernorm_v1(x, gamma, beta):
    rows, n, out, g, b = _params(x, gamma, beta)
    ip, jf = nl.mgrid[0:P, 0:n]
    for t in nl.affine_range(math.ceil(rows / P)):
        live = t * P + ip < rows
        xt = nl.load(x[t * P + ip, jf], mask=live)
        mean = nl.mean(xt, axis=1)
        var = nl.mean(nl.square(xt), axis=1) - mean * mean
        y = (xt - mean) * nl.rsqrt(var + EPS)
        nl.store(out[t * P + ip, jf], value=y * g + b, mask=live)
    return out


@nki.jit
def layernorm_v2(x, gamma, beta):
    rows, n, out, g, b = _params(x, gamma, beta)
    ip, jf = nl.mgrid[0:P, 0:n]
    fmax = nl.tile_size.bn_stats_fmax
    chunks = math.ceil(n / fmax)
    ic, jc = nl.mgrid[0:P, 0:fmax]
    for t in nl.affine_range(math.ceil(rows / P)):
        live = t * P + ip < rows
        xt = nl.load(x[t * P + ip, jf], mask=live)
        stats = nl.ndarray((P, 6 * chunks), dtype=nl.float32)
        for c in nl.affine_range(chunks):
            stats[ic, c * 6 + nl.arange(6)[None, :]] = nisa.bn_stats(
                xt[ic, c * fmax + jc], mask=(c * fmax + jc < n), dtype=nl.float32)
        mv = nisa.bn_aggr(stats)
        scale = nl.rsqrt(mv[:, 1:2] + EPS)
        y = nisa.tensor_scalar(data=xt, op0=nl.subtract, operand0=mv[:, 0:1],
                               op1=nl.multiply, operand1=scale)
        nl.store(out[t * P + ip, jf], value=y * g + b, mask=live)
    return out


def args(rows, n):
    import nkid.nki.typing as nt
    f = nl.float32
    return (nt.tensor[[rows, n], f], nt.tensor[[n], f], nt.tensor[[n], f])
