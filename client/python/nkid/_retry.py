"""When a call to nkid is sent again, shared by the blocking client
(nkid/client.py) and the asyncio client (nkid/aio.py).

A call that failed because nkid was not there (the socket absent or
refusing, the connection failing before the call was sent) or that nkid
answered UNAVAILABLE with the trailing metadata ``nkid-retryable: 1`` (nkid
stopping: the call's work never started) is sent again once nkid is back.
A call that may have run (the connection broke after it was sent) is sent
again only if its method is in :data:`IDEMPOTENT`.  The waits between tries
grow from 1 ms, doubling, to 50 ms; all of them end at the call's deadline
or after :func:`reconnect_timeout` seconds, whichever comes first
(docs/protocol.md, "Restarts"; docs/python.md).
"""

import os
import time

from . import _env

__all__ = ["IDEMPOTENT", "RETRYABLE_KEY", "RECONNECT_ENV", "DEFAULT_RECONNECT_TIMEOUT",
           "reconnect_timeout", "classify", "nkid_expected", "Backoff"]

#: The trailing metadata key nkid sets (value "1") on an UNAVAILABLE status
#: whose call it never started (daemon/server.h, SERVER_RETRYABLE_KEY).
RETRYABLE_KEY = "nkid-retryable"
#: The environment variable of the longest wait for nkid, in seconds.
RECONNECT_ENV = "NKID_RECONNECT_TIMEOUT"
#: Seconds a call waits at most for nkid to come back, unless
#: NKID_RECONNECT_TIMEOUT says otherwise (and never past its deadline).
DEFAULT_RECONNECT_TIMEOUT = 30.0

#: Methods that may be sent again after they may have run: their effect,
#: if any, is the same done once or twice (docs/protocol.md, "Restarts").
#: Not here: Lease (a second lease would hold a second core), Cancel,
#: CachePin, CacheRemove, CacheImport, CachePush, CachePull (they change
#: the cache or another call), and CacheStat with ``zero``.
IDEMPOTENT = frozenset([
    "Benchmark", "CacheExport", "CacheList", "CacheStat", "CacheVerify", "Compile",
    "FastPath", "Jobs", "Lookup", "Ping", "Profile", "Run", "Simulate", "Status", "Warmup",
])

# Words of gRPC's own failures before a call was sent: no connection, or
# a connection nkid had closed before the request was written ("Broken
# pipe": nkid starts a call only once its whole request has arrived).
_UNREACHED = ("failed to connect", "connection refused", "no such file or directory",
              "connections to all backends failing", "dns resolution failed",
              "empty address list", "broken pipe")
# gRPC's own words for a call cut with its connection (nkid's CANCELLED
# statuses always say what was cancelled and why).
_CUT = ("", "cancelled", "cancelled on the server side", "socket closed")
# gRPC's words for an UNAVAILABLE call cut with its connection; any other
# UNAVAILABLE is nkid's own answer, final unless marked.
_BROKEN = ("stream removed", "socket closed", "connection reset", "goaway",
           "cancelling all calls", "recvmsg", "sendmsg", "transport closed",
           "endpoint closing", "server shutdown")

_FIRST_WAIT = 0.001
_MAX_WAIT = 0.050


def reconnect_timeout():
    """Seconds a call waits at most for nkid: ``$NKID_RECONNECT_TIMEOUT``
    (``0``: do not wait), else :data:`DEFAULT_RECONNECT_TIMEOUT`."""
    raw = _env.get(RECONNECT_ENV, "").strip()
    if raw == "":
        return DEFAULT_RECONNECT_TIMEOUT
    try:
        v = float(raw)
    except ValueError:
        v = -1.0
    if not v >= 0:
        raise ValueError("%s must be a number of seconds (0: do not wait), got '%s'"
                         % (RECONNECT_ENV, raw))
    return v


def _marked(trailing):
    for k, v in trailing or ():
        if k == RETRYABLE_KEY and v in ("1", b"1"):
            return True
    return False


def idempotent(method, request=None):
    """Whether a call of method with request may run twice."""
    if method not in IDEMPOTENT:
        return False
    if method == "CacheStat" and request is not None and getattr(request, "zero", False):
        return False
    return True


def unreached(details):
    """Whether gRPC's words say the call never left (no connection)."""
    low = (details or "").lower()
    return any(w in low for w in _UNREACHED)


def classify(method, request, code_name, details, trailing):
    """Why a failed call may be sent again: ``"unreached"`` (it never left:
    wait for nkid), ``"retryable"`` (nkid marked it: it never started),
    ``"idempotent"`` (it may have run, and running it again is harmless),
    or None (it is the caller's answer)."""
    low = (details or "").strip().lower()
    if code_name == "CANCELLED" and low in _CUT:
        # nkid stopped with the call in flight (past shutdown_grace_ms, or
        # as it closed its connections): it may have run.
        return "idempotent" if idempotent(method, request) else None
    if code_name != "UNAVAILABLE":
        return None
    if _marked(trailing):
        return "retryable"
    if unreached(low):
        return "unreached"
    if broken(low) and idempotent(method, request):
        return "idempotent"
    return None


def broken(details):
    """Whether gRPC's words say the call's connection broke after it was
    sent."""
    low = (details or "").lower()
    return any(w in low for w in _BROKEN)


def nkid_expected(socket, served):
    """Whether to wait for nkid at socket rather than fail at once: it
    served this client before, or its socket or its lock file
    (``<socket>.lock``, left by every nkid that ran there) exists.  A
    socket path where no nkid ever ran fails at once."""
    return served or os.path.exists(socket) or os.path.exists(socket + ".lock")


class Backoff:
    """The waits of one call: 1 ms doubling to 50 ms, until the end of the
    reconnect window or the call's deadline (``deadline``: a
    time.monotonic() value, or None)."""

    def __init__(self, deadline):
        now = time.monotonic()
        cap = reconnect_timeout()
        self.start = now
        self.end = now + cap if deadline is None else min(deadline, now + cap)
        self.wait = _FIRST_WAIT
        self.tries = 0

    def next(self):
        """Seconds to wait before the next try, or None when the window is
        over."""
        now = time.monotonic()
        if now >= self.end:
            return None
        w = min(self.wait, self.end - now)
        self.wait = min(self.wait * 2, _MAX_WAIT)
        self.tries += 1
        return w

    def waited(self):
        return time.monotonic() - self.start
