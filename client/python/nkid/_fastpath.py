"""The fast path for warm calls (docs/protocol.md, "Fast path").

nkid offers each client process, through the ``FastPath`` RPC, a
``SOCK_SEQPACKET`` connection of its own; a call then travels as one frame
each way (a 16-byte header and the request's protobuf bytes), without
HTTP/2, into the same dispatch, scheduler and limits as a gRPC call.  gRPC
stays the protocol of record: :func:`call` uses the fast path when the
process has one and the request fits in a frame, and gRPC otherwise.

A lost connection (nkid restarted) falls back to gRPC for that call (which
waits for nkid to come back) when the method is idempotent; the next call
sets up a new connection.  After a failed set-up the process tries again
at most once per :data:`RETRY_S` seconds.  ``NKID_FASTPATH=0`` turns the
fast path off for the process.
"""

import socket
import struct
import threading
import time

# nkid.client first: it chooses gRPC's experiments before grpc is imported.
from . import client as _client
from .client import TIMEOUT_ENV, call_timeout
from ._proto import nkid_pb2 as pb
from . import _env
from .errors import NkidError, error_for

import grpc  # noqa: E402

__all__ = ["call", "get", "FastPath", "METHODS", "RETRY_S"]

_REQ = struct.Struct("<IIII")
_REP = struct.Struct("<IiII")
_CALL, _CANCEL = 1, 2

#: The methods a frame may call: their codes and reply messages.
METHODS = {
    "Ping": (1, pb.PingReply),
    "Run": (2, pb.RunReply),
    "Simulate": (3, pb.SimulateReply),
    "Lookup": (4, pb.LookupReply),
    "Compile": (5, pb.CompileReply),
    "Status": (6, pb.StatusReply),
}
#: Seconds between two attempts to set up a fast path after one failed.
RETRY_S = 1.0

_STATUS = {sc.value[0]: sc.name for sc in grpc.StatusCode}
_UNAVAILABLE = grpc.StatusCode.UNAVAILABLE.value[0]
#: Bytes of a reply besides its tensors' data (names, shapes, key, times).
_REPLY_SLACK = 4096


class Lost(Exception):
    """The connection broke; ``sent``: the request may have reached nkid."""

    def __init__(self, sent):
        super().__init__("the fast path's connection to nkid broke")
        self.sent = sent


class FastPath:
    """One process's connection to nkid for warm calls, set up through
    client (a :class:`nkid.client.Client`)."""

    def __init__(self, client):
        offer = client.call("FastPath", pb.FastPathRequest(), timeout=10)
        if offer.version != 1:
            raise NkidError("nkid offers fast-path frames of version %d; this client speaks 1"
                            % offer.version, "FAILED_PRECONDITION")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
        try:
            s.settimeout(10)
            s.connect(offer.path)
            hello = s.recv(64)
            if len(hello) < _REP.size or _REP.unpack_from(hello)[:2] != (0, 0):
                raise NkidError("nkid did not greet the fast path at %s" % offer.path,
                                "UNAVAILABLE")
            s.settimeout(None)
        except BaseException:
            s.close()
            raise
        self.sock = s
        self.pid = _client._pid
        self.max_frame = offer.max_frame_bytes
        self._buf = bytearray(self.max_frame)
        self._view = memoryview(self._buf)
        self._lock = threading.Lock()
        self._next = 0
        self._rcvtimeo = None
        self.broken = False

    def close(self):
        self.broken = True
        self.sock.close()

    def fits(self, nbytes, reply_bytes=0):
        """Whether a request of nbytes, and a reply of reply_bytes of
        tensors (plus room for the rest of the reply), each travel in one
        frame."""
        return (_REQ.size + nbytes <= self.max_frame and
                _REP.size + reply_bytes + _REPLY_SLACK <= self.max_frame)

    def _timeout(self, timeout):
        """SO_RCVTIMEO for a call of timeout seconds (None: none)."""
        if timeout == self._rcvtimeo:
            return
        t = 0.0 if timeout is None else max(timeout, 1e-3)
        sec = int(t)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO,
                             struct.pack("ll", sec, int((t - sec) * 1e6)))
        self._rcvtimeo = timeout

    def call(self, method, data, timeout):
        """Call method with the request's bytes; the reply's bytes (a
        memoryview valid until the next call), or NkidError with nkid's
        status.  Raises Lost when the connection broke."""
        code = METHODS[method][0]
        with self._lock:
            self._next = self._next % 0xFFFFFFFF + 1
            cid = self._next
            ms = 0 if timeout is None else max(1, int(timeout * 1000))
            try:
                self._timeout(timeout)
                self.sock.sendmsg([_REQ.pack(_CALL, cid, code, ms), data])
            except OSError:
                self.close()
                raise Lost(False) from None
            view = self._view
            while True:
                try:
                    n = self.sock.recv_into(self._buf)
                except (BlockingIOError, TimeoutError, InterruptedError) as e:
                    if isinstance(e, InterruptedError):
                        continue
                    self._cancel(cid)
                    raise NkidError("%s: no answer from nkid within %g s (fast path); set"
                                    " %s to wait longer" % (method, timeout, TIMEOUT_ENV),
                                    "DEADLINE_EXCEEDED") from None
                except OSError:
                    self.close()
                    raise Lost(True) from None
                if n < _REP.size:
                    self.close()
                    raise Lost(True)
                rid, status, mlen, rlen = _REP.unpack_from(self._buf)
                if rid == cid:
                    break
                if rid == 0 and status != 0:
                    # nkid cut the connection off: it says why.
                    self.close()
                    raise error_for(bytes(view[_REP.size:_REP.size + mlen]).decode(
                        "utf-8", "replace"), _STATUS.get(status, "UNKNOWN"))
                # A reply to a call given up on: skip it.
            if status == _UNAVAILABLE:
                # nkid is stopping: the call goes over gRPC, which waits
                # for the next nkid (every fast-path method is idempotent).
                self.close()
                raise Lost(True)
            if status != 0:
                msg = bytes(view[_REP.size:_REP.size + mlen]).decode("utf-8", "replace")
                raise error_for(msg, _STATUS.get(status, "UNKNOWN"))
            start = _REP.size + mlen
            return view[start:start + rlen]

    def _cancel(self, cid):
        try:
            self.sock.send(_REQ.pack(_CANCEL, cid, 0, 0))
        except OSError:
            self.close()


_lock = threading.Lock()
_paths = {}          # id(client) -> FastPath
_failed = {}         # id(client) -> time of the last failed set-up


def get(client):
    """The process's fast path to client's nkid, set up on first use; None
    when it is off, cannot be set up now, or broke (the next call tries
    again, at most once per RETRY_S after a failure)."""
    key = id(client)
    fp = _paths.get(key)
    # client._pid is this process's (a fork hook keeps it): no system
    # call on the warm path.
    if fp is not None and not fp.broken and fp.pid == _client._pid:
        return fp
    if _env.get("NKID_FASTPATH", "1") == "0":
        return None
    with _lock:
        fp = _paths.get(key)
        if fp is not None and not fp.broken and fp.pid == _client._pid:
            return fp
        if fp is not None and fp.pid == _client._pid:
            fp.close()
        _paths.pop(key, None)
        last = _failed.get(key)
        if last is not None and time.monotonic() - last < RETRY_S:
            return None
        try:
            fp = FastPath(client)
        except (NkidError, OSError):
            _failed[key] = time.monotonic()
            return None
        _failed.pop(key, None)
        _paths[key] = fp
        return fp


def call(client, method, request, timeout=None, reply_bytes=0):
    """Call method with request (a message or a Prepared request) over the
    process's fast path when it has one and the request, and a reply
    carrying reply_bytes of tensors, fit in a frame; else over gRPC
    (client.call). The reply message either way."""
    fp = get(client)
    if fp is not None:
        data = request.SerializeToString()
        if fp.fits(len(data), reply_bytes):
            if timeout is None:
                timeout = call_timeout()
            try:
                return METHODS[method][1].FromString(fp.call(method, data, timeout))
            except Lost:
                # nkid went away: gRPC waits for it to come back. A call
                # that may have run is sent again only if it is
                # idempotent, as every method of METHODS is.
                pass
    return client.call(method, request, timeout=timeout)
