"""The gRPC client against the real nkid: round trips, a 16 MiB tensor,
INVALID_ARGUMENT verbatim with the kernel's file:line, and the message of
a daemon that cannot be reached."""

import inspect
import os

import numpy as np
import pytest

import nkid
from nkid import nki
from nkid.client import Client, get_client
from kernels import elementwise as ew


def test_ping(nkid_socket):
    assert Client().ping(b"abc") == b"abc"


def test_run_and_simulate_roundtrip(nkid_socket):
    a = np.random.rand(256, 1024).astype(np.float32)
    np.testing.assert_allclose(ew.add_tiled(a, a), a + a)
    np.testing.assert_allclose(nki.simulate_kernel(ew.add_tiled, a, a), a + a)


def test_large_tensor(nkid_socket):
    a = np.ones((1024, 4096), np.float32)         # 16 MiB each way
    out = ew.add_tiled(a, a)
    assert out.shape == a.shape and (out == 2).all()


def test_invalid_argument_is_verbatim(nkid_socket):
    src, start = inspect.getsourcelines(ew.wide_partition.func)
    line = start + next(i for i, s in enumerate(src) if "big = nl.load" in s)
    with pytest.raises(nkid.NkidError) as e:
        ew.wide_partition(np.zeros((256, 64), np.float32))
    assert e.value.code == "INVALID_ARGUMENT"
    assert str(e.value) == ("cannot compile 'wide_partition': Size of partition dimension 256"
                            " exceeds architecture limitation of 128 (elementwise.py:%d)"
                            % line)
    assert e.value.full_message.endswith("(%s:%d)" % (ew.__file__, line))


def test_client_per_process_and_socket(nkid_socket):
    assert get_client() is get_client()
    assert get_client().socket == os.environ["NKID_SOCKET"]


def test_unreachable_daemon_error(tmp_path, monkeypatch):
    sock = str(tmp_path / "missing.sock")
    monkeypatch.setenv("NKID_SOCKET", sock)
    with pytest.raises(nkid.NkidConnectionError) as e:
        Client().ping()
    msg = str(e.value)
    assert msg.startswith("cannot connect to nkid at %s (the socket does not exist" % sock)
    assert "systemctl status nkid" in msg and "NKID_SOCKET" in msg
    assert e.value.code == "UNAVAILABLE"
    assert isinstance(e.value, nkid.NkidError) and isinstance(e.value, RuntimeError)


def test_unreachable_daemon_stale_socket(tmp_path, monkeypatch):
    import socket
    path = str(tmp_path / "stale.sock")
    s = socket.socket(socket.AF_UNIX)
    s.bind(path)
    s.close()                                    # the file stays, nobody listens
    monkeypatch.setenv("NKID_SOCKET", path)
    monkeypatch.setenv("NKID_RECONNECT_TIMEOUT", "0")  # no wait for a restart
    with pytest.raises(nkid.NkidConnectionError) as e:
        Client().ping()
    assert "the socket exists but nothing accepted the connection" in str(e.value)


# ---------------------------------------------------------------- deadlines


def test_default_deadline_and_nkid_timeout(monkeypatch):
    from nkid.client import call_timeout, DEFAULT_TIMEOUT
    monkeypatch.delenv("NKID_TIMEOUT", raising=False)
    assert call_timeout() == DEFAULT_TIMEOUT == 600.0
    monkeypatch.setenv("NKID_TIMEOUT", "2.5")
    assert call_timeout() == 2.5
    for none in ("0", "inf", "none"):
        monkeypatch.setenv("NKID_TIMEOUT", none)
        assert call_timeout() is None
    for bad in ("abc", "-1", "nan"):
        monkeypatch.setenv("NKID_TIMEOUT", bad)
        with pytest.raises(ValueError) as e:
            call_timeout()
        assert str(e.value) == ("NKID_TIMEOUT must be a number of seconds (0: no deadline),"
                                " got '%s'" % bad)


def test_deadline_exceeded_names_nkid_timeout(nkid_socket, monkeypatch):
    import subprocess
    import time
    nkictl = os.environ.get("NKICTL") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
        "build", "bin", "nkictl")
    if not os.path.exists(nkictl):
        pytest.skip("%s does not exist (run make, or set NKICTL)" % nkictl)
    a = np.ones((128, 512), np.float32)
    ew.add_tiled(a, a)                           # compiled: only the wait is left
    # The core is held by a lease, so Run waits in the queue past the deadline.
    lock = subprocess.Popen([nkictl, "-s", nkid_socket, "lock", "--", "sleep", "30"])
    try:
        deadline = time.monotonic() + 10
        while b"lease" not in subprocess.run([nkictl, "-s", nkid_socket, "jobs"],
                                              capture_output=True).stdout:
            assert time.monotonic() < deadline, "the lease was not granted"
            time.sleep(0.05)
        monkeypatch.setenv("NKID_TIMEOUT", "0.3")
        with pytest.raises(nkid.NkidError) as e:
            ew.add_tiled(a, a)
        assert e.value.code == "DEADLINE_EXCEEDED"
        assert str(e.value) == ("Run: no answer from nkid within 0.3 s (Deadline Exceeded);"
                                " set NKID_TIMEOUT to wait longer")
    finally:
        lock.terminate()
        lock.wait()
    monkeypatch.setenv("NKID_TIMEOUT", "30")
    np.testing.assert_array_equal(ew.add_tiled(a, a), a + a)


_GRPC_PROBE = ("import os, sys; import nkid.client as c; "
               "print(repr(os.environ.get('GRPC_EXPERIMENTS'))); "
               "print(c.Client(sys.argv[1]).ping(b'ee') == b'ee')")


@pytest.mark.parametrize("env,want", [
    (None, "'-event_engine_client'"),   # the calling thread polls the socket
    ("", "''"),                         # an empty value keeps grpcio's defaults
    ("-event_engine_listener", "'-event_engine_listener'"),   # the user's own
])
def test_grpc_experiments_default(nkid_socket, env, want):
    """Importing the client turns grpcio's EventEngine client off unless the
    process set GRPC_EXPERIMENTS itself; calls work either way."""
    import subprocess
    import sys
    e = dict(os.environ)
    e.pop("GRPC_EXPERIMENTS", None)
    if env is not None:
        e["GRPC_EXPERIMENTS"] = env
    out = subprocess.run([sys.executable, "-c", _GRPC_PROBE, nkid_socket], env=e,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [want, "True"]
