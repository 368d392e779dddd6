"""Distinct small kernels for the functional tests without tracing each:
out = a * c for a float32 [128, 64], traced once with a marker constant,
and copies of its NKIR with the marker replaced by c."""

import struct

import numpy as np

from nkid import tracer
import nkid.nki.language as nl

MARK = 1234.5


def scale(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(a), MARK))
    return out


def scaled_irs():
    """A function of c: the NKIR of scale with MARK replaced by c."""
    ir = tracer.trace(scale, (np.ones((128, 64), np.float32),)).ir
    fmt = "<f" if ir.count(struct.pack("<f", MARK)) == 1 else "<d"
    pat = struct.pack(fmt, MARK)
    assert ir.count(pat) == 1, "the constant is not in the IR once"
    return lambda c: ir.replace(pat, struct.pack(fmt, float(c)))
