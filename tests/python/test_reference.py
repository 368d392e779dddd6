"""Traced kernels executed by the reference NKIR interpreter (no daemon):
checks that the IR the tracer emits means what the kernel says."""

import io
import contextlib

import numpy as np
import pytest

from nkid import nki
import cases

ALL = cases.tier1() + cases.tier2()


@pytest.mark.parametrize("case", ALL, ids=repr)
def test_baremetal(ref_backend, case):
    case.check(case.kernel(*case.args))


@pytest.mark.parametrize("case", ALL, ids=repr)
def test_simulate_kernel(ref_backend, case):
    case.check(nki.simulate_kernel(case.kernel, *case.args))


def test_device_print(ref_backend):
    from kernels.elementwise import print_tile
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        out = nki.simulate_kernel(print_tile, x)
    np.testing.assert_array_equal(out, x)
    assert "tile t:" in buf.getvalue()
