"""Zero-copy tensors through /dev/shm against the real nkid: round trips
equal numpy, nkid's refusals (another uid's region, a symlink, a name that
is not one file, a region too small) and the client's cleanup."""

import os
import subprocess
import sys
import secrets

import numpy as np
import pytest

from nkid import _shm, nki
from nkid._proto import nkid_pb2 as pb
from nkid.client import Client, kernel_ref
from nkid.errors import NkidError
from nkid.nki._numpy_kernel import BaremetalKernel
from kernels.copy import copy_tiles
from kernels import elementwise as ew

SHAPE = (128, 512)                 # 256 KiB of float32: one tile
NBYTES = 128 * 512 * 4


def _func(k):
    return getattr(k, "func", k)


def _mine():
    pre = "nkid.%d.%d." % (os.geteuid(), os.getpid())
    return sorted(n for n in os.listdir(_shm.DIR) if n.startswith(pre))


@pytest.fixture
def ref(nkid_socket):
    """A KernelRef for copy_tiles on one [128, 512] float32 tile."""
    k = BaremetalKernel(_func(copy_tiles))
    traced = k.specialize((np.zeros(SHAPE, np.float32),), {})
    return kernel_ref(traced)


@pytest.fixture
def region():
    """Make files /dev/shm/nkid.test.<random>; removed afterwards."""
    made = []

    def make(data=b"", name=None, size=None):
        name = name or "nkid.test.%s" % secrets.token_hex(6)
        path = os.path.join(_shm.DIR, name)
        with open(path, "wb") as f:
            f.write(data)
            if size is not None:
                f.truncate(size)
        made.append(path)
        return name, path
    yield make
    for p in made:
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass


def _run(ref, name, offset=0, size=NBYTES, output_shm=None):
    t = pb.Tensor(name="x", dtype="float32", shape=list(SHAPE),
                  shm=pb.ShmRegion(name=name, offset=offset, size=size))
    return Client().call("Run", pb.RunRequest(ref=ref, inputs=[t], core=-1,
                                              output_shm=output_shm))


def test_large_round_trip_through_shm(nkid_socket):
    x = np.random.rand(4096, 4096).astype(np.float32)          # 64 MiB each way
    k = BaremetalKernel(_func(copy_tiles))
    y = k(x)
    np.testing.assert_array_equal(y, x)
    out = k.last_reply.outputs[0]
    assert out.HasField("shm") and out.data == b"" and out.shm.size == x.nbytes
    # Two inputs in one region, output through shm; simulate too.
    a = np.random.rand(1024, 1024).astype(np.float32)
    b = np.random.rand(1024, 1024).astype(np.float32)
    np.testing.assert_allclose(ew.add_tiled(a, b), a + b)
    np.testing.assert_allclose(nki.simulate_kernel(ew.add_tiled, a, b), a + b)
    # Results stay valid after later calls (their mapping is theirs).
    x2 = x + 1
    y2 = k(x2)
    np.testing.assert_array_equal(y, x)
    np.testing.assert_array_equal(y2, x2)
    y[0, 0] = -1                                   # writable, private to us


def test_below_threshold_and_disabled_stay_inline(nkid_socket, monkeypatch):
    k = BaremetalKernel(_func(copy_tiles))
    small = np.random.rand(128, 512).astype(np.float32)[:, :256].copy()
    x = np.random.rand(1024, 1024).astype(np.float32)
    monkeypatch.setenv("NKID_SHM_THRESHOLD", str(x.nbytes + 1))
    np.testing.assert_array_equal(k(x), x)
    assert k.last_reply.outputs[0].data and not k.last_reply.outputs[0].HasField("shm")
    monkeypatch.delenv("NKID_SHM_THRESHOLD")
    monkeypatch.setenv("NKID_SHM", "0")
    np.testing.assert_array_equal(k(x), x)
    assert not k.last_reply.outputs[0].HasField("shm")
    assert small.nbytes < _shm.threshold()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file away")
def test_region_of_another_uid_is_refused(ref, region):
    name, path = region(b"\0" * NBYTES)
    os.chown(path, 65534, 65534)
    with pytest.raises(NkidError) as e:
        _run(ref, name)
    assert e.value.code == "PERMISSION_DENIED"
    assert name in str(e.value) and "uid 65534" in str(e.value)
    # The same for the output region.
    mine, _ = region(b"\0" * NBYTES)
    with pytest.raises(NkidError) as e:
        _run(ref, mine, output_shm=pb.ShmRegion(name=name, offset=0, size=NBYTES))
    assert e.value.code == "PERMISSION_DENIED" and name in str(e.value)


def test_symlink_is_refused(ref, region):
    real, real_path = region(b"\0" * NBYTES)
    link = "nkid.test.%s" % secrets.token_hex(6)
    link_path = os.path.join(_shm.DIR, link)
    os.symlink(real_path, link_path)
    try:
        with pytest.raises(NkidError) as e:
            _run(ref, link)
        assert e.value.code == "INVALID_ARGUMENT"
        assert "symbolic link" in str(e.value) and link in str(e.value)
    finally:
        os.unlink(link_path)


@pytest.mark.parametrize("name", ["nkid./../etc/passwd", "../nkid.x", "nkid.a/b", "..",
                                  "nkid.", "nkid.x\n", "other.name", "nkid." + "a" * 200,
                                  "/dev/shm/nkid.x", ""])
def test_bad_names_are_refused(ref, name):
    with pytest.raises(NkidError) as e:
        _run(ref, name)
    assert e.value.code == "INVALID_ARGUMENT"
    with pytest.raises(NkidError) as e:
        Client().call("Run", pb.RunRequest(
            ref=ref, core=-1, inputs=[pb.Tensor(name="x", dtype="float32", shape=list(SHAPE),
                                                data=b"\0" * NBYTES)],
            output_shm=pb.ShmRegion(name=name, offset=0, size=NBYTES)))
    assert e.value.code == "INVALID_ARGUMENT"


def test_region_too_small_is_refused(ref, region):
    name, _ = region(b"\0" * 1000)
    with pytest.raises(NkidError) as e:
        _run(ref, name)
    assert e.value.code == "INVALID_ARGUMENT" and "too small" in str(e.value)
    big, _ = region(size=NBYTES)
    with pytest.raises(NkidError) as e:
        _run(ref, big, offset=2 ** 64 - 8)
    assert e.value.code == "INVALID_ARGUMENT" and "overflows" in str(e.value)
    with pytest.raises(NkidError) as e:
        _run(ref, big, size=NBYTES - 4)                 # size != shape x dtype
    assert e.value.code == "INVALID_ARGUMENT"
    with pytest.raises(NkidError) as e:
        _run(ref, "nkid.test.missing-%s" % secrets.token_hex(4))
    assert e.value.code == "NOT_FOUND"


def test_hand_built_request_with_output_region(ref, region):
    x = np.random.rand(*SHAPE).astype(np.float32)
    name, _ = region(x.tobytes())
    out, out_path = region(size=64 + NBYTES)
    rep = _run(ref, name, output_shm=pb.ShmRegion(name=out, offset=1, size=63 + NBYTES))
    t = rep.outputs[0]
    assert t.HasField("shm") and t.shm.name == out and t.shm.offset == 64
    with open(out_path, "rb") as f:
        f.seek(64)
        np.testing.assert_array_equal(np.frombuffer(f.read(NBYTES), np.float32).reshape(SHAPE), x)
    # Too small for the outputs: they come inline.
    rep = _run(ref, name, output_shm=pb.ShmRegion(name=out, offset=1, size=NBYTES))
    assert not rep.outputs[0].HasField("shm")
    np.testing.assert_array_equal(np.frombuffer(rep.outputs[0].data, np.float32).reshape(SHAPE), x)
    # Benchmark takes shm inputs too.
    rep = Client().call("Benchmark", pb.BenchmarkRequest(
        ref=ref, warmup=0, iters=2, core=-1,
        inputs=[pb.Tensor(name="x", dtype="float32", shape=list(SHAPE),
                          shm=pb.ShmRegion(name=name, offset=0, size=NBYTES))]))
    assert len(rep.samples_us) == 2


def test_regions_are_reused_and_bounded(nkid_socket, monkeypatch):
    _shm.release_all()
    x = np.random.rand(1024, 1024).astype(np.float32)
    k = BaremetalKernel(_func(copy_tiles))
    out = k(x)
    # The input region is idle in the pool; the output one is held while
    # `out` views it.
    held = _mine()
    assert len(held) == 2
    np.testing.assert_array_equal(out, x)
    for _ in range(5):
        np.testing.assert_array_equal(k(x), x)    # outputs dropped at once
    assert len(_mine()) <= 3
    assert set(held) <= set(_mine())              # the same files again
    np.testing.assert_array_equal(out, x)         # never overwritten
    # A failing call and a client failing mid-call leave nothing new.
    with pytest.raises(NkidError):
        ew.wide_partition(np.zeros((256, 1024), np.float32))

    def boom(self, *a, **kw):
        raise RuntimeError("boom")
    monkeypatch.setattr(Client, "run", boom)
    before = _mine()
    with pytest.raises(RuntimeError):
        k(x)
    # A failed call's regions are unlinked, never reused: nkid may still
    # hold a job that reads or writes them.
    assert set(_mine()) < set(before)
    assert len(_mine()) <= _shm.POOL_MAX + 1
    _shm.release_all()
    del out
    assert _mine() == []


def test_no_files_left_when_the_process_exits(nkid_socket):
    code = (
        "import numpy as np, sys\n"
        "sys.path.insert(0, %r)\n"
        "from kernels.copy import copy_tiles\n"
        "from nkid.nki._numpy_kernel import BaremetalKernel\n"
        "x = np.random.rand(1024, 1024).astype(np.float32)\n"
        "k = BaremetalKernel(getattr(copy_tiles, 'func', copy_tiles))\n"
        "assert (k(x) == x).all()\n"
        "import os; print(os.getpid())\n" % os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, env=dict(os.environ, NKID_SOCKET=nkid_socket))
    pid = int(out.stdout.split()[-1])
    pre = "nkid.%d.%d." % (os.geteuid(), pid)
    assert [n for n in os.listdir(_shm.DIR) if n.startswith(pre)] == []


def test_refused_regions_fall_back_inline(nkid_socket, monkeypatch):
    x = np.random.rand(1024, 1024).astype(np.float32)
    k = BaremetalKernel(_func(copy_tiles))
    real = Client.call
    seen = []

    def refuse(self, method, request, timeout=None):
        if method == "Run" and request.inputs[0].HasField("shm"):
            seen.append(request.inputs[0].shm.name)
            raise NkidError("input 'x': no shared-memory region '%s' in /dev/shm"
                            % request.inputs[0].shm.name, "NOT_FOUND")
        return real(self, method, request, timeout)
    monkeypatch.setattr(Client, "call", refuse)
    monkeypatch.setattr(_shm, "_refused", set())
    np.testing.assert_array_equal(k(x), x)
    assert seen and not k.last_reply.outputs[0].HasField("shm")
    np.testing.assert_array_equal(k(x), x)        # off for this socket now
    assert len(seen) == 1


def test_sweep_removes_regions_of_dead_processes():
    dead = 2 ** 22 + 12345                          # above pid_max: never alive
    live = os.getppid()
    names = ["nkid.%d.%d.%s" % (os.geteuid(), pid, secrets.token_hex(4)) for pid in (dead, live)]
    for n in names:
        open(os.path.join(_shm.DIR, n), "wb").close()
    try:
        _shm.sweep()
        assert not os.path.exists(os.path.join(_shm.DIR, names[0]))
        assert os.path.exists(os.path.join(_shm.DIR, names[1]))
    finally:
        for n in names:
            try:
                os.unlink(os.path.join(_shm.DIR, n))
            except FileNotFoundError:
                pass


def test_large_inline_outputs_reuse_nkids_buffers(nkid_socket, monkeypatch):
    """Inline (NKID_SHM=0) outputs of 4 MiB come from nkid's pool of warm
    buffers (daemon/outpool.c): every reply carries its own run's data."""
    monkeypatch.setenv("NKID_SHM", "0")
    k = BaremetalKernel(_func(copy_tiles))
    xs = [np.full((1024, 1024), v, np.float32) for v in (1.0, 2.0, 3.0)]
    outs = [k(x) for x in xs for _ in range(2)]
    assert not k.last_reply.outputs[0].HasField("shm")
    for i, x in enumerate(xs):
        np.testing.assert_array_equal(outs[2 * i], x)
        np.testing.assert_array_equal(outs[2 * i + 1], x)
