"""hostile: what a client can send that it should not: garbage and
oversized messages to every method, unknown methods, absurd shapes and
dtypes, strings that are not UTF-8, shared-memory symlinks, FIFOs,
directories and other users' regions, a region shrunk while nkid reads it,
hostile bundles, mutated and nested IRs. Every one must get a clear error
(or a correct answer) from the same nkid process."""

import os
import random
import struct
import threading
import time


import kernels
from common import alive, call, raw_call, raw_channel
from nkid._proto import nkid_pb2 as pb
from nkid.client import from_wire

KINDS = {"CacheExport": "server", "CacheImport": "client", "Lease": "bidi"}
METHODS = ["Benchmark", "CacheExport", "CacheImport", "CacheList", "CachePin", "CacheRemove",
           "CacheStat", "Cancel", "Compile", "Jobs", "Lease", "Lookup", "Ping", "Profile", "Run",
           "Simulate", "Status", "Warmup"]
CONTROL = ["CacheExport", "CacheList", "CachePin", "CacheRemove", "CacheStat", "Cancel", "Jobs",
           "Lease", "Lookup", "Ping", "Status"]
# Statuses that say the daemon or the handler broke rather than the input.
BAD = {"UNKNOWN", "UNAVAILABLE", "DATA_LOSS"}

CONFIG = {
    "limits": {"max_message_bytes": {"control": "64KiB", "kernel": "1MiB", "tensor": "8MiB",
                                     "chunk": "1MiB"},
               "max_tensor_bytes": "64MiB"},
    "cpu": {"cores": 2},
}


def pbfield(num, data):
    """One length-delimited protobuf field (for bytes a protobuf library
    will not write, e.g. strings that are not UTF-8)."""
    key = num << 3 | 2
    out = bytearray()
    for v in (key, len(data)):
        while v >= 0x80:
            out.append(v & 0x7f | 0x80)
            v >>= 7
        out.append(v)
    return bytes(out) + data


class Tally:
    def __init__(self, r):
        self.r = r
        self.tried = 0
        self.codes = {}

    def saw(self, what, code, msg, ok_codes=None):
        self.tried += 1
        self.codes[code] = self.codes.get(code, 0) + 1
        if code in BAD:
            self.r.check(False, "%s: %s %s" % (what, code, msg[:120]))
        elif ok_codes is not None and code not in ok_codes:
            self.r.check(False, "%s: expected %s, got %s %s" % (what, "/".join(sorted(ok_codes)),
                                                                code, msg[:120]))
        elif code not in ("OK",) and not msg:
            self.r.check(False, "%s: %s without a message" % (what, code))


def garbage(ch, t, rnd):
    for m in METHODS:
        for i in range(24):
            n = rnd.choice((0, 1, 7, 64, 700, 4096, 30000))
            data = bytes(rnd.getrandbits(8) for _ in range(n))
            code, msg = raw_call(ch, m, data, KINDS.get(m, "unary"), timeout=5)
            # Random bytes may be a valid message: any answer but a broken one.
            t.saw("garbage to %s" % m, code, msg)


def oversized(ch, t):
    for m in CONTROL:
        code, msg = raw_call(ch, m, b"\x0a" * (64 * 1024 + 1), KINDS.get(m, "unary"))
        t.saw("oversized %s" % m, code, msg, {"RESOURCE_EXHAUSTED"})
    for m in ("Compile", "Warmup"):
        code, msg = raw_call(ch, m, b"\x0a" * (1 << 20 | 1))
        t.saw("oversized %s" % m, code, msg, {"RESOURCE_EXHAUSTED"})
    for m in ("Run", "Simulate", "Benchmark", "Profile"):
        code, msg = raw_call(ch, m, b"\x0a" * (8 << 20 | 1))
        t.saw("oversized %s" % m, code, msg, {"RESOURCE_EXHAUSTED"})
    code, msg = raw_call(ch, "CacheImport", None, "client", chunks=[
        pb.CacheChunk(data=b"x" * 100).SerializeToString(),
        pb.CacheChunk(data=b"x" * (1 << 20)).SerializeToString()])
    t.saw("oversized CacheImport chunk", code, msg, {"RESOURCE_EXHAUSTED"})


def unknown(ch, t, rnd):
    for i in range(20):
        path = rnd.choice(["/nkid.v1.Nkid/Frob%d" % i, "/other.Svc/Ping", "/nkid.v1.Nkid/",
                           "/nkid.v1.Nkid/ping", "/nkid.v2.Nkid/Run", "/%d" % i])
        code, msg = raw_call(ch, path, b"")
        t.saw("unknown method %s" % path, code, msg, {"UNIMPLEMENTED"})


def tensors(cl, t, case):
    """Run requests whose tensors lie."""
    x, y = case.inputs
    big = 1 << 40

    def T(**kw):
        base = dict(name="x", dtype="float32", shape=list(x.shape), data=x.data)
        base.update(kw)
        return pb.Tensor(**base)
    bad = [
        ("rank 9", [T(shape=[1] * 9, data=b"\0" * 4), y]),
        ("huge dims", [T(shape=[big, big]), y]),
        ("overflowing dims", [T(shape=[2 ** 63, 4]), y]),
        ("zero dim", [T(shape=[0, 64], data=b""), y]),
        ("unknown dtype", [T(dtype="complex64"), y]),
        ("empty dtype", [T(dtype=""), y]),
        ("short data", [T(data=x.data[:-4]), y]),
        ("long data", [T(data=x.data + b"\0" * 4), y]),
        ("wrong dtype", [T(dtype="int8"), y]),
        ("wrong shape", [T(shape=[64, 128]), y]),
        ("missing input", [x]),
        ("extra input", [x, y, x]),
        ("no inputs", []),
        ("65 tensors", [x] * 65),
        ("over max_tensor_bytes", [T(shape=[1 << 16, 1 << 12], data=b""), y]),
        ("data and shm", [T(shm=pb.ShmRegion(name="nkid.x", size=len(x.data))), y]),
    ]
    for what, inputs in bad:
        for method, req in (("Run", pb.RunRequest(ref=case.ref, inputs=inputs)),
                            ("Simulate", pb.SimulateRequest(ref=case.ref, inputs=inputs))):
            code, msg = call(cl, method, req, timeout=30)
            t.saw("%s: %s" % (method, what), code, msg if code != "OK" else "",
                  {"INVALID_ARGUMENT", "RESOURCE_EXHAUSTED", "NOT_FOUND"})
    for what, req in (("core 99", pb.RunRequest(ref=case.ref, inputs=case.inputs, core=99)),
                      ("core -7", pb.RunRequest(ref=case.ref, inputs=case.inputs, core=-7)),
                      ("job_class 99", pb.RunRequest(ref=case.ref, inputs=case.inputs,
                                                     job_class=99))):
        code, msg = call(cl, "Run", req)
        t.saw("Run: %s" % what, code, msg, {"INVALID_ARGUMENT"})
    for what, req in (("iters 10^9", pb.BenchmarkRequest(ref=case.ref, inputs=case.inputs,
                                                         iters=10 ** 9)),
                      ("warmup 10^9", pb.BenchmarkRequest(ref=case.ref, inputs=case.inputs,
                                                          warmup=10 ** 9, iters=2))):
        code, msg = call(cl, "Benchmark", req, timeout=30)
        t.saw("Benchmark: %s" % what, code, msg, {"INVALID_ARGUMENT", "RESOURCE_EXHAUSTED"})
    code, msg = call(cl, "Profile", pb.ProfileRequest(ref=case.ref, inputs=case.inputs,
                                                       num_execs=10 ** 9, profile_nth=1))
    t.saw("Profile: num_execs 10^9", code, msg, {"INVALID_ARGUMENT", "RESOURCE_EXHAUSTED"})


def strings(ch, t, case):
    """Names, formats, targets, options and keys that are not UTF-8 or not
    keys, written by hand (protobuf libraries refuse to)."""
    ir = case.traced.ir
    kern = [pbfield(1, b"\xff\xfe"), pbfield(2, b"nkir/1"), pbfield(3, ir)]
    cases = [
        ("kernel name not UTF-8", pbfield(1, b"".join(kern))),
        ("format not UTF-8", pbfield(1, pbfield(1, b"k") + pbfield(2, b"\xc0\xaf") +
                                     pbfield(3, ir))),
        ("format penguin", pbfield(1, pbfield(1, b"k") + pbfield(2, b"penguin") + pbfield(3, ir))),
        ("target not UTF-8", pbfield(1, pbfield(1, b"k") + pbfield(2, b"nkir/1") + pbfield(3, ir))
         + pbfield(4, b"\xed\xa0\x80")),
        ("options not UTF-8", pbfield(1, pbfield(1, b"k") + pbfield(2, b"nkir/1") +
                                      pbfield(3, ir)) + pbfield(5, b"-O\xff")),
        ("neff_key not hex", pbfield(2, b"zz" * 32)),
        ("neff_key short", pbfield(2, b"ab")),
        ("neff_key path", pbfield(2, b"../../../../etc/passwd")),
        ("neff_key not UTF-8", pbfield(2, b"\xff" * 64)),
        ("empty ref", b""),
    ]
    for what, ref in cases:
        for m in ("Compile", "Run"):
            code, msg = raw_call(ch, m, pbfield(1, ref), timeout=30)
            t.saw("%s: %s" % (m, what), code, msg,
                  {"INVALID_ARGUMENT", "NOT_FOUND", "FAILED_PRECONDITION"})


def shm(cl, t, case, ctx):
    """Shared-memory regions nkid must refuse."""
    x, y = case.inputs
    size = len(x.data)
    made = []

    def region(name, content=None, uid=None):
        p = "/dev/shm/" + name
        with open(p, "wb") as f:
            f.write(content if content is not None else x.data)
        if uid is not None:
            os.chown(p, uid, uid)
        made.append(p)
        return name

    def T(name, off=0, sz=size):
        return pb.Tensor(name="x", dtype="float32", shape=list(case.x.shape),
                         shm=pb.ShmRegion(name=name, offset=off, size=sz))
    pid = os.getpid()
    good = region("nkid.faults.%d.good" % pid)
    link = "nkid.faults.%d.link" % pid
    os.symlink("/dev/shm/" + good, "/dev/shm/" + link)
    made.append("/dev/shm/" + link)
    fifo = "nkid.faults.%d.fifo" % pid
    os.mkfifo("/dev/shm/" + fifo)
    made.append("/dev/shm/" + fifo)
    dirn = "nkid.faults.%d.dir" % pid
    os.mkdir("/dev/shm/" + dirn)
    small = region("nkid.faults.%d.small" % pid, x.data[:100])
    other = region("nkid.faults.%d.other" % pid, uid=1000) if ctx.root else None
    cases = [
        ("symlink", T(link), {"INVALID_ARGUMENT"}),
        ("fifo", T(fifo), {"INVALID_ARGUMENT"}),
        ("directory", T(dirn), {"INVALID_ARGUMENT"}),
        ("missing", T("nkid.faults.%d.none" % pid), {"NOT_FOUND"}),
        ("too small", T(small), {"INVALID_ARGUMENT"}),
        ("offset overflow", T(good, off=2 ** 64 - 8), {"INVALID_ARGUMENT"}),
        ("size not the tensor's", T(good, sz=size - 4), {"INVALID_ARGUMENT"}),
        ("slash in name", T("nkid.a/../../etc/passwd"), {"INVALID_ARGUMENT"}),
        ("dot dot", T(".."), {"INVALID_ARGUMENT"}),
        ("not nkid.", T("etc"), {"INVALID_ARGUMENT"}),
        ("long name", T("nkid." + "a" * 300), {"INVALID_ARGUMENT"}),
        ("empty name", T(""), {"INVALID_ARGUMENT"}),
    ]
    if other:
        cases.append(("another uid's region", T(other), {"PERMISSION_DENIED"}))
    for what, tensor, want in cases:
        code, msg = call(cl, "Run", pb.RunRequest(ref=case.ref, inputs=[tensor, y]))
        t.saw("shm input: %s" % what, code, msg, want)
    for what, name, want in (("symlink", link, {"INVALID_ARGUMENT"}),
                             ("fifo", fifo, {"INVALID_ARGUMENT"}),
                             ("another uid's", other, {"PERMISSION_DENIED"})):
        if name is None:
            continue
        code, msg = call(cl, "Run", pb.RunRequest(ref=case.ref, inputs=case.inputs,
                                                  output_shm=pb.ShmRegion(name=name, size=size)))
        t.saw("output_shm: %s" % what, code, msg, want)
    os.rmdir("/dev/shm/" + dirn)
    for p in made:
        os.unlink(p)


def shrink(cl, t, ctx, tries=12):
    """A region truncated while nkid reads it: the job fails
    INVALID_ARGUMENT ("shrank") or, if nkid was done reading, succeeds."""
    rows = 128 * 256
    case = kernels.Case(3.0, rows=rows, cols=64)
    cl.compile(case.ref)
    name = "nkid.faults.%d.shrink" % os.getpid()
    path = "/dev/shm/" + name
    xb, yb = case.x.tobytes(), case.y.tobytes()
    shrank = 0
    for i in range(tries):
        with open(path, "wb") as f:
            f.write(xb + yb)
        x = pb.Tensor(name="x", dtype="float32", shape=[rows, 64],
                      shm=pb.ShmRegion(name=name, offset=0, size=len(xb)))
        y = pb.Tensor(name="y", dtype="float32", shape=[rows, 64],
                      shm=pb.ShmRegion(name=name, offset=len(xb), size=len(yb)))

        def cut(delay=0.003 * i):
            time.sleep(delay)
            os.truncate(path, len(xb) // 2)
        th = threading.Thread(target=cut)
        th.start()
        code, msg = call(cl, "Run", pb.RunRequest(ref=case.ref, inputs=[x, y]))
        th.join()
        if code == "INVALID_ARGUMENT" and "shrank" in msg:
            shrank += 1
        elif code == "OK" and not case.check(from_wire(msg.outputs[0])):
            t.r.check(False, "a region shrunk while read gave a wrong result")
        t.saw("region shrunk while read (%d)" % i, code, msg if code != "OK" else "",
              {"OK", "INVALID_ARGUMENT"})
    os.unlink(path)
    return shrank


def bundles(n, cl, t, rnd, count=200):
    """Hostile bundles through CacheImport: every mutation of a real one
    is refused, and the cache is unchanged."""
    out = os.path.join(n.dir, "real.bundle")
    r = n.nkictl("cache", "export", out)
    assert r.returncode == 0, r.stderr
    with open(out, "rb") as f:
        real = f.read()
    before = cl.call("CacheStat", pb.CacheStatRequest()).entries
    imported = 0
    for i in range(count):
        b = bytearray(real)
        how = i % 6
        if how == 0:
            b[rnd.randrange(len(b))] ^= 1 << rnd.randrange(8)
        elif how == 1:
            b = b[:rnd.randrange(len(b))]
        elif how == 2:      # the count
            b[12:16] = struct.pack("<I", rnd.choice((0, 2, 1000000, 2 ** 32 - 1)))
        elif how == 3:      # a length field somewhere
            off = rnd.randrange(16, len(b) - 4)
            b[off:off + 4] = struct.pack("<I", rnd.choice((2 ** 31, 2 ** 32 - 1, 65537)))
        elif how == 4:      # stray bytes
            b += os.urandom(rnd.randrange(1, 64))
        else:               # random bytes with the magic
            b = bytearray(b"NKIDBDL1" + os.urandom(rnd.randrange(8, 2000)))
        if bytes(b) == real:    # e.g. the count set to what it was
            b[-1] ^= 1
        chunks = [pb.CacheChunk(data=bytes(b[j:j + 700])).SerializeToString()
                  for j in range(0, len(b), 700)] or [b""]
        code, msg = raw_call(raw_channel(n.sock), "CacheImport", None, "client", chunks=chunks)
        imported += code == "OK"
        t.saw("hostile bundle %d" % i, code, msg, {"INVALID_ARGUMENT"})
    after = cl.call("CacheStat", pb.CacheStatRequest()).entries
    t.r.check(after == before, "hostile bundles changed the cache: %d -> %d entries"
              % (before, after))
    return imported


def mutated_irs(cl, t, rnd, count=500):
    seeds = []
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "corpus", "nkir")
    for f in sorted(os.listdir(here)):
        with open(os.path.join(here, f), "rb") as fh:
            seeds.append(fh.read())
    for i in range(count):
        b = bytearray(rnd.choice(seeds))
        for _ in range(rnd.randrange(1, 5)):
            op = rnd.randrange(3)
            if op == 0 and b:
                b[rnd.randrange(len(b))] ^= 1 << rnd.randrange(8)
            elif op == 1 and b:
                b = b[:rnd.randrange(len(b))]
            else:
                at = rnd.randrange(len(b) + 1)
                b[at:at] = bytes([rnd.choice((0, 1, 0x7f, 0x80, 0xff))])
        ref = pb.KernelRef(kernel=pb.Kernel(name="mut%d" % i, format="nkir/1", ir=bytes(b)))
        code, msg = call(cl, "Compile", pb.CompileRequest(ref=ref))
        t.saw("mutated IR %d" % i, code, msg,
              {"OK", "INVALID_ARGUMENT", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION"})


def nested_ir(cl, t):
    """IRs nested past any sane depth: a refusal, not a stack overflow."""
    for depth in (100, 10000, 200000):
        # Kernel.body (7) -> Op.loop (14) -> Loop.body (6) -> Op.loop ...
        inner = b""
        for _ in range(depth):
            inner = pbfield(6, pbfield(14, inner))
        ir = pbfield(1, b"deep") + pbfield(7, pbfield(14, inner))
        ref = pb.KernelRef(kernel=pb.Kernel(name="deep", format="nkir/1", ir=ir))
        code, msg = call(cl, "Compile", pb.CompileRequest(ref=ref))
        t.saw("IR nested %d deep" % depth, code, msg,
              {"INVALID_ARGUMENT", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION"})


def scenario(ctx, r):
    rnd = random.Random(1818)
    n = ctx.nkid(config=CONFIG)
    pid = n.pid
    cl = n.client()
    ch = raw_channel(n.sock)
    t = Tally(r)
    case = kernels.Case(2.0)
    cl.compile(case.ref)
    steps = [("garbage", lambda: garbage(ch, t, rnd)), ("oversized", lambda: oversized(ch, t)),
             ("unknown", lambda: unknown(ch, t, rnd)), ("tensors", lambda: tensors(cl, t, case)),
             ("strings", lambda: strings(ch, t, case)), ("shm", lambda: shm(cl, t, case, ctx)),
             ("shrink", lambda: r.fig("shrank", shrink(cl, t, ctx))),
             ("bundles", lambda: bundles(n, cl, t, rnd)),
             ("mutated IRs", lambda: mutated_irs(cl, t, rnd)),
             ("nested IRs", lambda: nested_ir(cl, t))]
    for what, fn in steps:
        before = t.tried
        fn()
        r.note("%s: %d" % (what, t.tried - before))
        if not alive(ctx, r, n, "after %s" % what):
            n.start()
            pid = n.pid
            cl = n.client()
            ch = raw_channel(n.sock)
    r.check(n.pid == pid, "nkid was restarted")
    # Still right after all that.
    got = cl.run(case.ref, case.inputs)
    r.check(case.check(from_wire(got.outputs[0])), "a correct kernel gave a wrong result after")
    r.fig("tried", t.tried)
    r.fig("codes", ",".join("%s:%d" % kv for kv in sorted(t.codes.items())))
    r.check(n.stop() == 0, "nkid did not stop cleanly")
