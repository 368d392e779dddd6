"""Fixtures for the Python tests.

``nkid_socket`` starts the real daemon ($NKID, default build/bin/nkid) once
per session on a private socket and state directory, sets NKID_SOCKET and
stops it at the end; tests that use it are skipped only when the binary has
not been built.  Every execution test goes through it: there is no stand-in
for nkid or its executor.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
NKID = os.path.abspath(os.environ.get("NKID") or os.path.join(ROOT, "build", "bin", "nkid"))

sys.path.insert(0, HERE)


@pytest.fixture(scope="session")
def nkid_socket():
    if not os.path.exists(NKID):
        pytest.skip("%s does not exist (run make, or set NKID)" % NKID)
    tmp = tempfile.mkdtemp(prefix="nkid-pytest-")
    sock = os.path.join(tmp, "nkid.sock")
    state = os.path.join(tmp, "state")
    os.makedirs(state, exist_ok=True)
    log = open(os.path.join(tmp, "nkid.log"), "wb")
    proc = subprocess.Popen([NKID, "-s", sock, "--state-dir", state],
                            stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 15
    while not os.path.exists(sock):
        if proc.poll() is not None:
            log.close()
            with open(os.path.join(tmp, "nkid.log"), "rb") as f:
                out = f.read().decode(errors="replace")
            shutil.rmtree(tmp, ignore_errors=True)
            pytest.fail("nkid exited with status %s before creating %s:\n%s"
                        % (proc.returncode, sock, out[-4000:]))
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            shutil.rmtree(tmp, ignore_errors=True)
            pytest.fail("nkid did not create %s within 15 s" % sock)
        time.sleep(0.02)
    old = os.environ.get("NKID_SOCKET")
    os.environ["NKID_SOCKET"] = sock
    try:
        yield sock
    finally:
        if old is None:
            os.environ.pop("NKID_SOCKET", None)
        else:
            os.environ["NKID_SOCKET"] = old
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)
