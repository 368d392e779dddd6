"""Write the seed corpora of the fuzz targets (tests/fuzz/corpus/NAME/) from
a real nkid: images it compiled, bundles it exported, requests it served,
.npy files numpy wrote, the shipped configs. Run once after a format
changes: .venv/bin/python tests/fuzz/seeds.py [--build build]"""

import argparse
import glob
import io
import os
import shutil
import struct
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "faults"))

from daemon import Nkid, TOP  # noqa: E402
import kernels  # noqa: E402
from nkid._proto import nkid_pb2 as pb  # noqa: E402

CORPUS = os.path.join(HERE, "corpus")
# dispatch.c's sorted table: byte 0 of a dispatch input.
METHODS = ["Benchmark", "CacheExport", "CacheImport", "CacheList", "CachePin", "CacheRemove",
           "CacheStat", "Cancel", "Compile", "Jobs", "Lease", "Lookup", "Ping", "Profile", "Run",
           "Simulate", "Status", "Warmup"]


def put(name, fname, data):
    d = os.path.join(CORPUS, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, fname), "wb") as f:
        f.write(data)


def dispatch_input(method, *msgs, caller=1):
    """fuzz_dispatch.c's framing: method, caller, then length-prefixed messages."""
    out = bytes([METHODS.index(method), caller])
    for m in msgs:
        b = m if isinstance(m, bytes) else m.SerializeToString()
        out += struct.pack("<H", len(b)) + b
    return out


def npy_seeds():
    def save(fname, arr):
        buf = io.BytesIO()
        np.save(buf, arr)
        put("npy", fname, buf.getvalue())
    save("f32.npy", np.arange(12, dtype=np.float32).reshape(3, 4))
    save("f16.npy", np.ones((2, 2, 2), dtype=np.float16))
    save("i8.npy", np.arange(-4, 4, dtype=np.int8))
    save("u16.npy", np.arange(6, dtype=np.uint16).reshape(2, 3))
    save("i64.npy", np.arange(3, dtype=np.int64))
    save("bool.npy", np.array([True, False, True]))
    save("scalar.npy", np.float32(3.5))
    save("empty.npy", np.zeros((0, 4), dtype=np.float32))
    save("bf16-v2.npy", np.zeros(4, dtype="V2"))
    save("fp8-v1.npy", np.zeros(4, dtype="V1"))
    save("big-endian.npy", np.arange(4, dtype=">f4"))
    save("fortran.npy", np.asfortranarray(np.ones((2, 3), dtype=np.float32)))
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.ones(3, dtype=np.float64), version=(2, 0))
    put("npy", "v2.npy", buf.getvalue())


def config_seeds():
    for p in glob.glob(os.path.join(TOP, "config", "*.json")):
        with open(p, "rb") as f:
            put("config", os.path.basename(p), f.read())
    put("config", "access.json", b'{"access": {"allow_uids": [1000, 1001], "allow_gids": [27],'
        b' "admin_gids": [4], "max_connections_per_uid": 8}}')
    put("config", "sizes.json", b'{"limits": {"max_message_bytes": {"control": "1KiB",'
        b' "kernel": "1MiB", "tensor": "2GiB", "chunk": "16MiB"}, "max_ir_bytes": 1048576},'
        b' "cache": {"max_bytes": "1GiB", "compile_workers": 2}}')
    put("config", "neuron.json", b'{"backend": "neuron", "neuron": {"compiler": "neuronx-cc",'
        b' "visible_cores": "0-3", "compile_timeout_ms": 1000}}')
    put("config", "bad.json", b'{"socket_mode": "0999", "log_level": "loud"}')


def daemon_seeds(build):
    n = Nkid(build=build)
    n.write_config({"cache": {"max_bytes": "64MiB"}})
    n.start()
    try:
        cl = n.client()
        small = kernels.Case(2.0, rows=128, cols=8)
        other = kernels.Case(-1.0, rows=128, cols=8, seed=1)
        for i, c in enumerate((small, other)):
            r = cl.compile(c.ref, return_neff=True)
            put("nkix", "affine-%d.nkix" % i, r.neff)
            c.key = r.neff_key
        for path in sorted(glob.glob(os.path.join(CORPUS, "nkir", "*.nkir")))[:6]:
            with open(path, "rb") as f:
                irb = f.read()
            ref = pb.KernelRef(kernel=pb.Kernel(name="k", format="nkir/1", ir=irb))
            try:
                r = cl.compile(ref, return_neff=True)
                put("nkix", os.path.basename(path)[:-5] + ".nkix", r.neff)
            except Exception:
                pass    # a corpus IR nkid refuses: a failed entry, exported below
        bad = pb.KernelRef(kernel=pb.Kernel(name="bad", format="nkir/1", ir=b"\x0a\x01"))
        try:
            cl.compile(bad)
        except Exception:
            pass
        # Bundles: empty, one entry, two entries, everything (a failure too).
        bdir = tempfile.mkdtemp()
        for fname, args in (("empty", [small.key[:8] + "x"]), ("one", [small.key]),
                            ("two", [small.key, other.key]), ("all", [])):
            out = os.path.join(bdir, fname + ".bundle")
            keys = [] if fname == "all" else args
            if fname == "empty":
                r = n.nkictl("cache", "export", "--pinned", out)
            else:
                r = n.nkictl("cache", "export", out, *keys)
            if r.returncode == 0 and os.path.getsize(out) <= 65536:
                with open(out, "rb") as f:
                    put("bundle", fname + ".bundle", f.read())
        shutil.rmtree(bdir)

        # Requests, one or more per method.
        key = small.key
        put("dispatch", "ping", dispatch_input("Ping", pb.PingRequest(payload=b"hello")))
        put("dispatch", "status", dispatch_input("Status", pb.StatusRequest()))
        put("dispatch", "jobs", dispatch_input("Jobs", pb.JobsRequest(all=True)))
        put("dispatch", "cachestat", dispatch_input("CacheStat", pb.CacheStatRequest()))
        put("dispatch", "cachelist", dispatch_input("CacheList", pb.CacheListRequest(
            prefix=key[:4], limit=5)))
        put("dispatch", "cachepin", dispatch_input("CachePin", pb.CachePinRequest(keys=[key])))
        put("dispatch", "cacheunpin", dispatch_input("CachePin", pb.CachePinRequest(
            keys=[key, "0" * 64], unpin=True), caller=3))
        put("dispatch", "cacheremove", dispatch_input("CacheRemove", pb.CacheRemoveRequest(
            keys=["f" * 64])))
        put("dispatch", "cancel", dispatch_input("Cancel", pb.CancelRequest(job_id=1)))
        put("dispatch", "lookup", dispatch_input("Lookup", pb.LookupRequest(
            ir_digest=small.traced.ir_digest, format="nkir/1")))
        put("dispatch", "compile", dispatch_input("Compile", pb.CompileRequest(
            ref=small.ref, return_neff=True)))
        put("dispatch", "compile-key", dispatch_input("Compile", pb.CompileRequest(
            ref=pb.KernelRef(neff_key=key))))
        put("dispatch", "warmup", dispatch_input("Warmup", pb.WarmupRequest(
            items=[pb.WarmupItem(ref=small.ref), pb.WarmupItem(ref=bad)])))
        put("dispatch", "run", dispatch_input("Run", pb.RunRequest(
            ref=small.ref, inputs=small.inputs, core=-1)))
        put("dispatch", "run-shm", dispatch_input("Run", pb.RunRequest(
            ref=small.ref, inputs=[pb.Tensor(name="x", dtype="float32", shape=[128, 8],
                                             shm=pb.ShmRegion(name="nkid.fuzz", size=4096)),
                                   small.inputs[1]],
            output_shm=pb.ShmRegion(name="nkid.fuzz-out", size=4096))))
        put("dispatch", "simulate", dispatch_input("Simulate", pb.SimulateRequest(
            ref=small.ref, inputs=small.inputs)))
        put("dispatch", "benchmark", dispatch_input("Benchmark", pb.BenchmarkRequest(
            ref=small.ref, inputs=[pb.Tensor(name=t.name, dtype=t.dtype, shape=t.shape)
                                   for t in small.inputs], warmup=1, iters=2)))
        put("dispatch", "profile", dispatch_input("Profile", pb.ProfileRequest(
            ref=small.ref, inputs=small.inputs, num_execs=2, profile_nth=1)))
        put("dispatch", "lease", dispatch_input("Lease", pb.LeaseRequest(
            core=-1, max_seconds=1, holder="fuzz")))
        put("dispatch", "export", dispatch_input("CacheExport", pb.CacheExportRequest(
            keys=[key])))
        put("dispatch", "export-pinned", dispatch_input("CacheExport", pb.CacheExportRequest(
            pinned_only=True)))
        one = os.path.join(CORPUS, "bundle", "one.bundle")
        if os.path.exists(one):
            with open(one, "rb") as f:
                b = f.read()
            half = len(b) // 2
            put("dispatch", "import", dispatch_input(
                "CacheImport", pb.CacheChunk(data=b[:half]), pb.CacheChunk(data=b[half:])))
    finally:
        rc = n.stop()
        n.close()
    if rc != 0:
        raise SystemExit("nkid exited %s" % rc)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    a = ap.parse_args()
    for name in ("nkix", "bundle", "npy", "config", "dispatch"):
        shutil.rmtree(os.path.join(CORPUS, name), ignore_errors=True)
    npy_seeds()
    config_seeds()
    daemon_seeds(a.build)
    for name in sorted(os.listdir(CORPUS)):
        print("%-10s %d seeds" % (name, len(os.listdir(os.path.join(CORPUS, name)))))


if __name__ == "__main__":
    main()
