"""Zero-copy tensors: large inputs and outputs travel through files under
/dev/shm instead of the gRPC message (docs/protocol.md, "Shared-memory
tensors"; docs/python.md).

A :class:`Transfer` covers one call.  Inputs of at least :data:`THRESHOLD`
bytes are written (one ``pwrite`` each, 64-byte aligned) into one input
region; when the kernel's outputs (known from the trace) add up to at least
the threshold, an output region of their aligned size is created and named
in the request, and nkid writes the outputs there.  Regions are files
``nkid.<uid>.<pid>.<random>`` created ``O_EXCL`` mode 0600 and opened to
nkid's uid with a POSIX ACL (or to the socket's group when ACLs are not
supported).  Output arrays are views of the output region's mapping (measured
faster than copying out: docs/performance.md).

Regions are reused: allocating and freeing tmpfs pages costs several times
a copy (docs/performance.md, "Tensor transfer"), so after a successful call
its input region, and its output region once no array of it is alive, go to
a small pool of this process (a failed call's regions are unlinked: nkid may
still hold a job that uses them) (at most :data:`POOL_MAX` regions, :data:`POOL_BYTES`
in all) for the next call.  They are unlinked when this process exits; the
files of dead processes of this uid are removed at import.

``NKID_SHM=0`` turns shared memory off; ``NKID_SHM_THRESHOLD`` (bytes)
overrides the threshold.  Without a writable /dev/shm, or when nkid refuses
the regions (another /dev/shm, no permission), tensors travel inline.
"""

import atexit
import errno
import mmap
import os
import pwd
import secrets
import stat
import struct
import sys
import threading

import numpy as np

from ._proto import nkid_pb2 as pb
from .errors import NkidError
from . import _env

DIR = "/dev/shm"
PREFIX = "nkid."
ALIGN = 64
#: Tensors of at least this many bytes go through shared memory: below it
#: inline protobuf is as fast or faster (measured: docs/performance.md,
#: "Tensor transfer").
DEFAULT_THRESHOLD = 256 << 10
#: Methods whose requests take output_shm.
OUTPUT_METHODS = ("run", "simulate", "profile")

#: Idle regions kept for reuse: at most this many, and this many bytes.
POOL_MAX = 4
POOL_BYTES = 2 << 30

_live = set()            # paths this process created and has not unlinked
_pool = []               # idle Regions (guarded by _live_lock)
_held = []               # output Regions that arrays may still view
_live_lock = threading.RLock()   # Region.close takes it inside release()
_refused = set()         # sockets whose nkid refused our regions
_tls = threading.local()


def threshold():
    """The size from which a tensor goes through shared memory."""
    v = _env.get("NKID_SHM_THRESHOLD")
    if v:
        try:
            return max(0, int(v))
        except ValueError:
            pass
    return DEFAULT_THRESHOLD


def enabled(socket=None):
    """Shared memory is usable: not turned off, /dev/shm writable, and nkid
    on ``socket`` has not refused our regions."""
    if _env.get("NKID_SHM", "1") == "0" or socket in _refused:
        return False
    return os.path.isdir(DIR) and os.access(DIR, os.W_OK | os.X_OK)


def current():
    """The Transfer active on this thread, or None."""
    return getattr(_tls, "tx", None)


def _align(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _nbytes(shape, dtype):
    from .tracer import dtypes as _dt
    n = _dt.host_dtype(dtype).itemsize if _dt.is_packed(dtype) else np.dtype(dtype).itemsize
    for s in shape:
        n *= int(s)
    return n


def _acl_user(uid):
    """system.posix_acl_access granting rw to the owner and to uid only."""
    undef = 0xFFFFFFFF
    return (struct.pack("<I", 2) + struct.pack("<HHI", 0x01, 6, undef) +
            struct.pack("<HHI", 0x02, 6, uid) + struct.pack("<HHI", 0x04, 0, undef) +
            struct.pack("<HHI", 0x10, 6, undef) + struct.pack("<HHI", 0x20, 0, undef))


_access_memo = {}


def _daemon_access(socket):
    """_daemon_access_of(socket), remembered per socket file (a user
    database lookup costs more than a small call)."""
    try:
        st = os.stat(socket)
    except OSError:
        return None, None
    k = (socket, st.st_dev, st.st_ino)
    a = _access_memo.get(k)
    if a is None:
        a = _access_memo[k] = _daemon_access_of(socket)
    return a


def _daemon_access_of(socket):
    """(uid, gid) nkid needs access for, from its socket: uid None when
    nkid can open our files anyway (it runs as root or as us)."""
    try:
        st = os.stat(socket)
    except OSError:
        return None, None
    uid = st.st_uid
    if uid == 0:
        # A socket systemd made (root-owned): nkid runs as user nkid.
        try:
            uid = pwd.getpwnam("nkid").pw_uid
        except KeyError:
            uid = 0
    if uid in (0, os.geteuid()):
        return None, None
    return uid, st.st_gid


class Region:
    """A file /dev/shm/nkid.<uid>.<pid>.<random> of ``size`` bytes that this
    process created; :meth:`close` unlinks it."""

    def __init__(self, size, access=(None, None)):
        self.name = "%s%d.%d.%s" % (PREFIX, os.geteuid(), os.getpid(),
                                      secrets.token_hex(8))
        self.path = os.path.join(DIR, self.name)
        self.size = size
        self.access = access
        self.mm = None
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW |
                          os.O_CLOEXEC, 0o600)
        with _live_lock:
            _live.add(self.path)
        try:
            uid, gid = access
            if uid is not None:
                try:
                    os.setxattr(self.fd, "system.posix_acl_access", _acl_user(uid))
                except OSError:
                    # No ACLs: open it to nkid's group (the socket's).
                    if gid is not None and gid != os.getegid():
                        os.fchown(self.fd, -1, gid)
                    os.fchmod(self.fd, 0o660)
            os.ftruncate(self.fd, size)
        except BaseException:
            self.close()
            raise

    def ref(self, offset=0, size=None):
        return pb.ShmRegion(name=self.name, offset=offset,
                            size=self.size - offset if size is None else size)

    def write(self, offset, arr):
        """Copy a C-contiguous array's bytes to offset, through the mapping."""
        if arr.nbytes == 0:
            return
        mm = self.map()
        mm[offset:offset + arr.nbytes] = arr.reshape(-1).view(np.uint8).data

    def map(self):
        """The shared mapping of the whole file (made once, pages populated)."""
        if self.mm is None:
            flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
            self.mm = mmap.mmap(self.fd, self.size, flags=flags,
                                prot=mmap.PROT_READ | mmap.PROT_WRITE)
        return self.mm

    def viewed(self):
        """True while a numpy array made from the mapping is alive."""
        # References: self.mm and getrefcount's argument; more are arrays.
        return self.mm is not None and sys.getrefcount(self.mm) > 2

    def close(self):
        """Close and unlink (idempotent). The mapping stays valid for the
        arrays that still view it."""
        self.mm = None
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        with _live_lock:
            _live.discard(self.path)


def _reclaim():
    """Move held output regions that no array views any more to the pool.
    Called with _live_lock held."""
    for r in list(_held):
        if not r.viewed():
            _held.remove(r)
            _pool.append(r)
    while len(_pool) > POOL_MAX or sum(r.size for r in _pool) > POOL_BYTES:
        _pool.pop(0).close()


def acquire(size, access):
    """A region of at least size bytes for nkid uid/gid access: the
    smallest idle one that fits (and wastes at most half), else a new one."""
    with _live_lock:
        _reclaim()
        fit = [r for r in _pool if r.access == access and size <= r.size <= 2 * size]
        if fit:
            r = min(fit, key=lambda r: r.size)
            _pool.remove(r)
            return r
    return Region(size, access)


def release(r, held=False):
    """Give r back after a call: to the pool, or, while arrays may view it
    (held), to the held list until they are gone."""
    with _live_lock:
        (_held if held else _pool).append(r)
        _reclaim()


def release_all():
    """Unlink every region of this process (the pool and held ones)."""
    with _live_lock:
        for r in _pool + _held:
            r.close()
        del _pool[:], _held[:]


class Transfer:
    """The shared-memory regions of one call (a context manager)."""

    def __init__(self, socket):
        self.socket = socket
        self.on = enabled(socket)
        self.limit = threshold()
        self.inputs = []         # (pb.Tensor, array, offset)
        self.in_region = None
        self.out_region = None
        self.out_viewed = False
        self._access_v = None

    @property
    def _access(self):
        """Whom nkid runs as, looked up when a region is first needed."""
        if self._access_v is None:
            self._access_v = _daemon_access(self.socket) if self.on else (None, None)
        return self._access_v

    def __enter__(self):
        self._prev = current()
        _tls.tx = self
        return self

    def __exit__(self, exc_type, exc, tb):
        _tls.tx = self._prev
        self.close(reuse=exc_type is None)
        return False

    # -- inputs
    def wire(self, name, arr, to_wire):
        """nkid.v1.Tensor for arr: shm-backed above the threshold (the bytes
        are written by :meth:`seal`), else ``to_wire(name, arr)``."""
        arr = np.asarray(arr)
        if not self.on or arr.nbytes < self.limit or arr.nbytes == 0:
            return to_wire(name, arr)
        if arr.dtype.byteorder == ">":
            arr = arr.astype(arr.dtype.newbyteorder("<"))
        arr = np.ascontiguousarray(arr)
        from .tracer import dtypes as _dt
        t = pb.Tensor(name=name, dtype=_dt.wire_name(_dt.normalize(arr.dtype)),
                      shape=list(arr.shape))
        off = _align(self.inputs[-1][2] + self.inputs[-1][1].nbytes) if self.inputs else 0
        self.inputs.append((t, arr, off))
        return t

    def seal(self):
        """Create the input region and write the inputs; inline on failure."""
        if not self.inputs or self.in_region is not None:
            return
        t, arr, off = self.inputs[-1]
        try:
            self.in_region = acquire(off + arr.nbytes, self._access)
            for t, arr, off in self.inputs:
                self.in_region.write(off, arr)
                t.shm.CopyFrom(self.in_region.ref(off, arr.nbytes))
        except OSError:
            self.inline()

    # -- outputs
    def expect(self, outputs):
        """Ask for an output region for (name, shape, dtype) outputs when
        they add up to the threshold."""
        if not self.on or not outputs:
            return
        end = 0
        total = 0
        for _, shape, dtype in outputs:
            n = _nbytes(shape, dtype)
            end = _align(end) + n
            total += n
        if total < self.limit or total == 0:
            return
        try:
            self.out_region = acquire(end, self._access)
        except OSError:
            self.out_region = None

    @property
    def output_shm(self):
        return self.out_region.ref() if self.out_region is not None else None

    def result(self, t, from_wire):
        """The numpy array of reply tensor t (from the output region when
        nkid put it there)."""
        if not t.HasField("shm"):
            return from_wire(t)
        r = self.out_region
        if r is None or t.shm.name != r.name:
            raise NkidError("nkid returned tensor '%s' in shared-memory region '%s', which"
                            " this call did not offer" % (t.name, t.shm.name), "DATA_LOSS")
        from .tracer import dtypes as _dt
        dt = _dt.from_wire_name(t.dtype)
        shape = tuple(int(s) for s in t.shape)
        n = _nbytes(shape, dt)
        if t.shm.size != n or t.shm.offset + n > r.size:
            raise NkidError("nkid returned %d bytes at offset %d of region '%s' for tensor"
                            " '%s' of shape %s and dtype %s" % (t.shm.size, t.shm.offset,
                                                                 r.name, t.name, list(shape),
                                                                 t.dtype), "DATA_LOSS")
        self.out_viewed = True
        return np.frombuffer(r.map(), dtype=dt, count=int(np.prod(shape, dtype=np.int64)),
                             offset=t.shm.offset).reshape(shape)

    # -- fallback and cleanup
    def inline(self):
        """Put every input back inline and ask for inline outputs (nkid
        refused the regions, or they could not be made)."""
        for t, arr, _ in self.inputs:
            t.ClearField("shm")
            t.data = arr.tobytes()
        self.inputs = []
        for r in (self.in_region, self.out_region):
            if r is not None:
                r.close()
        self.in_region = self.out_region = None

    def refused(self, err):
        """True (and shared memory off for this socket) if err is nkid
        refusing our regions rather than the call failing."""
        if (self.in_region is None and self.out_region is None) or \
                err.code not in ("PERMISSION_DENIED", "NOT_FOUND") or \
                "shared-memory region" not in str(err):
            return False
        _refused.add(self.socket)
        self.inline()
        return True

    def close(self, reuse=True):
        """Give the regions back for reuse, or, after a failed call (nkid
        may still be running a job that a deadline or an interrupt left
        behind, and reading or writing them), unlink them."""
        for r, held in ((self.in_region, False), (self.out_region, self.out_viewed)):
            if r is None:
                continue
            if reuse:
                release(r, held=held)
            else:
                r.close()
        self.in_region = self.out_region = None


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep():
    """Remove regions of this uid whose process is gone, and this process's
    own (at exit).  Returns the number removed."""
    me, uid, n = os.getpid(), os.geteuid(), 0
    try:
        names = os.listdir(DIR)
    except OSError:
        return 0
    pre = "%s%d." % (PREFIX, uid)
    for name in names:
        if not name.startswith(pre):
            continue
        try:
            pid = int(name[len(pre):].split(".", 1)[0])
        except ValueError:
            continue
        path = os.path.join(DIR, name)
        # Ours and in use, or a live process's (a file of our pid that we
        # did not make is a previous holder's of this pid: stale).
        if path in _live or (pid != me and _pid_alive(pid)):
            continue
        try:
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode) and st.st_uid == uid:
                os.unlink(path)
                n += 1
        except OSError as e:
            if e.errno != errno.ENOENT:
                continue
    return n


def _at_exit():
    with _live_lock:
        paths = list(_live)
    for p in paths:
        try:
            os.unlink(p)
        except OSError:
            pass


sweep()
atexit.register(_at_exit)
