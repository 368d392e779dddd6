"""The warm call path of nki.baremetal (nkid/nki/_plan.py) against the real
nkid: a warm call sends a prebuilt request naming the NEFF key and skips
the tracer; whatever the trace reads besides its arguments (a global, a
closure cell, a default, a helper module's attribute, a list changed in
place) still makes a new trace; the shared-memory threshold, static
arguments and keyword arguments pick the right plan; a NEFF key nkid no
longer has falls back to sending the IR."""

import subprocess
import sys
import types

import numpy as np
import pytest

from nkid import nki
from nkid import client as nclient
from nkid import _fastpath
from nkid.client import Client, Prepared
from nkid.errors import NkidError
from nkid.nki import _numpy_kernel as nk
from nkid.nki import _plan
from nkid.tracer import deps
import nkid.nki.language as nl
from kernels.layout import swap_blocks

SCALE = 3.0
FACTORS = [2.0]


def by_global(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(a), SCALE))
    return out


def by_list(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(a), FACTORS[0]))
    return out


def by_default(a, k=2.0):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(a), k))
    return out


def make(c):
    def by_closure(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.multiply(nl.load(a), c))
        return out
    return by_closure


helper = types.ModuleType("plan_helper")
helper.FACTOR = 5.0
sys.modules["plan_helper"] = helper


def by_helper(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(a), helper.FACTOR))
    return out


def add_scaled(x, y, s=1.0):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(x), nl.multiply(nl.load(y), s)))
    return out


@pytest.fixture
def calls(monkeypatch):
    """The requests sent over gRPC (Client.call) or the fast path
    (nkid._fastpath.call), in order: (method, request)."""
    sent = []
    real = Client.call
    real_fast = _fastpath.call

    def call(self, method, request, timeout=None):
        sent.append((method, request))
        return real(self, method, request, timeout)

    def fast(client, method, request, timeout=None, reply_bytes=0):
        sent.append((method, request))
        return real_fast(client, method, request, timeout, reply_bytes)
    monkeypatch.setattr(Client, "call", call)
    monkeypatch.setattr(_fastpath, "call", fast)
    return sent


@pytest.fixture
def traces(monkeypatch):
    n = []
    real = nk._tracer.trace
    monkeypatch.setattr(nk._tracer, "trace", lambda *a, **kw: n.append(1) or real(*a, **kw))
    return n


def test_warm_call_sends_a_prebuilt_request(nkid_socket, calls, traces):
    x = np.arange(128 * 8, dtype=np.float32).reshape(128, 8)
    k = nki.baremetal(add_scaled)
    np.testing.assert_array_equal(k(x, x), x + x)
    before = len(traces)
    for i in range(3):
        y = x + i
        np.testing.assert_array_equal(k(x, y), x + y)
    assert len(traces) == before                  # no trace, no signature work
    runs = [r for m, r in calls if m == "Run"]
    assert all(isinstance(r, Prepared) for r in runs[-3:])
    assert runs[-1].ref.neff_key == k.last_reply.neff_key and not runs[-1].ref.kernel.ir
    # What the prebuilt request carries is what the whole way would send.
    assert runs[-1].core == -1 and [t.name for t in runs[-1].inputs] == ["x", "y"]
    np.testing.assert_array_equal(
        np.frombuffer(runs[-1].inputs[1].data, np.float32).reshape(128, 8), x + 2)
    # Outputs are the caller's own, writable arrays.
    out = k(x, x)
    out[0, 0] = -1
    assert k(x, x)[0, 0] == 0


def test_what_the_trace_reads_still_counts(nkid_socket):
    global SCALE
    x = np.ones((128, 8), np.float32)
    g = nki.baremetal(by_global)
    assert g(x)[0, 0] == 3.0 and g(x)[0, 0] == 3.0
    SCALE = 4.0
    try:
        assert g(x)[0, 0] == 4.0
    finally:
        SCALE = 3.0
    assert g(x)[0, 0] == 3.0
    lk = nki.baremetal(by_list)
    assert lk(x)[0, 0] == 2.0
    FACTORS[0] = 7.0                              # changed in place
    try:
        assert lk(x)[0, 0] == 7.0
    finally:
        FACTORS[0] = 2.0
    d = nki.baremetal(by_default)
    assert d(x)[0, 0] == 2.0 and d(x)[0, 0] == 2.0
    by_default.__defaults__ = (6.0,)
    try:
        assert d(x)[0, 0] == 6.0
    finally:
        by_default.__defaults__ = (2.0,)
    f = make(8.0)
    c = nki.baremetal(f)
    assert c(x)[0, 0] == 8.0 and c(x)[0, 0] == 8.0
    f.__closure__[0].cell_contents = 9.0
    assert c(x)[0, 0] == 9.0
    h = nki.baremetal(by_helper)
    assert h(x)[0, 0] == 5.0 and h(x)[0, 0] == 5.0
    helper.FACTOR = 10.0
    try:
        assert h(x)[0, 0] == 10.0
    finally:
        helper.FACTOR = 5.0


def test_fingerprint_probes_follow_rebinding():
    fp = deps.fingerprint(by_global)
    p = deps.probes(by_global)
    assert p is not None and p[2] == fp and deps.same(by_global, p)
    global SCALE
    SCALE = 3.5
    try:
        assert deps.fingerprint(by_global) != fp and not deps.same(by_global, p)
    finally:
        SCALE = 3.0
    # Only what the code reads as globals: attribute names are not.
    assert ("SCALE" in deps._globals(by_global.__code__)
            and "multiply" not in deps._globals(by_global.__code__))
    # A list read: no probes, a full walk every time.
    deps.fingerprint(by_list)
    assert deps.probes(by_list) is None


def test_statics_and_keywords_pick_their_plan(nkid_socket):
    x = np.ones((128, 8), np.float32)
    k = nki.baremetal(add_scaled)
    assert k(x, x, 2.0)[0, 0] == 3.0
    assert k(x, x, 2.0)[0, 0] == 3.0
    assert k(x, x, 3.0)[0, 0] == 4.0
    assert k(x, x, 2)[0, 0] == 3.0                # an int keys apart from a float
    assert k(x, x, s=5.0)[0, 0] == 6.0
    assert k(y=x * 2, x=x)[0, 0] == 3.0           # keywords in any order
    assert k(y=x * 2, x=x)[0, 0] == 3.0
    assert _plan.arg_key((x, 2), {}) != _plan.arg_key((x, 2.0), {})
    assert _plan.arg_key((x, [1]), {}) is None    # unhashable static: the whole way
    s = np.arange(5 * 12, dtype=np.int8).reshape(5, 12)
    want = np.ascontiguousarray(s.reshape(5, 3, 4).transpose(0, 2, 1)).reshape(5, 12)
    sb = nki.baremetal(swap_blocks)
    for _ in range(2):
        np.testing.assert_array_equal(sb(s, (3, 4)), want)


def test_threshold_is_read_per_call(nkid_socket, monkeypatch):
    x = np.ones((128, 8), np.float32)
    k = nki.baremetal(add_scaled)
    k(x, x)
    k(x, x)
    assert not k.last_reply.outputs[0].HasField("shm")
    monkeypatch.setenv("NKID_SHM_THRESHOLD", "0")
    np.testing.assert_array_equal(k(x, x), x + x)
    assert k.last_reply.outputs[0].HasField("shm")


@pytest.fixture
def grpc_only(monkeypatch):
    """Warm calls over gRPC (Client.call), where these tests inject
    failures, instead of the fast path."""
    monkeypatch.setattr(_fastpath, "call",
                        lambda client, method, request, timeout=None, reply_bytes=0:
                        client.call(method, request, timeout))


def test_a_lost_neff_key_falls_back_to_the_ir(nkid_socket, monkeypatch, grpc_only):
    x = np.ones((128, 8), np.float32)
    k = nki.baremetal(add_scaled)
    k(x, x)
    k(x, x)
    real = Client.call
    sent = []

    def lose_once(self, method, request, timeout=None):
        sent.append(request)
        if isinstance(request, Prepared) and len(sent) == 1:
            raise NkidError("no kernel with NEFF key '%s'" % request.ref.neff_key, "NOT_FOUND")
        return real(self, method, request, timeout)
    monkeypatch.setattr(Client, "call", lose_once)
    np.testing.assert_array_equal(k(x, x), x + x)
    assert isinstance(sent[0], Prepared) and not isinstance(sent[-1], Prepared)
    monkeypatch.setattr(Client, "call", real)
    np.testing.assert_array_equal(k(x, x), x + x)   # planned again


def test_other_failures_are_not_retried(nkid_socket, monkeypatch, grpc_only):
    x = np.ones((128, 8), np.float32)
    k = nki.baremetal(add_scaled)
    k(x, x)
    k(x, x)
    sent = []

    def fail(self, method, request, timeout=None):
        sent.append(method)
        raise NkidError("core 0 is unhealthy", "UNAVAILABLE")
    monkeypatch.setattr(Client, "call", fail)
    with pytest.raises(NkidError, match="unhealthy"):
        k(x, x)
    assert sent == ["Run"]


def test_pid_follows_fork():
    # In a fresh interpreter: this one has threads (JAX) that fork warns of.
    code = ("import os\n"
            "from nkid import client\n"
            "r, w = os.pipe()\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    os.write(w, b'1' if client._pid == os.getpid() else b'0')\n"
            "    os._exit(0)\n"
            "os.waitpid(pid, 0)\n"
            "assert os.read(r, 1) == b'1' and client._pid == os.getpid()\n")
    subprocess.run([sys.executable, "-c", code], check=True)
