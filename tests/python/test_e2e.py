"""End to end through the real daemon: every kernel case via nki.baremetal
(Run) and nki.simulate_kernel (Simulate), checked against numpy; NKI's
errors come back as NkidError with the kernel's file and line."""

import inspect

import numpy as np
import pytest

import nkid
from nkid import nki
import nkid.nki.language as nl
from nkid.client import get_client
import cases
from kernels import elementwise as ew

TIER1 = cases.tier1()
TIER2 = cases.tier2()


def test_ping(nkid_socket):
    assert get_client().ping(b"hello") == b"hello"


@pytest.mark.parametrize("case", TIER1, ids=repr)
def test_baremetal(nkid_socket, case):
    case.check(case.kernel(*case.args))


@pytest.mark.parametrize("case", TIER1, ids=repr)
def test_simulate_kernel(nkid_socket, case):
    case.check(nki.simulate_kernel(case.kernel, *case.args))


@pytest.mark.parametrize("case", TIER2, ids=repr)
def test_tier2_baremetal(nkid_socket, case):
    case.check(case.kernel(*case.args))


def test_device_print(nkid_socket):
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    out, text = cases.printed(nki.simulate_kernel, ew.print_tile, x)
    np.testing.assert_array_equal(out, x)
    assert "tile t:" in text


def test_partition_dim_256_is_rejected_with_the_kernel_line(nkid_socket):
    src, start = inspect.getsourcelines(ew.wide_partition.func)
    line = start + next(i for i, s in enumerate(src) if "big = nl.load" in s)
    x = np.zeros((256, 48), np.float32)          # not compiled before in this session
    with pytest.raises(nkid.NkidError) as e:
        ew.wide_partition(x)
    msg = str(e.value)
    assert "Size of partition dimension 256 exceeds architecture limitation of 128" in msg
    assert "elementwise.py:%d" % line in msg
    assert e.value.code == "INVALID_ARGUMENT"


def test_bn_stats_masked_last_chunk(nkid_socket):
    """bn_stats over chunks of 512 with the last one masked: masked-off
    elements count for nothing (and the chunk reads past the tile)."""
    import math
    import nkid.nki.isa as nisa
    import nkid.nki.language as nl

    def stats(x):
        out = nl.ndarray((x.shape[0], 2), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(x)
        n = math.ceil(x.shape[1] / 512)
        st = nl.ndarray((128, 6 * n), dtype=nl.float32)
        i_p = nl.arange(128)[:, None]
        i_f = nl.arange(512)[None, :]
        i_s = nl.arange(6)[None, :]
        for j in nl.affine_range(n):
            st[i_p, j * 6 + i_s] = nisa.bn_stats(t[i_p, j * 512 + i_f],
                                                 mask=(j * 512 + i_f < x.shape[1]))
        nl.store(out, value=nisa.bn_aggr(st))
        return out
    for cols in (100, 700, 1024):
        x = np.random.rand(128, cols).astype(np.float32)
        got = nki.baremetal(stats)(x)
        np.testing.assert_allclose(got[:, 0], x.mean(1), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[:, 1], x.var(1), rtol=1e-4, atol=1e-6)


@nki.jit
def _slice_past_the_end(x):
    out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x[0:128, 0:512])
    nl.store(out, value=t)
    return out


def test_constant_slice_past_the_end_is_nkis_out_of_bound(nkid_socket):
    """A constant slice past a tensor's end is not clipped (numpy would):
    nkid reports NKI's out-of-bound access at the kernel's line."""
    line = inspect.getsourcelines(_slice_past_the_end)[1] + 3
    with pytest.raises(nkid.NkidError) as e:
        _slice_past_the_end(np.zeros((128, 400), np.float32))
    msg = str(e.value)
    assert ("Out-of-bound access for tensor `x` on dimension 1: index range [0, 511] "
            "exceed dimension size of 400") in msg
    assert "test_e2e.py:%d" % line in msg
