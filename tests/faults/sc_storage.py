"""storage: damage under the cache (bit flips in blobs and index pages,
truncation, a deleted WAL, a read-only cache, a full disk, I/O errors from
the LD_PRELOAD shim at chosen calls). Each fault is survived when nkid
keeps serving, never serves a wrong result, detects, quarantines or
refuses what is damaged, and the cache verifies once the fault is gone."""

import glob
import os
import random
import sqlite3
import re
import subprocess

import kernels
from common import Skip, alive, call, run_case
from nkid._proto import nkid_pb2 as pb

K = 4               # kernels stored before each fault


class Case:
    def __init__(self, ctx, r, name, inline_max=None):
        self.ctx, self.r, self.name = ctx, r, name
        env = {"NKID_CACHE_INLINE_MAX": str(inline_max)} if inline_max else {}
        self.n = ctx.nkid(config={"cache": {"max_bytes": "256MiB"}}, env=env, start=False)
        self.cases = [kernels.Case(1.0 + i / 8.0, seed=i) for i in range(K)]
        self.keys = []
        self.failures = []

    def fail(self, what):
        self.failures.append(what)

    def populate(self):
        self.n.start()
        cl = self.n.client()
        for c in self.cases:
            rep = cl.compile(c.ref)
            self.keys.append(rep.neff_key)
        cl.close()
        if self.n.stop() != 0:
            self.fail("nkid did not stop cleanly after populating")

    def workload(self, new_base, by_key=True):
        """Run the stored kernels (by IR: a damaged entry is compiled again;
        by key alone: NOT_FOUND is fine, a wrong result is not) and store
        new ones. Returns the statuses seen."""
        seen = {}
        cl = self.n.client()
        for i, c in enumerate(self.cases):
            for key in ((None, self.keys[i]) if by_key else (None,)):
                st, ok = run_case(cl, c, by_key=key)
                seen[st] = seen.get(st, 0) + 1
                if st == "OK" and not ok:
                    self.fail("wrong result for stored kernel %d%s" % (i, " by key" if key else ""))
                elif st != "OK" and key is None:
                    self.fail("stored kernel %d by IR: %s %s" % (i, st, ok))
                elif st not in ("OK", "NOT_FOUND"):
                    self.fail("stored kernel %d by key: %s %s" % (i, st, ok))
        for j in range(3):
            c = kernels.Case(new_base + j / 8.0, seed=10 + j)
            st, ok = run_case(cl, c)
            seen[st] = seen.get(st, 0) + 1
            if st != "OK":
                self.fail("a new kernel: %s %s" % (st, ok))
            elif not ok:
                self.fail("a new kernel gave a wrong result")
        cl.close()
        return seen

    def recover_and_verify(self, new_base):
        """Without the fault: nkid starts, the cache verifies, results are
        right."""
        if self.n.alive():
            if self.n.stop() != 0:
                self.fail("nkid did not stop cleanly under the fault")
        self.n.env = {k: v for k, v in self.n.env.items()
                      if not k.startswith(("LD_PRELOAD", "IOFAIL_", "ASAN_OPTIONS"))}
        self.n.start()
        self.workload(new_base)
        if not self.n.alive():
            self.fail("nkid died after the fault was gone")
        if self.n.stop() != 0:
            self.fail("nkid did not stop cleanly after the fault")
        v = self.n.offline("cache", "verify")
        if v.returncode != 0:
            self.damaged_rows(v.stdout + v.stderr)

    def damaged_rows(self, text):
        """cache verify found entries whose bytes were damaged under the
        index (a flip that quick_check cannot see): each must be refused
        when asked for by key (quarantined, or not a key at all)."""
        keys = re.findall(r"entry '([^']*)'.* is corrupt", text)
        if not keys:
            self.fail("cache verify after the fault: %s" % text.strip()[-200:])
            return
        self.r.add("damaged_rows", len(keys))
        self.n.start()
        cl = self.n.client()
        for k in keys:
            st, rep = call(cl, "Compile", pb.CompileRequest(ref=pb.KernelRef(neff_key=k)))
            if st == "OK":
                self.fail("a damaged entry %s was served" % k[:12])
        cl.close()
        self.n.stop()

    def counters(self):
        st = self.n.nkictl("--json", "cache", "stat")
        import json
        try:
            return json.loads(st.stdout)
        except ValueError:
            return {}

    def finish(self, detected=True, what=""):
        self.r.add("tried")
        if not detected:
            self.fail("not detected: %s" % what)
        if not self.failures:
            self.r.add("survived")
        self.r.check(not self.failures, "%s: %s" % (self.name, "; ".join(self.failures[:3])))


def flip(path, offset=None, rnd=random.Random(7)):
    with open(path, "r+b") as f:
        size = os.fstat(f.fileno()).st_size
        off = rnd.randrange(size) if offset is None else offset % max(size, 1)
        f.seek(off)
        b = f.read(1)
        f.seek(off)
        f.write(bytes([b[0] ^ (1 << rnd.randrange(8))]))


def blob_files(n):
    return sorted(glob.glob(os.path.join(n.cache, "blobs", "*", "*")))


def quarantined(n):
    return len(os.listdir(os.path.join(n.cache, "quarantine")))


def damaged_blob(ctx, r, name, how):
    c = Case(ctx, r, name, inline_max=256)
    c.populate()
    files = blob_files(c.n)
    if not files:
        c.fail("no blob files to damage")
        return c.finish()
    for p in files[:2]:
        if how == "flip":
            flip(p)
        elif how == "truncate":
            os.truncate(p, os.path.getsize(p) // 2)
        else:
            os.unlink(p)
    c.n.start()
    c.workload(100.0)
    detected = how == "delete" or quarantined(c.n) > 0
    alive(ctx, r, c.n, name)
    c.recover_and_verify(200.0)
    c.finish(detected, "no quarantined file after %s" % how)


def inline_flip(ctx, r):
    c = Case(ctx, r, "inline-bitflip")
    c.populate()
    db = sqlite3.connect(os.path.join(c.n.cache, "index.db"))
    for key in c.keys[:2]:
        (data,) = db.execute("SELECT data FROM neff WHERE key = ?", (key,)).fetchone()
        b = bytearray(data)
        b[len(b) // 2] ^= 0x10
        db.execute("UPDATE neff SET data = ? WHERE key = ?", (bytes(b), key))
    db.commit()
    db.close()
    c.n.start()
    c.workload(100.0)
    st = c.counters()
    alive(ctx, r, c.n, "inline-bitflip")
    c.recover_and_verify(200.0)
    c.finish(st.get("corrupt", 0) >= 1, "corrupt counter %s" % st.get("corrupt"))


def index_damage(ctx, r, name, how, seed):
    c = Case(ctx, r, name)
    c.populate()
    db = os.path.join(c.n.cache, "index.db")
    rnd = random.Random(seed)
    size = os.path.getsize(db)
    if how == "flip":
        for _ in range(8):      # eight bytes of one page past the header
            page = rnd.randrange(1, max(2, size // 4096))
            flip(db, page * 4096 + rnd.randrange(4096), rnd)
    elif how == "header":
        with open(db, "r+b") as f:
            f.write(os.urandom(100))
    else:
        os.truncate(db, size // 2)
    c.n.start()
    c.workload(100.0)
    text = c.n.log_text()
    set_aside = glob.glob(db + ".corrupt-*")
    alive(ctx, r, c.n, name)
    c.recover_and_verify(200.0)
    # A flip in an unused byte may go unnoticed; it must still serve right.
    detected = bool(set_aside) or "IS DAMAGED" in text or how == "flip"
    c.finish(detected, "a damaged index was not set aside")
    r.add("index_set_aside", 1 if set_aside else 0)


def wal_deleted(ctx, r):
    c = Case(ctx, r, "wal-deleted")
    c.n.start()
    cl = c.n.client()
    for x in c.cases:
        c.keys.append(cl.compile(x.ref).neff_key)
    cl.close()
    c.n.crash()         # the commits are in the WAL only
    wal = os.path.join(c.n.cache, "index.db-wal")
    had = os.path.exists(wal) and os.path.getsize(wal) > 0
    for p in (wal, os.path.join(c.n.cache, "index.db-shm")):
        if os.path.exists(p):
            os.unlink(p)
    c.n.start()
    c.workload(100.0)
    alive(ctx, r, c.n, "wal-deleted")
    c.recover_and_verify(200.0)
    c.finish(had, "the WAL was empty: nothing was lost with it")


def readonly(ctx, r):
    if not ctx.root:
        raise Skip("not root: cannot bind-mount the cache read-only")
    c = Case(ctx, r, "readonly", inline_max=256)
    c.populate()
    ctx.mount_readonly(c.n.cache)
    c.n.start()
    c.workload(100.0)
    text = c.n.log_text()
    alive(ctx, r, c.n, "readonly")
    c.n.stop()
    subprocess.run(["umount", c.n.cache], check=True)
    ctx.mounts.remove(c.n.cache)
    c.recover_and_verify(200.0)
    c.finish("cannot open cache" in text or "read-only" in text.lower(),
             "the log does not say the cache cannot be written")


def fill(path):
    """Fill the file system of path to its last block."""
    with open(path, "wb", buffering=0) as f:
        for chunk in (65536, 512):
            try:
                while True:
                    f.write(b"\0" * chunk)
            except OSError:
                pass


def disk_full(ctx, r, at_start):
    """A full disk while nkid runs (stores fail, calls are served
    uncached, caching resumes with space), or already at its start (the
    cache cannot open: nkid serves without it and tries again)."""
    if not ctx.root:
        raise Skip("not root: cannot mount a small tmpfs")
    name = "disk-full-at-start" if at_start else "disk-full"
    c = Case(ctx, r, name, inline_max=256)
    os.makedirs(c.n.state, exist_ok=True)
    ctx.mount_tmpfs(c.n.cache, "2m")
    c.populate()
    filler = os.path.join(c.n.cache, "filler")
    if at_start:
        fill(filler)
    c.n.start()
    if not at_start:
        fill(filler)
    before = c.counters().get("entries", 0)
    seen = c.workload(100.0)
    text = c.n.log_text()
    alive(ctx, r, c.n, name)
    os.unlink(filler)
    if not at_start:
        # Space comes back: caching resumes.
        c.workload(300.0, by_key=False)
        after = c.counters().get("entries", 0)
        if after <= before:
            c.fail("caching did not resume once space returned (%s -> %s entries)"
                   % (before, after))
    c.recover_and_verify(200.0)
    low = text.lower()
    c.finish("cannot open cache" in text if at_start else ("full" in low or "space" in low),
             "no warning of a full disk (%s)" % seen)


# The I/O error points: (name, calls, path part, let N pass first, errno).
IO_POINTS = [
    ("blob-write", "write", "/cache/tmp/", 0, "EIO"),
    ("blob-write-enospc", "write", "/cache/tmp/", 1, "ENOSPC"),
    ("blob-fsync", "fsync", "/cache/tmp/", 0, "EIO"),
    ("blob-rename", "rename", "/cache/blobs/", 0, "EIO"),
    ("blob-open", "open", "/cache/blobs/", 0, "EIO"),
    ("blob-read", "read", "/cache/blobs/", 0, "EIO"),
    ("blob-read-later", "read", "/cache/blobs/", 2, "EIO"),
    ("wal-write-0", "pwrite", "index.db-wal", 0, "EIO"),
    ("wal-write-3", "pwrite", "index.db-wal", 3, "EIO"),
    ("wal-write-10", "pwrite", "index.db-wal", 10, "EIO"),
    ("wal-write-full", "pwrite", "index.db-wal", 5, "ENOSPC"),
    ("wal-sync", "fsync,fdatasync", "index.db-wal", 0, "EIO"),
    ("wal-sync-later", "fsync,fdatasync", "index.db-wal", 2, "EIO"),
    ("index-read-0", "pread", "/cache/index.db", 0, "EIO"),
    ("index-read-5", "pread", "/cache/index.db", 5, "EIO"),
    ("index-read-20", "pread", "/cache/index.db", 20, "EIO"),
    ("index-open", "open", "/cache/index.db", 0, "EIO"),
    ("shm-write", "pwrite,write", "index.db-shm", 1, "EIO"),
]


def io_error(ctx, r, name, ops, path, after, err):
    c = Case(ctx, r, "io-" + name, inline_max=256)
    c.populate()
    log = os.path.join(c.n.dir, "iofail.log")
    c.n.env.update({"LD_PRELOAD": ctx.iofail, "IOFAIL_OPS": ops, "IOFAIL_PATH": path,
                    "IOFAIL_AFTER": str(after), "IOFAIL_COUNT": "3", "IOFAIL_ERRNO": err,
                    "IOFAIL_LOG": log, "ASAN_OPTIONS": "verify_asan_link_order=0"})
    c.n.start()
    c.workload(100.0)
    alive(ctx, r, c.n, "io-" + name)
    fired = os.path.exists(log) and os.path.getsize(log) > 0
    c.recover_and_verify(200.0)
    r.add("io_points_fired", 1 if fired else 0)
    # A point the workload never reached is no fault tried.
    if not fired:
        r.note("io point %s not reached" % name)
        return
    c.finish()


def scenario(ctx, r):
    if not os.path.exists(ctx.iofail):
        raise Skip("no %s: make %s" % (ctx.iofail, os.path.relpath(ctx.iofail)))
    r.fig("tried", 0)
    r.fig("survived", 0)
    for how in ("flip", "truncate", "delete"):
        damaged_blob(ctx, r, "blob-" + how, how)
    inline_flip(ctx, r)
    for i in range(3):
        index_damage(ctx, r, "index-flip-%d" % i, "flip", i)
    index_damage(ctx, r, "index-header", "header", 9)
    index_damage(ctx, r, "index-truncate", "truncate", 10)
    wal_deleted(ctx, r)
    readonly(ctx, r)
    disk_full(ctx, r, False)
    disk_full(ctx, r, True)
    for p in IO_POINTS:
        io_error(ctx, r, *p)
        ctx.cleanup(r)      # one nkid at a time: their directories go now
