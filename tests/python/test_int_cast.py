"""Float to integer conversion on output: toward zero, saturating, NaN to 0.

NKI's engines compute in fp32 and cast the result to the output dtype
(nki.api.shared, "NKI Type Promotion"); an int32 tile divided by a Python
int is int32. Kernels rely on the cast dropping the fraction, as NKI's
simulator does (numpy's astype): nki-samples' resize_nearest computes its
source row as floor(position / width) through such a division."""

import numpy as np

from nkid import nki
import nkid.nki.language as nl


@nki.jit
def divide_int(x):
    out = nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.shared_hbm)
    nl.store(out, value=nl.divide(nl.load(x), 38))
    return out


@nki.jit
def to_int(x, dt):
    out = nl.ndarray(x.shape, dtype=dt, buffer=nl.shared_hbm)
    nl.store(out, value=nl.copy(nl.load(x), dtype=dt))
    return out


def test_int_division_drops_the_fraction(nkid_socket):
    x = np.arange(128 * 16, dtype=np.int32).reshape(128, 16) - 1000
    got = nki.simulate_kernel(divide_int, x)
    assert got.dtype == np.int32
    # 2241 / 38 = 58.97: 58, not 59; -995 / 38 = -26.18: -26
    np.testing.assert_array_equal(got, (x / 38).astype(np.int32))


def test_float_to_int_toward_zero_saturating(nkid_socket):
    vals = [2.7, -2.7, 0.5, -0.5, 1.5, 127.9, 128.0, -129.0, 3e9, -3e9,
            np.nan, np.inf, -np.inf, 0.0]
    x = np.zeros((128, len(vals)), np.float32)
    x[:] = np.array(vals, np.float32)
    for dt, lo, hi in ((nl.int8, -128, 127), (nl.int32, -2**31, 2**31 - 1),
                       (nl.uint8, 0, 255)):
        got = nki.simulate_kernel(to_int, x, dt)
        want = np.nan_to_num(np.trunc(x.astype(np.float64)), nan=0.0,
                             posinf=hi, neginf=lo)
        want = np.clip(want, lo, hi).astype(got.dtype)
        np.testing.assert_array_equal(got, want, err_msg=str(dt))
