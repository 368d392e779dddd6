"""The asyncio client of nkid: await calls without a thread per call.

::

    import asyncio, numpy as np
    import nkid.aio
    from nkid import nki

    @nki.jit
    def add(a, b): ...

    async def main():
        out = await nkid.aio.call(add, x, y)        # a kernel, as nki.baremetal runs it
        st = await nkid.aio.get_client().status()   # any RPC
        outs = await asyncio.gather(*(nkid.aio.call(add, x, y) for _ in range(100)))

Calls ride one ``grpc.aio`` channel per event loop and socket
(:func:`get_client`); many may be in flight at once.  Deadlines, errors
(:class:`nkid.NkidError`), socket discovery and the wait for a restarting
nkid are those of the blocking client (docs/python.md, "asyncio";
nkid/_retry.py).  Tracing (once per specialization) and the conversion of
arrays run on the event loop's thread.
"""

import asyncio
import os
import threading
import time

from . import client as _client     # sets GRPC_EXPERIMENTS before grpc starts
import grpc  # noqa: E402
import numpy as np  # noqa: E402

from . import _retry, _shm  # noqa: E402
from ._proto import nkid_pb2 as pb  # noqa: E402
from ._proto import nkid_pb2_grpc as pb_grpc  # noqa: E402
from .client import CHANNEL_OPTIONS, call_timeout, from_wire, kernel_ref, \
    socket_path, to_wire  # noqa: E402
from .errors import NkidError  # noqa: E402

__all__ = ["Client", "get_client", "call"]


class Client:
    """An asyncio connection to nkid on ``socket`` (default:
    :func:`nkid.client.socket_path`), bound to the event loop that first
    uses it.  ``async with Client() as c:`` closes it at the end."""

    def __init__(self, socket=None):
        self.socket = socket or socket_path()
        self._target = "unix:" + os.path.abspath(self.socket)
        self._served = False
        self._inflight = {}          # channel -> calls in flight on it
        self._old = []               # replaced channels, closed when idle
        self._channel = None
        self._connect()

    def _connect(self):
        if self._channel is not None:
            self._old.append(self._channel)
        self._channel = grpc.aio.insecure_channel(self._target,
                                                  options=CHANNEL_OPTIONS)
        self._stub = pb_grpc.NkidStub(self._channel)
        self._inflight[self._channel] = 0

    async def _reap(self):
        """Close the replaced channels that no call uses any more."""
        for ch in [c for c in self._old if self._inflight.get(c, 0) == 0]:
            self._old.remove(ch)
            self._inflight.pop(ch, None)
            await ch.close()

    async def close(self):
        for ch in self._old + [self._channel]:
            await ch.close()
        self._old = []
        self._inflight = {}

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()
        return False

    def _unreachable(self, detail, waited):
        return _client.Client._unreachable(self, detail, waited)

    def _failure(self, method, code, details, why, timeout, waited):
        return _client.Client._failure(self, method, code, details, why, timeout, waited)

    async def call(self, method, request, timeout=None):
        """Await an RPC by name with a deadline of timeout seconds (None:
        :func:`nkid.client.call_timeout`); failures raise NkidError, and
        nkid restarting is waited for as by the blocking client."""
        if timeout is None:
            timeout = call_timeout()
        t0 = time.monotonic()
        deadline = None if timeout is None else t0 + timeout
        backoff = None
        while True:
            code = None
            trailing = None
            stub = self._stub
            if not os.path.exists(self.socket):
                why, details = "unreached", "No such file or directory"
            else:
                ch = self._channel
                left = timeout if backoff is None or deadline is None else \
                    max(deadline - time.monotonic(), 0.001)
                self._inflight[ch] = self._inflight.get(ch, 0) + 1
                try:
                    reply = await getattr(stub, method)(request, timeout=left)
                    self._served = True
                    return reply
                except grpc.aio.AioRpcError as e:
                    code, details = e.code(), e.details()
                    trailing = e.trailing_metadata()
                    why = _retry.classify(method, request, code.name, details, trailing)
                finally:
                    self._inflight[ch] = self._inflight.get(ch, 1) - 1
            if why is not None and (why != "unreached" or
                                    _retry.nkid_expected(self.socket, self._served)):
                if backoff is None:
                    backoff = _retry.Backoff(deadline)
                w = backoff.next()
                if w is not None:
                    await asyncio.sleep(w)
                    if why == "unreached" and os.path.exists(self.socket) and \
                            self._stub is stub:
                        self._connect()
                    await self._reap()
                    continue
            waited = backoff.waited() if backoff is not None and backoff.tries else 0.0
            raise self._failure(method, code, details, why, timeout, waited)

    # -- the RPCs, as the blocking client has them
    async def ping(self, payload=b""):
        return (await self.call("Ping", pb.PingRequest(payload=payload), timeout=10)).payload

    async def status(self):
        return await self.call("Status", pb.StatusRequest(), timeout=10)

    async def run(self, ref, inputs, core=-1, job_class=pb.JOB_CLASS_INTERACTIVE,
                  return_neff=False, output_shm=None):
        """Run a kernel; the RunReply (outputs still on the wire)."""
        return await self.call("Run", pb.RunRequest(
            ref=ref, inputs=inputs, core=core, job_class=job_class,
            return_neff=return_neff, output_shm=output_shm))

    async def simulate(self, ref, inputs, output_shm=None):
        return await self.call("Simulate", pb.SimulateRequest(ref=ref, inputs=inputs,
                                                              output_shm=output_shm))

    async def benchmark(self, ref, inputs, warmup=10, iters=100, core=-1, return_neff=False):
        return await self.call("Benchmark", pb.BenchmarkRequest(
            ref=ref, inputs=inputs, warmup=warmup, iters=iters, core=core,
            return_neff=return_neff))

    async def profile(self, ref, inputs, num_execs=1, profile_nth=1, core=-1, output_shm=None):
        return await self.call("Profile", pb.ProfileRequest(
            ref=ref, inputs=inputs, num_execs=num_execs, profile_nth=profile_nth, core=core,
            output_shm=output_shm))

    async def compile(self, ref, return_neff=False):
        return await self.call("Compile", pb.CompileRequest(ref=ref, return_neff=return_neff))

    async def lookup(self, ir_digest, format, target="", options=""):
        return await self.call("Lookup", pb.LookupRequest(
            ir_digest=ir_digest, format=format, target=target or "", options=options or ""),
            timeout=30)

    # -- kernels
    async def call_kernel(self, kernel, *args, **kwargs):
        """Run ``kernel(*args, **kwargs)`` on numpy arrays as
        ``nki.baremetal`` does (Run on a core; large tensors through shared
        memory) and return its outputs."""
        return await _call_kernel(self, kernel, args, kwargs)


_clients = {}
_lock = threading.Lock()


def get_client(socket=None):
    """The running event loop's client for ``socket`` (default: NKID_SOCKET,
    else /run/nkid/nkid.sock), made on first use in that loop (and again
    after fork)."""
    loop = asyncio.get_running_loop()
    key = (os.getpid(), id(loop), socket or socket_path())
    c = _clients.get(key)
    if c is None or c[0] is not loop:
        with _lock:
            c = _clients[key] = (loop, Client(key[2]))
        # Forget the clients of loops that are gone.
        for k, (lp, _) in list(_clients.items()):
            if lp.is_closed():
                _clients.pop(k, None)
    return c[1]


async def call(kernel, *args, **kwargs):
    """Await ``kernel(*args, **kwargs)`` through nkid with the running
    loop's client (:func:`get_client`): the kernel (what ``nki.jit`` or
    ``nki.baremetal`` returned, or a plain kernel function) runs as
    ``nki.baremetal`` runs it, on numpy arrays; its return value (an array,
    or a tuple of arrays; None-returning kernels write their parameters, as
    in NKI)."""
    return await _call_kernel(get_client(), kernel, args, kwargs)


# ------------------------------------------------------------ kernels

_kernels = {}


def _baremetal(kernel):
    """The BaremetalKernel that runs kernel, one per kernel object."""
    from .nki._numpy_kernel import BaremetalKernel
    if isinstance(kernel, BaremetalKernel):
        return kernel
    k = _kernels.get(id(kernel))
    if k is None or k[0] is not kernel:
        k = _kernels[id(kernel)] = (kernel, BaremetalKernel(kernel))
    return k[1]


async def _call_kernel(client, kernel, args, kwargs):
    from .nki import _numpy_kernel as nk
    bk = _baremetal(kernel)
    nk.check_dtypes(bk.func, args, kwargs)
    traced = bk.specialize(args, kwargs)
    arrays = nk.array_args(bk.func, args, kwargs)
    tx = _shm.Transfer(client.socket)
    ok = False
    try:
        inputs = []
        for (name, _, _), a in zip(traced.params, arrays):
            if not isinstance(a, np.ndarray) and hasattr(a, "zeros"):
                a = a.zeros()                       # a placeholder: zeros
            inputs.append(tx.wire(name, a, to_wire))
        tx.expect(traced.outputs)
        tx.seal()
        try:
            reply = await _run(client, bk, traced, inputs, tx.output_shm)
        except NkidError as e:
            if not tx.refused(e):
                raise
            reply = await _run(client, bk, traced, inputs, None)
        res = [tx.result(t, from_wire) for t in reply.outputs]
        out = nk._returned(traced, res, arrays)
        ok = True
        return out
    finally:
        tx.close(reuse=ok)


async def _run(client, bk, traced, inputs, output_shm):
    """Run with the NEFF key when nkid has one for this IR (Lookup once),
    else with the IR; a key nkid no longer has falls back to the IR."""
    from .nki import _numpy_kernel as nk
    lk = (traced.ir_digest, bk.platform_target or "", bk.additional_compile_opt or "")
    key = nk._neff_keys.get(lk)
    if key is None and lk not in nk._looked_up:
        nk._looked_up.add(lk)
        try:
            rep = await client.lookup(traced.ir_digest, traced.format, lk[1], lk[2])
            if rep.found:
                key = nk._neff_keys[lk] = rep.neff_key
        except NkidError as e:
            if e.code != "UNIMPLEMENTED":
                raise
    def ir_ref():
        return kernel_ref(traced, bk.platform_target, bk.additional_compile_opt,
                          retry_failed=bk.retry_failed)
    ref = pb.KernelRef(neff_key=key, target=lk[1], options=lk[2],
                       retry_failed=bk.retry_failed) if key else ir_ref()
    try:
        reply = await client.run(ref, inputs, output_shm=output_shm)
    except NkidError as e:
        if not ref.neff_key or e.code not in ("NOT_FOUND", "FAILED_PRECONDITION") \
                or "shared-memory region" in str(e):
            raise
        nk._neff_keys.pop(lk, None)
        reply = await client.run(ir_ref(), inputs, output_shm=output_shm)
    if reply.neff_key:
        nk._neff_keys[lk] = reply.neff_key
    return reply
