"""The gRPC client of nkid.

nkid listens on a Unix socket: ``$NKID_SOCKET`` if set, else
``/run/nkid/nkid.sock``.  :func:`get_client` returns one :class:`Client` per
process and socket.  Failed calls raise :class:`nkid.NkidError` carrying the
daemon's message verbatim and the gRPC status name in ``.code``; a daemon
that cannot be reached raises :class:`nkid.NkidConnectionError`.

Every call has a deadline: ``$NKID_TIMEOUT`` seconds if set (``0`` or
``inf``: none), else :data:`DEFAULT_TIMEOUT` (600 s, what a large compile
and a wait for a busy core may take; ``nkictl`` uses the same for kernels).
A call past it raises ``NkidError`` with code ``DEADLINE_EXCEEDED``.
"""

import os
import stat
import sys
import threading
import time

# grpcio 1.85 hands a client's socket to its EventEngine, whose own threads
# read it; with that off, the thread waiting for the reply polls the socket
# itself, and a unary call to nkid took ~40% less on a 2-CPU machine
# (docs/performance.md, "The transport floor"). Unless the process chose its
# own gRPC experiments (an empty GRPC_EXPERIMENTS keeps grpcio's defaults).
# It takes effect only if gRPC has not started in this process yet, and
# applies to its every channel.
if "grpc" not in sys.modules:
    os.environ.setdefault("GRPC_EXPERIMENTS", "-event_engine_client")

import grpc  # noqa: E402
import numpy as np

from ._proto import nkid_pb2 as pb
from ._proto import nkid_pb2_grpc as pb_grpc
from .errors import NkidError, NkidConnectionError, error_for
from . import _env
from . import _retry
from . import _shm  # noqa: F401  (sweeps stale regions of dead processes at import)
from .tracer import dtypes as _dt

__all__ = ["DEFAULT_SOCKET", "DEFAULT_TIMEOUT", "TIMEOUT_ENV", "CHANNEL_OPTIONS", "socket_path",
           "call_timeout",
           "Client", "Prepared", "get_client", "to_wire", "from_wire", "kernel_ref"]

DEFAULT_SOCKET = "/run/nkid/nkid.sock"
#: Seconds a call may take unless NKID_TIMEOUT says otherwise.
DEFAULT_TIMEOUT = 600.0
#: The environment variable of the deadline, in seconds.
TIMEOUT_ENV = "NKID_TIMEOUT"
#: Client-side message limits (tensors travel inline): 2 GiB - 1.
MAX_MESSAGE = 2 ** 31 - 1
#: The options of every channel to nkid, blocking or asyncio.
CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE),
    ("grpc.max_receive_message_length", MAX_MESSAGE),
    ("grpc.enable_http_proxy", 0),
    # After nkid went away, try the socket again soon (gRPC's default
    # waits 1 s, growing to 120 s); a channel of its own (gRPC shares one
    # connection per address among a process's channels), so that a new
    # one made for a new socket connects.
    ("grpc.initial_reconnect_backoff_ms", 10),
    ("grpc.max_reconnect_backoff_ms", 100),
    ("grpc.use_local_subchannel_pool", 1),
]


def socket_path():
    """The socket nkid is expected on."""
    return _env.get("NKID_SOCKET") or DEFAULT_SOCKET


def call_timeout():
    """The deadline of a call in seconds: ``$NKID_TIMEOUT`` (``0``, ``inf``
    or ``none``: no deadline, None), else :data:`DEFAULT_TIMEOUT`."""
    raw = _env.get(TIMEOUT_ENV, "").strip()
    if raw == "":
        return DEFAULT_TIMEOUT
    if raw.lower() in ("none", "inf", "infinity"):
        return None
    try:
        v = float(raw)
    except ValueError:
        v = -1.0
    if not v >= 0 or v != v:
        raise ValueError("%s must be a number of seconds (0: no deadline), got '%s'"
                         % (TIMEOUT_ENV, raw))
    return None if v == 0 or v == float("inf") else v


def to_wire(name, arr):
    """A host array as nkid.v1.Tensor (little-endian, row-major)."""
    arr = np.asarray(arr)
    if arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    arr = np.ascontiguousarray(arr)
    return pb.Tensor(name=name, dtype=_dt.wire_name(_dt.normalize(arr.dtype)),
                     shape=list(arr.shape), data=arr.tobytes())


def from_wire(t):
    """nkid.v1.Tensor -> numpy array (ml_dtypes for bf16 and fp8); a
    tensor in shared memory needs its call's nkid._shm.Transfer.result."""
    if t.HasField("shm"):
        raise NkidError("tensor '%s' is in shared-memory region '%s': read it with the"
                        " call's Transfer" % (t.name, t.shm.name), "DATA_LOSS")
    dt = _dt.from_wire_name(t.dtype)
    shape = tuple(int(s) for s in t.shape)
    a = np.frombuffer(t.data, dtype=dt.newbyteorder("<") if dt.itemsize > 1 else dt)
    if a.size != int(np.prod(shape, dtype=np.int64)):
        raise NkidError("nkid returned %d bytes for tensor '%s' of shape %s and dtype %s"
                        % (len(t.data), t.name, list(shape), t.dtype), "DATA_LOSS")
    return a.astype(dt, copy=True).reshape(shape)


def kernel_ref(traced, target="", options="", neff_key="", retry_failed=False):
    """nkid.v1.KernelRef for a traced kernel (IR inline); retry_failed
    compiles again even if nkid has a failure cached for it."""
    k = pb.Kernel(name=traced.name, format=traced.format, ir=traced.ir,
                  source_files=traced.files)
    return pb.KernelRef(kernel=k, target=target or "", options=options or "",
                        neff_key=neff_key, retry_failed=bool(retry_failed))


class Prepared:
    """A request already serialized (``data``), sent as it is: the Run of a
    warm call plan (nkid/nki/_plan.py) is its template's bytes with the
    tensors' bytes spliced in.  ``ref`` is its KernelRef; any other field
    reads from the parsed message (for inspection, never on the hot
    path)."""

    def __init__(self, message_type, data, ref):
        self.message_type = message_type
        self.data = data
        self.ref = ref

    def SerializeToString(self):
        return self.data

    def __getattr__(self, name):
        msg = self.__dict__.get("_msg")
        if msg is None:
            msg = self.__dict__["_msg"] = self.message_type.FromString(self.data)
        return getattr(msg, name)


def _serialize(request):
    """A message's bytes, or a Prepared request's."""
    return request.SerializeToString()


class Client:
    """A connection to nkid on ``socket`` (default: :func:`socket_path`).

    A call that cannot reach nkid, or that nkid answers UNAVAILABLE marked
    retryable while it stops, waits for nkid to come back and is sent again
    (nkid/_retry.py: within the call's deadline and NKID_RECONNECT_TIMEOUT,
    default 30 s; a call that may have run only if its method is
    idempotent)."""

    def __init__(self, socket=None):
        self.socket = socket or socket_path()
        self._target = "unix:" + os.path.abspath(self.socket)
        self._chan_lock = threading.Lock()
        self._served = False
        self._connect()

    def _connect(self):
        """A new channel (and stubs) on the socket as it is now."""
        self._channel = grpc.insecure_channel(self._target, options=CHANNEL_OPTIONS)
        self._stub = pb_grpc.NkidStub(self._channel)
        # Run also takes Prepared requests.
        self._stub.Run = self._channel.unary_unary(
            "/nkid.v1.Nkid/Run", request_serializer=_serialize,
            response_deserializer=pb.RunReply.FromString)

    def _reconnect(self, stub):
        """A fresh channel, unless another thread made one since stub's: a
        channel whose connection failed waits out gRPC's backoff, polled
        only while a call runs, and may keep failing calls with its last
        error after nkid is back (a restart without systemd's socket makes
        a new socket, often with the old one's inode number).  The old
        channel goes when its last call does."""
        with self._chan_lock:
            if self._stub is stub:
                self._connect()

    def close(self):
        self._channel.close()

    def _unreachable(self, detail, waited=0.0):
        exists = os.path.exists(self.socket)
        if exists and not stat.S_ISSOCK(os.stat(self.socket).st_mode):
            why = "it is not a socket"
        elif exists:
            why = "the socket exists but nothing accepted the connection"
        else:
            why = "the socket does not exist"
        after = (" after waiting %.1f s for it (%s)" % (waited, _retry.RECONNECT_ENV)
                 if waited > 0 else "")
        return NkidConnectionError(
            "cannot connect to nkid at %s (%s: %s)%s. Is nkid running? Check"
            " `systemctl status nkid`, or start it with `nkid -s %s`; set NKID_SOCKET"
            " to use another socket." % (self.socket, why, detail, after, self.socket),
            "UNAVAILABLE")

    def call(self, method, request, timeout=None):
        """Call an RPC by name with a deadline of timeout seconds (None:
        :func:`call_timeout`); gRPC failures become NkidError.  Waits for
        nkid and sends again as nkid/_retry.py says."""
        if timeout is None:
            timeout = call_timeout()
        t0 = time.monotonic()
        deadline = None if timeout is None else t0 + timeout
        backoff = None
        while True:
            stub = self._stub
            if not os.path.exists(self.socket):
                why, code, details = "unreached", None, "No such file or directory"
            else:
                left = timeout if backoff is None or deadline is None else \
                    max(deadline - time.monotonic(), 0.001)
                try:
                    reply = getattr(stub, method)(request, timeout=left)
                    self._served = True
                    return reply
                except grpc.RpcError as e:
                    code = e.code() if hasattr(e, "code") else None
                    details = e.details() if hasattr(e, "details") else str(e)
                    trailing = e.trailing_metadata() if hasattr(e, "trailing_metadata") else None
                    why = _retry.classify(method, request, code.name if code else None,
                                          details, trailing)
            if why is not None and (why != "unreached" or
                                    _retry.nkid_expected(self.socket, self._served)):
                if backoff is None:
                    backoff = _retry.Backoff(deadline)
                w = backoff.next()
                if w is not None:
                    time.sleep(w)
                    if why == "unreached" and os.path.exists(self.socket):
                        self._reconnect(stub)
                    continue
            waited = backoff.waited() if backoff is not None and backoff.tries else 0.0
            raise self._failure(method, code, details, why, timeout, waited) from None

    def _failure(self, method, code, details, why, timeout, waited):
        """The error of a call that ends failed (not sent again): code and
        details are gRPC's (code None: never reached nkid), why
        _retry.classify's, waited the seconds spent waiting for nkid."""
        if code == grpc.StatusCode.UNAVAILABLE and why is None and \
                _retry.broken(details) and not _retry.unreached(details):
            return NkidConnectionError(
                "%s: the connection to nkid at %s broke after the call was sent (%s);"
                " it may have run, and %s is not sent again after that"
                % (method, self.socket, details, method), "UNAVAILABLE")
        if code is None or (code == grpc.StatusCode.UNAVAILABLE and (
                not os.path.exists(self.socket) or "connect" in (details or "").lower())):
            return self._unreachable(details, waited)
        if code == grpc.StatusCode.DEADLINE_EXCEEDED and timeout is not None:
            details = ("%s: no answer from nkid within %g s (%s); set %s to wait longer"
                       % (method, timeout, details or "Deadline Exceeded", TIMEOUT_ENV))
        return error_for(details or str(code), code.name if code else None)

    # -- convenience wrappers
    def ping(self, payload=b""):
        return self.call("Ping", pb.PingRequest(payload=payload), timeout=10).payload

    def status(self):
        return self.call("Status", pb.StatusRequest(), timeout=10)

    def run(self, ref, inputs, core=-1, job_class=pb.JOB_CLASS_INTERACTIVE, return_neff=False,
            output_shm=None):
        """Run a kernel; returns the RunReply (outputs still on the wire).
        output_shm: an nkid.v1.ShmRegion for the outputs (nkid/_shm.py)."""
        req = pb.RunRequest(ref=ref, inputs=inputs, core=core, job_class=job_class,
                            return_neff=return_neff, output_shm=output_shm)
        return self.call("Run", req)

    def simulate(self, ref, inputs, output_shm=None):
        return self.call("Simulate", pb.SimulateRequest(ref=ref, inputs=inputs,
                                                        output_shm=output_shm))

    def benchmark(self, ref, inputs, warmup=10, iters=100, core=-1, return_neff=False):
        """Benchmark a kernel (inputs may carry shapes only)."""
        req = pb.BenchmarkRequest(ref=ref, inputs=inputs, warmup=warmup, iters=iters,
                                  core=core, return_neff=return_neff)
        return self.call("Benchmark", req)

    def profile(self, ref, inputs, num_execs=1, profile_nth=1, core=-1, output_shm=None):
        """Profile a kernel: the NEFF, one trace per profiled execution."""
        req = pb.ProfileRequest(ref=ref, inputs=inputs, num_execs=num_execs,
                                profile_nth=profile_nth, core=core, output_shm=output_shm)
        return self.call("Profile", req)

    def compile(self, ref, return_neff=False):
        return self.call("Compile", pb.CompileRequest(ref=ref, return_neff=return_neff))

    def lookup(self, ir_digest, format, target="", options=""):
        """The NEFF key nkid has for the IR with this digest (hex SHA-256
        of the IR bytes), format, target and options, if it compiled it."""
        return self.call("Lookup", pb.LookupRequest(ir_digest=ir_digest, format=format,
                                                    target=target or "",
                                                    options=options or ""), timeout=30)


_clients = {}
_lock = threading.Lock()
# This process's pid, kept by a fork hook (os.getpid is a system call, on
# every warm call).
_pid = os.getpid()


def _forked():
    global _pid
    _pid = os.getpid()


os.register_at_fork(after_in_child=_forked)


def get_client(socket=None):
    """The process's client for ``socket`` (re-created after fork)."""
    key = (_pid, socket or _env.get("NKID_SOCKET") or DEFAULT_SOCKET)
    c = _clients.get(key)
    if c is None:
        with _lock:
            c = _clients.get(key)
            if c is None:
                c = _clients[key] = Client(key[1])
    return c
