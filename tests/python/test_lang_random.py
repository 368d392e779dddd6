"""Random numbers on the cpu backend: nl.rand, nl.random_seed, nl.dropout.
Reproducible: the same seed gives the same numbers, run after run; each
program of a grid starts from its own default seed."""

import numpy as np
import pytest

import nkid
from nkid import nki, NKIError
import nkid.nki.language as nl


def rand_kernel(x, seed):
    out = nl.ndarray((3, 128, 256), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.random_seed(seed=seed)
    nl.store(out[0], value=nl.rand((128, 256)))
    nl.store(out[1], value=nl.rand((128, 256)))
    nl.random_seed(seed=seed)
    nl.store(out[2], value=nl.rand((128, 256), dtype=nl.float32))
    return out


X = np.zeros((1, 1), np.float32)


def test_rand_is_uniform_in_0_1(nkid_socket):
    r = nki.simulate_kernel(rand_kernel, X, 1)
    assert r.min() >= 0.0 and r.max() < 1.0
    assert abs(r[0].mean() - 0.5) < 0.01
    assert abs(r[0].var() - 1 / 12) < 0.005
    hist, _ = np.histogram(r[0], bins=10, range=(0, 1))
    assert hist.min() > 0.09 * r[0].size


def test_same_seed_same_numbers(nkid_socket):
    a = nki.simulate_kernel(rand_kernel, X, 42)
    np.testing.assert_array_equal(a[0], a[2])            # reseeded within the run
    assert not np.array_equal(a[0], a[1])                 # the sequence moves on
    b = nki.baremetal(rand_kernel)(X, 42)                 # another door, another run
    np.testing.assert_array_equal(a, b)
    c = nki.simulate_kernel(rand_kernel, X, 43)
    assert not np.array_equal(a[0], c[0])


def test_seed_from_a_tile_and_32_bit_seeds(nkid_socket):
    def k(seeds):
        out = nl.ndarray((2, 64, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        s = nl.load(seeds)
        nl.random_seed(seed=nl.add(s, 0, dtype=nl.int32))
        nl.store(out[0], value=nl.rand((64, 64)))
        nl.random_seed(seed=12345)
        nl.store(out[1], value=nl.rand((64, 64)))
        return out

    def k2(x):
        out = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.random_seed(seed=2 ** 32 - 7)
        nl.store(out, value=nl.rand((64, 64)))
        return out
    got = nki.simulate_kernel(k, np.full((1, 1), 12345, np.int32))
    np.testing.assert_array_equal(got[0], got[1])
    a = nki.simulate_kernel(k2, X)
    b = nki.simulate_kernel(unseeded_rand, X)
    assert not np.array_equal(a, b[0])


def unseeded_rand(x):
    out = nl.ndarray((2, 64, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    p = nl.program_id(0)
    nl.store(out[p], value=nl.rand((64, 64)))
    return out


def test_each_program_has_its_own_stream(nkid_socket):
    got = nki.simulate_kernel(nki.jit(unseeded_rand)[2], X)
    assert not np.array_equal(got[0], got[1])
    again = nki.simulate_kernel(nki.jit(unseeded_rand)[2], X)
    np.testing.assert_array_equal(got, again)


def dropout_kernel(x, rate):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.random_seed(seed=7)
    nl.store(out, value=nl.dropout(nl.load(x), rate=rate))
    return out


@pytest.mark.parametrize("rate", [0.0, 0.25, 0.5, 1.0])
def test_dropout_zeroes_at_the_rate_and_keeps_the_rest(nkid_socket, rate):
    x = np.random.default_rng(3).uniform(1, 2, (128, 512)).astype(np.float32)
    got = nki.simulate_kernel(dropout_kernel, x, rate)
    dropped = got == 0
    assert abs(dropped.mean() - rate) < 0.01
    np.testing.assert_array_equal(got[~dropped], x[~dropped])     # not rescaled
    np.testing.assert_array_equal(nki.simulate_kernel(dropout_kernel, x, rate), got)


def test_dropout_rate_per_partition(nkid_socket):
    def k(x, rates):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        r = nl.load(rates)
        nl.store(out, value=nl.dropout(nl.load(x), rate=r[:, 0]))
        return out
    x = np.ones((128, 1024), np.float32)
    rates = np.linspace(0, 1, 128, dtype=np.float32).reshape(128, 1)
    got = nki.simulate_kernel(k, x, rates)
    frac = (got == 0).mean(axis=1)
    assert frac[0] == 0.0 and frac[-1] == 1.0
    np.testing.assert_allclose(frac, rates[:, 0], atol=0.06)


def test_dropout_under_a_mask_leaves_the_rest(nkid_socket):
    def k(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        i_p, i_f = nl.mgrid[0:128, 0:64]
        t[i_p, i_f] = nl.dropout(t[i_p, i_f], rate=1.0, mask=(i_p < 32))
        nl.store(out, value=t)
        return out
    x = np.full((128, 64), 5.0, np.float32)
    got = nki.simulate_kernel(k, x)
    assert np.all(got[:32] == 0) and np.all(got[32:] == 5.0)


def test_dropout_rate_outside_0_1_is_refused(nkid_socket):
    with pytest.raises(NKIError, match=r"prob of 'dropout' must be between 0.0 and 1.0, got"
                       r" 1.5 \(test_lang_random.py:\d+\)"):
        nki.simulate_kernel(dropout_kernel, np.ones((4, 4), np.float32), 1.5)


def test_random_seed_needs_an_integer(nkid_socket):
    def k(x):
        nl.random_seed(seed=1.5)
        return x
    with pytest.raises(NKIError, match="nl.random_seed expects an integer or a tile"):
        nki.simulate_kernel(k, X)


def test_rand_outside_a_kernel_is_refused():
    with pytest.raises(NKIError, match="nl.rand can only be used inside a NKI kernel"):
        nl.rand((2, 2))
