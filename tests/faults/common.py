"""What the scenarios of make faults share: a result with figures, the
context that counts the figures of results.json, calls that record their
status instead of raising."""

import os
import re
import shutil
import subprocess
import tempfile
import time
import traceback

import grpc
import numpy as np

from daemon import Nkid, TOP
from nkid.client import from_wire
from nkid.errors import NkidError
from nkid._proto import nkid_pb2 as pb

# What a sanitizer or a crash leaves in nkid's log.
CRASH_MARKS = re.compile(r"AddressSanitizer|LeakSanitizer|runtime error:|Segmentation fault"
                         r"|Assertion .* failed|core dumped")


class Skip(Exception):
    """The scenario cannot run here (the reason is printed)."""


def wait_for(pred, timeout, step=0.01):
    """Seconds until pred() held, or None."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        if pred():
            return time.time() - t0
        time.sleep(step)
    return None


class PrivateRedis:
    """A real redis-server on a Unix socket (``sock``) in a temporary
    directory of its own (``top``), with a fleet key file beside it
    (``key``), answering when made; ``close()`` stops it (if still up) and
    removes the directory."""

    def __init__(self, prefix):
        if not shutil.which("redis-server") or not shutil.which("redis-cli"):
            raise Skip("no redis-server or redis-cli (make deps installs them)")
        self.top = tempfile.mkdtemp(prefix=prefix)
        self.sock = os.path.join(self.top, "redis.sock")
        self.key = os.path.join(self.top, "fleet.key")
        with open(self.key, "w") as f:
            f.write("fleet-key-of-make-faults-0123456789\n")
        os.chmod(self.key, 0o600)
        self.proc = subprocess.Popen(
            ["redis-server", "--port", "0", "--unixsocket", self.sock,
             "--unixsocketperm", "700", "--dir", self.top, "--save", "",
             "--appendonly", "no", "--logfile", os.path.join(self.top, "redis.log")])
        wait_for(lambda: b"PONG" in self.cli("ping").stdout, 5, 0.05)

    def cli(self, *args, data=None):
        """redis-cli; data, if given, is the last argument (read from stdin: -x)."""
        return subprocess.run(["redis-cli", "-s", self.sock] + (["-x"] if data is not None
                                                               else []) + list(args),
                              input=data, capture_output=True)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def close(self):
        self.kill()
        shutil.rmtree(self.top, ignore_errors=True)


class Result:
    def __init__(self, name):
        self.name = name
        self.status = "PASS"
        self.figures = {}
        self.notes = []
        self.failures = []
        self.seconds = 0.0

    def fig(self, key, value):
        self.figures[key] = value

    def add(self, key, n=1):
        self.figures[key] = self.figures.get(key, 0) + n

    def note(self, text):
        self.notes.append(text)

    def check(self, cond, what):
        """Record a failure (the scenario goes on) unless cond holds."""
        if not cond:
            self.failures.append(what)
            self.status = "FAIL"
        return bool(cond)

    def line(self):
        figs = " ".join("%s=%s" % (k, fmt(v)) for k, v in self.figures.items())
        s = "%-4s  %-16s %s  (%.0f s)" % (self.status, self.name, figs, self.seconds)
        for f in self.failures[:10]:
            s += "\n      - " + f
        if self.status == "SKIP":
            s += "\n      " + "; ".join(self.notes)
        return s


def fmt(v):
    if isinstance(v, float):
        return "%.3g" % v
    return str(v)


class Context:
    """The run's settings and the nkid instances of the running scenario."""

    def __init__(self, build="build", rounds=50):
        self.build = build
        self.rounds = rounds
        self.root = os.geteuid() == 0
        self.instances = []
        self.mounts = []
        # The shim is never built with a sanitizer: take build/'s for
        # build-asan/ (ASan is told it need not come first).
        self.iofail = os.path.join(TOP, build, "tests", "libiofail.so")
        if not os.path.exists(self.iofail):
            self.iofail = os.path.join(TOP, "build", "tests", "libiofail.so")
        self.fake_nrt = os.path.join(TOP, build, "tests", "libfake_nrt.so")
        self.ctl = os.path.join(TOP, build, "bin", "nkictl")
        self.crashes = 0        # nkid deaths nobody asked for, over all scenarios
        self.crash_notes = []

    def nkid(self, config=None, env=None, workdir=None, start=True, **kw):
        n = Nkid(build=self.build, env=env, workdir=workdir, **kw)
        n.write_config(config if config is not None else {})
        self.instances.append(n)
        if start:
            n.start()
        return n

    def mount_tmpfs(self, path, size):
        os.makedirs(path, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0750" % size, "tmpfs", path],
                       check=True)
        self.mounts.append(path)

    def mount_readonly(self, path):
        subprocess.run(["mount", "--bind", path, path], check=True)
        self.mounts.append(path)
        subprocess.run(["mount", "-o", "remount,ro,bind", path], check=True)

    def crashed(self, r, n, what):
        """Count an nkid that died (or logged a sanitizer report)."""
        self.crashes += 1
        self.crash_notes.append("%s: %s: %s" % (r.name, what, n.tail(5)))
        r.check(False, "nkid crashed: %s" % what)

    def cleanup(self, r):
        for n in self.instances:
            if n.proc is not None and n.proc.poll() is not None and n.proc.returncode < 0 \
                    and not getattr(n, "killed", False):
                self.crashed(r, n, "died of signal %d" % -n.proc.returncode)
            if CRASH_MARKS.search(n.log_text()):
                self.crashed(r, n, "crash report in its log")
            n.crash()
        # Mounts go before the directories they are in.
        for m in reversed(self.mounts):
            subprocess.run(["umount", "-l", m], stderr=subprocess.DEVNULL)
        self.mounts = []
        for n in self.instances:
            n.close()
        self.instances = []


def run_one(ctx, name, fn):
    r = Result(name)
    t0 = time.time()
    try:
        fn(ctx, r)
    except Skip as e:
        r.status = "SKIP"
        r.note(str(e))
    except Exception as e:  # a bug in the scenario or an unexpected answer
        r.check(False, "%s: %s" % (type(e).__name__, e))
        r.note(traceback.format_exc())
    finally:
        try:
            ctx.cleanup(r)
        except Exception as e:
            r.check(False, "cleanup: %s" % e)
    r.seconds = time.time() - t0
    return r


def alive(ctx, r, n, what):
    """nkid still runs (and answers); counts a crash otherwise."""
    if not n.alive():
        ctx.crashed(r, n, "%s: exited %s" % (what, n.proc.returncode))
        return False
    ok = n.ctl_ok("--timeout", "5", "ping")
    r.check(ok, "%s: nkid does not answer a ping" % what)
    return ok


def call(cl, method, req, timeout=30):
    """(status name, reply or message) of one call through nkid.Client."""
    try:
        return "OK", cl.call(method, req, timeout=timeout)
    except NkidError as e:
        return (e.code or "UNKNOWN"), str(e)


def run_case(cl, case, by_key=None, timeout=30):
    """Run case (by its IR, or by key alone) and check the output:
    ("OK", True|False), or (status, message)."""
    ref = pb.KernelRef(neff_key=by_key) if by_key else case.ref
    st, rep = call(cl, "Run", pb.RunRequest(ref=ref, inputs=case.inputs), timeout)
    if st != "OK":
        return st, rep
    return "OK", case.check(from_wire(rep.outputs[0]))


def raw_channel(sock, local_pool=True):
    opts = [("grpc.enable_http_proxy", 0), ("grpc.max_send_message_length", 2 ** 31 - 1),
            ("grpc.max_receive_message_length", 2 ** 31 - 1)]
    if local_pool:
        opts.append(("grpc.use_local_subchannel_pool", 1))
    return grpc.insecure_channel("unix:" + os.path.abspath(sock), options=opts)


def raw_call(ch, method, data, kind="unary", timeout=10, chunks=None):
    """Send bytes as method's request (no protobuf on this side): the
    status name and message."""
    path = "/nkid.v1.Nkid/" + method if not method.startswith("/") else method
    try:
        if kind == "unary":
            ch.unary_unary(path)(data, timeout=timeout)
        elif kind == "server":
            for _ in ch.unary_stream(path)(data, timeout=timeout):
                pass
        elif kind == "client":
            ch.stream_unary(path)(iter(chunks if chunks is not None else [data]),
                                  timeout=timeout)
        else:
            for _ in ch.stream_stream(path)(iter(chunks if chunks is not None else [data]),
                                            timeout=timeout):
                pass
        return "OK", ""
    except grpc.RpcError as e:
        return e.code().name, e.details() or ""


def percentile(xs, p):
    if not xs:
        return 0.0
    return float(np.percentile(np.array(xs), p))
