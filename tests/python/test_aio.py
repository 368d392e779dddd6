"""nkid.aio against a real nkid: kernels and RPCs awaited on one event
loop, many at once; grpc.aio under the client's GRPC_EXPERIMENTS; errors
as the blocking client raises them; a restart waited out."""

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

import nkid
import nkid.aio
from nkid import nki
from nkid._proto import nkid_pb2 as pb
import nkid.nki.language as nl

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
NKID = os.path.abspath(os.environ.get("NKID") or os.path.join(ROOT, "build", "bin", "nkid"))
sys.path.insert(0, HERE)
from kernels import elementwise as ew  # noqa: E402


@nki.jit
def scale_add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.load(a) * 2.0 + nl.load(b))
    return out


def test_rpcs_awaited(nkid_socket):
    async def main():
        async with nkid.aio.Client() as c:
            assert c.socket == nkid_socket
            assert await c.ping(b"hello") == b"hello"
            st = await c.status()
            assert st.pid > 0 and st.socket == nkid_socket
            lk = await c.lookup("0" * 64, "nkir/1")
            assert not lk.found
    asyncio.run(main())


def test_kernel_call_matches_numpy_and_the_blocking_door(nkid_socket):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((256, 1024), dtype=np.float32)
    b = rng.standard_normal((256, 1024), dtype=np.float32)

    async def main():
        return await nkid.aio.call(ew.add_tiled, a, b)
    got = asyncio.run(main())
    np.testing.assert_array_equal(got, a + b)
    np.testing.assert_array_equal(got, ew.add_tiled(a, b))


def test_hundred_concurrent_calls_on_one_loop(nkid_socket):
    """100 calls in flight at once on one thread, every result its own."""
    rng = np.random.default_rng(11)
    xs = [rng.standard_normal((128, 8), dtype=np.float32) for _ in range(100)]
    ys = [rng.standard_normal((128, 8), dtype=np.float32) for _ in range(100)]
    threads = []

    async def main():
        import threading
        await nkid.aio.call(scale_add, xs[0], ys[0])        # traced, compiled
        before = threading.active_count()
        t0 = time.monotonic()
        outs = await asyncio.gather(*(nkid.aio.call(scale_add, x, y)
                                      for x, y in zip(xs, ys)))
        threads.append(threading.active_count() - before)
        return outs, time.monotonic() - t0
    outs, took = asyncio.run(main())
    for x, y, o in zip(xs, ys, outs):
        np.testing.assert_allclose(o, x * 2.0 + y, rtol=1e-6)
    assert threads[0] <= 2, "%d threads started for 100 calls" % threads[0]


def test_large_tensors_through_shared_memory(nkid_socket, monkeypatch):
    """Above the threshold, inputs and outputs travel through /dev/shm, as
    for nki.baremetal; concurrent calls each get their own regions."""
    monkeypatch.setenv("NKID_SHM_THRESHOLD", "65536")
    rng = np.random.default_rng(5)
    pairs = [(rng.standard_normal((256, 1024), dtype=np.float32),
              rng.standard_normal((256, 1024), dtype=np.float32)) for _ in range(6)]

    async def main():
        return await asyncio.gather(*(nkid.aio.call(ew.add_tiled, a, b) for a, b in pairs))
    for (a, b), o in zip(pairs, asyncio.run(main())):
        np.testing.assert_array_equal(o, a + b)


def test_compile_and_errors_as_the_blocking_client(nkid_socket):
    from nkid.client import kernel_ref
    from nkid.tracer import trace
    x = np.zeros((128, 8), np.float32)
    traced = trace(scale_add.func, (x, x), {}, ())

    async def main():
        c = nkid.aio.get_client()
        assert c is nkid.aio.get_client()
        rep = await c.compile(kernel_ref(traced))
        assert rep.neff_key
        lk = await c.lookup(traced.ir_digest, traced.format)
        assert lk.found and lk.neff_key == rep.neff_key
        with pytest.raises(nkid.NkidError) as ei:
            await c.run(pb.KernelRef(neff_key="f" * 64), [])
        return ei.value
    e = asyncio.run(main())
    assert e.code in ("NOT_FOUND", "INVALID_ARGUMENT")


def test_bad_dtype_refused_before_sending(nkid_socket):
    a = np.zeros((128, 8), np.float64)

    async def main():
        await nkid.aio.call(scale_add, a, a)
    with pytest.raises(TypeError, match="float64"):
        asyncio.run(main())


def test_unreachable(tmp_path, monkeypatch):
    monkeypatch.delenv("NKID_RECONNECT_TIMEOUT", raising=False)

    async def main():
        async with nkid.aio.Client(str(tmp_path / "none.sock")) as c:
            await c.ping()
    with pytest.raises(nkid.NkidConnectionError, match="the socket does not exist"):
        asyncio.run(main())


def test_calls_wait_out_a_restart():
    """16 tasks calling in a loop while nkid restarts twice: none fails."""
    if not os.path.exists(NKID):
        pytest.skip("%s does not exist" % NKID)
    with tempfile.TemporaryDirectory(prefix="nkid-aio-") as d:
        sock = os.path.join(d, "nkid.sock")
        log = open(os.path.join(d, "nkid.log"), "ab")

        def start():
            p = subprocess.Popen([NKID, "-s", sock, "--state-dir", os.path.join(d, "st")],
                                 stdout=log, stderr=subprocess.STDOUT)
            end = time.monotonic() + 15
            while not os.path.exists(sock):
                assert p.poll() is None and time.monotonic() < end
                time.sleep(0.01)
            return p
        proc = start()
        a = np.ones((128, 8), np.float32)
        try:
            async def main():
                c = nkid.aio.Client(sock)
                stop = asyncio.Event()
                counts = []

                async def worker():
                    n = 0
                    while not stop.is_set():
                        await c.call_kernel(scale_add, a, a)
                        n += 1
                    counts.append(n)
                tasks = [asyncio.create_task(worker()) for _ in range(16)]
                await asyncio.sleep(0.5)
                nonlocal proc
                for _ in range(2):
                    proc.send_signal(signal.SIGTERM)
                    await asyncio.get_running_loop().run_in_executor(None, proc.wait)
                    proc = start()
                    await asyncio.sleep(0.4)
                stop.set()
                await asyncio.gather(*tasks)
                await c.close()
                return counts
            counts = asyncio.run(main())
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait()
        assert len(counts) == 16 and min(counts) > 0


def test_new_socket_gets_a_new_channel():
    """nkid killed (its socket left, refusing) and started again at the same
    path: the asyncio client reaches the new nkid as soon as it is up."""
    if not os.path.exists(NKID):
        pytest.skip("%s does not exist" % NKID)
    import grpc
    with tempfile.TemporaryDirectory(prefix="nkid-aio-") as d:
        sock = os.path.join(d, "nkid.sock")
        log = open(os.path.join(d, "nkid.log"), "ab")
        argv = [NKID, "-s", sock, "--state-dir", os.path.join(d, "st")]

        def start():
            p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
            end = time.monotonic() + 15
            while not os.path.exists(sock):
                assert p.poll() is None and time.monotonic() < end
                time.sleep(0.01)
            return p
        procs = [start()]
        try:
            async def main():
                async with nkid.aio.Client(sock) as c:
                    old = (await c.status()).pid
                    procs[0].kill()
                    procs[0].wait()
                    for _ in range(20):             # the channel sees refusals
                        with pytest.raises(grpc.aio.AioRpcError):
                            await c._stub.Ping(pb.PingRequest(), timeout=0.5)
                        await asyncio.sleep(0.01)
                    procs.append(start())
                    t0 = time.monotonic()
                    pid = (await c.status()).pid
                    return old, pid, time.monotonic() - t0
            old, pid, took = asyncio.run(main())
        finally:
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
                    p.wait()
        assert pid not in (0, old)
        assert took < 1.5, "%.2f s to reach the new nkid" % took
