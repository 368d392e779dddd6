"""nkid restarting under a client (docs/protocol.md, "Restarts").

Each test starts its own nkid (build/bin/nkid, one core) on a private
socket, stops and starts it again.  What is checked: nkid answers the calls
it did not start UNAVAILABLE with the trailing metadata ``nkid-retryable:
1`` (a queued job, a call on an open connection after SIGTERM); the client
sends such a call to the next nkid; a call that may have run (its connection
cut after it was sent) is sent again only if its method is idempotent.
"""

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

import grpc
import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
NKID = os.path.abspath(os.environ.get("NKID") or os.path.join(ROOT, "build", "bin", "nkid"))
NKICTL = os.path.abspath(os.environ.get("NKICTL") or os.path.join(ROOT, "build", "bin", "nkictl"))

from nkid import NkidError  # noqa: E402
from nkid._proto import nkid_pb2 as pb  # noqa: E402
from nkid._proto import nkid_pb2_grpc as pb_grpc  # noqa: E402
from nkid.client import Client, to_wire  # noqa: E402


class Daemon:
    """nkid on dir/nkid.sock, started and stopped by the test."""

    def __init__(self, d):
        self.dir = d
        self.sock = os.path.join(d, "nkid.sock")
        self.proc = None

    def start(self, wait=True):
        log = open(os.path.join(self.dir, "nkid.log"), "ab")
        self.proc = subprocess.Popen([NKID, "-s", self.sock, "--state-dir",
                                      os.path.join(self.dir, "state")],
                                     stdout=log, stderr=subprocess.STDOUT)
        if wait:
            end = time.monotonic() + 15
            while not os.path.exists(self.sock):
                assert self.proc.poll() is None, "nkid exited at start"
                assert time.monotonic() < end, "nkid did not make its socket"
                time.sleep(0.01)
        return self.proc

    def term(self):
        self.proc.send_signal(signal.SIGTERM)

    def wait(self):
        return self.proc.wait(15)

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def daemon():
    if not os.path.exists(NKID):
        pytest.skip("%s does not exist (run make, or set NKID)" % NKID)
    with tempfile.TemporaryDirectory(prefix="nkid-restart-") as d:
        dm = Daemon(d)
        try:
            yield dm
        finally:
            dm.kill()


def _raw(sock):
    ch = grpc.insecure_channel("unix:" + sock)
    return ch, pb_grpc.NkidStub(ch)


def _tiny_ref(tmp):
    """A Run request of a 128x8 add (traced here), and its expected output."""
    from nkid import nki
    from nkid.trace import trace_to_file, load
    import nkid.nki.language as nl

    @nki.jit
    def tiny_add(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.load(a) + nl.load(b))
        return out

    x = np.arange(128 * 8, dtype=np.float32).reshape(128, 8)
    path = os.path.join(tmp, "tiny.nkir")
    trace_to_file(tiny_add, (x, x), path)
    ref, _ = load(path)
    return pb.RunRequest(ref=ref, inputs=[to_wire("a", x), to_wire("b", x)]), x + x


def _hold_core(sock):
    """nkictl lock: a lease on the only core, until killed."""
    p = subprocess.Popen([NKICTL, "-s", sock, "lock", "--", "sleep", "30"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    c = Client(sock)
    end = time.monotonic() + 10
    while not any(j.kind == "lease" and j.state == "running"
                  for j in c.call("Jobs", pb.JobsRequest()).jobs):
        assert time.monotonic() < end, "no lease"
        time.sleep(0.05)
    c.close()
    return p


def _marked(err):
    return ("nkid-retryable", "1") in tuple(err.trailing_metadata() or ())


def test_stopping_nkid_marks_what_it_did_not_start(daemon, monkeypatch):
    """A job queued behind a lease and a call arriving after SIGTERM are
    answered UNAVAILABLE, marked retryable, with words saying so."""
    daemon.start()
    req, _ = _tiny_ref(daemon.dir)
    ch, stub = _raw(daemon.sock)
    stub.Ping(pb.PingRequest())                 # the connection is open
    lock = _hold_core(daemon.sock)
    try:
        box = {}

        def queued():
            try:
                box["reply"] = stub.Run(req, timeout=30)
            except grpc.RpcError as e:
                box["err"] = e
        t = threading.Thread(target=queued)
        t.start()
        c = Client(daemon.sock)
        end = time.monotonic() + 10
        while not any(j.state == "queued" and j.kind == "run" for j in c.call("Jobs", pb.JobsRequest()).jobs):
            assert time.monotonic() < end, "the Run was not queued"
            time.sleep(0.02)
        c.close()
        daemon.term()
        t.join(10)
        e = box.get("err")
        assert e is not None, "the queued Run was answered %r" % box.get("reply")
        assert e.code() == grpc.StatusCode.UNAVAILABLE
        assert "nkid is stopping" in e.details() and "never ran" in e.details()
        assert _marked(e)
        # The lease keeps nkid in its grace period: a new call is refused.
        with pytest.raises(grpc.RpcError) as ei:
            stub.Ping(pb.PingRequest(), timeout=5)
        assert ei.value.code() == grpc.StatusCode.UNAVAILABLE
        assert _marked(ei.value), ei.value.details()
        assert "not started" in ei.value.details()
    finally:
        lock.kill()
        lock.wait()
        ch.close()
    assert daemon.wait() == 0


def test_queued_call_goes_to_the_next_nkid(daemon):
    """Through the client: a Run queued when nkid stops is answered by the
    next nkid, with the right result."""
    daemon.start()
    req, want = _tiny_ref(daemon.dir)
    c = Client(daemon.sock)
    c.call("Run", req)                          # compiled and cached
    lock = _hold_core(daemon.sock)
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("r", c.call("Run", req, timeout=60)))
    t.start()
    try:
        end = time.monotonic() + 10
        while not any(j.state == "queued" and j.kind == "run" for j in c.call("Jobs", pb.JobsRequest()).jobs):
            assert time.monotonic() < end, "the Run was not queued"
            time.sleep(0.02)
        old = c.status().pid
        daemon.term()
        lock.kill()
        lock.wait()
        assert daemon.wait() == 0
        daemon.start()
        t.join(30)
    finally:
        lock.kill()
    r = box["r"]
    from nkid.client import from_wire
    np.testing.assert_array_equal(from_wire(r.outputs[0]), want)
    assert c.status().pid != old


def _cut_after_send(daemon, method, request):
    """Send a call to a stopped nkid (SIGSTOP: the request sits in the
    socket), kill nkid (the connection is cut: the call may have run, as
    far as the client knows), start a new nkid; what the call returned or
    raised, and the new nkid's count of calls of method."""
    daemon.start()
    c = Client(daemon.sock)
    c.ping()                                    # the connection is open
    os.kill(daemon.proc.pid, signal.SIGSTOP)
    box = {}

    def call():
        try:
            box["reply"] = c.call(method, request, timeout=30)
        except NkidError as e:
            box["err"] = e
        box["t"] = time.monotonic()
    t = threading.Thread(target=call)
    t.start()
    time.sleep(0.3)                             # the request is written
    assert t.is_alive()
    daemon.kill()
    restarted = time.monotonic()
    daemon.start()
    t.join(30)
    n = sum(m.calls for m in c.status().counters.methods if m.method == method)
    return box, restarted, n


def test_non_idempotent_call_cut_after_send_is_not_sent_again(daemon):
    box, restarted, n = _cut_after_send(daemon, "CachePin",
                                        pb.CachePinRequest(keys=["0" * 64]))
    e = box.get("err")
    assert e is not None, "CachePin was sent again after it may have run: %r" % box
    assert e.code == "UNAVAILABLE"
    assert n == 0, "the new nkid saw %d CachePin calls" % n


def test_idempotent_call_cut_after_send_is_sent_again(daemon):
    box, restarted, n = _cut_after_send(daemon, "Lookup",
                                        pb.LookupRequest(ir_digest="0" * 64, format="nkir/1"))
    assert "reply" in box, "Lookup was not sent again: %r" % box.get("err")
    assert n == 1


def test_no_wait_where_no_nkid_ever_ran(tmp_path, monkeypatch):
    """A socket path with neither socket nor lock file fails at once."""
    monkeypatch.delenv("NKID_RECONNECT_TIMEOUT", raising=False)
    c = Client(str(tmp_path / "never.sock"))
    t0 = time.monotonic()
    with pytest.raises(NkidError) as ei:
        c.ping()
    assert time.monotonic() - t0 < 1
    assert "after waiting" not in str(ei.value)


def test_reconnect_timeout_bounds_the_wait(tmp_path, monkeypatch):
    """A lock file left by a nkid that does not come back: the call waits
    NKID_RECONNECT_TIMEOUT seconds, then says so."""
    sock = str(tmp_path / "gone.sock")
    open(sock + ".lock", "w").close()
    monkeypatch.setenv("NKID_RECONNECT_TIMEOUT", "0.5")
    c = Client(sock)
    t0 = time.monotonic()
    with pytest.raises(NkidError) as ei:
        c.ping()
    took = time.monotonic() - t0
    assert 0.45 < took < 3, took
    assert "after waiting 0.5 s for it (NKID_RECONNECT_TIMEOUT)" in str(ei.value)
    monkeypatch.setenv("NKID_RECONNECT_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="NKID_RECONNECT_TIMEOUT must be a number"):
        c.ping()


def test_idempotency_table_matches_the_proto():
    """Every method of the service is decided: idempotent or not."""
    from nkid import _retry
    names = {m.name for m in pb.DESCRIPTOR.services_by_name["Nkid"].methods}
    assert _retry.IDEMPOTENT <= names
    assert names - _retry.IDEMPOTENT == {"Lease", "Cancel", "CachePin", "CacheRemove",
                                         "CacheImport", "CachePush", "CachePull"}
    assert not _retry.idempotent("CacheStat", pb.CacheStatRequest(zero=True))
    assert _retry.idempotent("CacheStat", pb.CacheStatRequest())


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))


def test_new_socket_gets_a_new_channel(daemon):
    """nkid killed (its socket left behind, refusing) and a new one started
    at the same path (no systemd): a client whose channel saw the refusals
    is served by the new nkid as soon as it is up, not after gRPC's
    reconnect backoff (which the blocking API advances only during a
    call)."""
    daemon.start()
    c = Client(daemon.sock)
    old = c.status().pid
    daemon.kill()
    for _ in range(20):                         # the channel sees refusals
        with pytest.raises(grpc.RpcError):
            c._stub.Ping(pb.PingRequest(), timeout=0.5)
        time.sleep(0.01)
    daemon.start()
    t0 = time.monotonic()
    assert c.status().pid not in (0, old)
    took = time.monotonic() - t0
    assert took < 1.5, "%.2f s to reach the new nkid" % took
