"""End to end through the real daemon: every kernel case via nki.baremetal
(Run) and nki.simulate_kernel (Simulate), checked against numpy; NKI's
errors come back as NkidError with the kernel's file and line."""

import contextlib
import inspect
import io

import numpy as np
import pytest

import nkid
from nkid import nki
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
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        out = nki.simulate_kernel(ew.print_tile, x)
    np.testing.assert_array_equal(out, x)
    assert "tile t:" in buf.getvalue()


def test_partition_dim_256_is_rejected_with_the_kernel_line(nkid_socket):
    src, start = inspect.getsourcelines(ew.wide_partition.func)
    line = start + next(i for i, s in enumerate(src) if "big = nl.load" in s)
    x = np.zeros((256, 64), np.float32)
    with pytest.raises(nkid.NkidError) as e:
        ew.wide_partition(x)
    msg = str(e.value)
    assert "Size of partition dimension 256 exceeds architecture limitation of 128" in msg
    assert "elementwise.py:%d" % line in msg
    assert e.value.code == "INVALID_ARGUMENT"
