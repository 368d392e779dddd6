"""Top-k per row with the Vector Engine's max8 and nc_find_index8: the 8
largest values of each partition in descending order, then the index of
each in its row; k = 16 takes two rounds, the first round's winners
knocked out with nl.where before the second.  Checked against numpy.

Needs nisa.max8 and nisa.nc_find_index8 (issue 14, part A): skipped,
saying so, only while nkid.nki.isa lacks either."""

import numpy as np
import pytest

from nkid import nki
import nkid.nki.isa as nisa
import nkid.nki.language as nl

pytestmark = pytest.mark.skipif(
    not (hasattr(nisa, "max8") and hasattr(nisa, "nc_find_index8")),
    reason="nkid.nki.isa has no max8/nc_find_index8 yet (issue 14, part A)")


@nki.jit
def topk(x, rounds):
    """The 8 * rounds largest values of each row and their indices; after
    each round of max8, everything >= its 8th value is knocked out."""
    rows, width = x.shape
    vals = nl.ndarray((rows, 8 * rounds), dtype=x.dtype, buffer=nl.shared_hbm)
    idx = nl.ndarray((rows, 8 * rounds), dtype=nl.uint32, buffer=nl.shared_hbm)
    t = nl.load(x)
    for r in range(rounds):                 # unrolled
        m = nisa.max8(src=t)
        nl.store(vals[:, r * 8:(r + 1) * 8], value=m)
        nl.store(idx[:, r * 8:(r + 1) * 8], value=nisa.nc_find_index8(data=t, vals=m))
        if r + 1 < rounds:
            eighth = m[:, 7:8].broadcast_to((rows, width))
            t = nl.where(nl.greater_equal(t, eighth), nl.fp32.min, t)
    return vals, idx


def _distinct_rows(rows, width, seed):
    rng = np.random.default_rng(seed)
    return np.stack([rng.permutation(width) for _ in range(rows)]).astype(np.float32) \
        + rng.uniform(0, 0.5, (rows, width)).astype(np.float32)


@pytest.mark.parametrize("rows,width", [(128, 64), (16, 1000)])
def test_top8(nkid_socket, rows, width):
    x = _distinct_rows(rows, width, width)
    vals, idx = topk(x, 1)
    order = np.argsort(-x, axis=1)[:, :8]
    np.testing.assert_array_equal(idx, order)
    np.testing.assert_array_equal(vals, np.take_along_axis(x, order, axis=1))


def test_top16_in_two_rounds(nkid_socket):
    x = _distinct_rows(64, 256, 16)
    vals, idx = topk(x, 2)
    order = np.argsort(-x, axis=1)[:, :16]
    np.testing.assert_array_equal(idx, order)
    np.testing.assert_array_equal(vals, np.take_along_axis(x, order, axis=1))
