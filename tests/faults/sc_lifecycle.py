"""clients-dying, signals, descriptors, compiler and remote: processes
that go away at the wrong moment, signals under load, running out of
descriptors, a hung and a crashing compiler, the remote cache tier."""

import json
import os
import re
import resource
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time

import kernels
from common import PrivateRedis, Skip, alive, call, run_case, wait_for
from daemon import TOP
from nkid._proto import nkid_pb2 as pb

HERE = os.path.dirname(os.path.abspath(__file__))

# A client that runs the spin kernel of N passes, its input in a shared-
# memory region of its own, and waits for the answer (it is killed first).
PY_SPIN = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, %r)
    import kernels
    from nkid.client import Client
    from nkid._proto import nkid_pb2 as pb
    s = kernels.Spin(int(sys.argv[2]))
    name = "nkid.faults.%%d" %% os.getpid()
    with open("/dev/shm/" + name, "wb") as f:
        f.write(s.x.tobytes())
    x = pb.Tensor(name="x", dtype="float32", shape=[128, 512],
                  shm=pb.ShmRegion(name=name, size=s.x.nbytes))
    print("go", flush=True)
    Client(sys.argv[1]).call("Run", pb.RunRequest(ref=s.ref, inputs=[x]))
""") % HERE


def core_state(cl):
    return [c.state for c in cl.status().cores]


def shm_maps(n):
    with open("/proc/%d/maps" % n.pid) as f:
        return [line for line in f if "/dev/shm/nkid.faults" in line]


def calibrate(cl, seconds):
    """Passes of the spin kernel that take about seconds here."""
    s = kernels.Spin(300)
    cl.compile(s.ref)
    t0 = time.time()
    cl.run(s.ref, s.inputs)
    return max(300, int(300 * seconds / max(time.time() - t0, 1e-3)))


def spawn_spin(n, passes):
    p = subprocess.Popen([sys.executable, "-c", PY_SPIN, n.sock, str(passes)],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    p.stdout.readline()
    return p


def kill9(p):
    p.kill()
    p.wait()
    for f in os.listdir("/dev/shm"):
        if f == "nkid.faults.%d" % p.pid:
            os.unlink("/dev/shm/" + f)


def clients_dying(ctx, r):
    n = ctx.nkid(config={"cpu": {"cores": 1}})
    cl = n.client()
    passes = calibrate(cl, 4.0)
    spin = kernels.Spin(passes)
    cl.compile(spin.ref)
    time.sleep(0.5)
    fds0 = n.nfds()

    # Running: killed while its job runs; the core is free within 1 s.
    a = spawn_spin(n, passes)
    r.check(wait_for(lambda: core_state(cl)[0] == "busy", 10) is not None, "the job never ran")
    had_map = bool(shm_maps(n))
    kill9(a)
    t = wait_for(lambda: core_state(cl)[0] == "idle", 5)
    r.fig("running_free_s", round(t, 3) if t is not None else -1)
    r.check(t is not None and t < 1.0, "core not free within 1 s of a running client's death "
            "(%s)" % t)
    # Queued: behind a running job; killed; its job leaves the queue.
    a = spawn_spin(n, passes)
    wait_for(lambda: core_state(cl)[0] == "busy", 10)
    b = spawn_spin(n, passes)

    def queued():
        return [j for j in cl.call("Jobs", pb.JobsRequest()).jobs
                if j.pid == b.pid and j.state == "queued"]
    r.check(wait_for(lambda: bool(queued()), 10) is not None, "the second job never queued")
    kill9(b)
    t = wait_for(lambda: not queued(), 5)
    r.fig("queued_gone_s", round(t, 3) if t is not None else -1)
    r.check(t is not None and t < 1.0, "a dead client's queued job stayed (%s)" % t)
    kill9(a)
    t = wait_for(lambda: core_state(cl)[0] == "idle", 5)
    r.check(t is not None and t < 1.0, "core not free after the second death (%s)" % t)
    # Holding a lease: nkictl lock killed with its command.
    lock = subprocess.Popen([n.ctl, "-s", n.sock, "lock", "--", "sleep", "60"],
                            start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    r.check(wait_for(lambda: core_state(cl)[0] != "idle", 10) is not None,
            "the lease was never granted")
    os.killpg(lock.pid, signal.SIGKILL)
    lock.wait()
    t = wait_for(lambda: core_state(cl)[0] == "idle", 5)
    r.fig("lease_free_s", round(t, 3) if t is not None else -1)
    r.check(t is not None and t < 1.0, "core not free within 1 s of a lease holder's death (%s)"
            % t)
    # Nothing left behind: no mapping of a dead client's region, no fd.
    time.sleep(1.5)
    r.check(not shm_maps(n), "nkid still maps a dead client's region: %s" % shm_maps(n))
    fds1 = n.nfds()
    r.fig("fds_before", fds0)
    r.fig("fds_after", fds1)
    r.check(fds1 <= fds0, "descriptors leaked: %d before, %d after" % (fds0, fds1))
    case = kernels.Case(5.0)
    st, ok = run_case(cl, case)
    r.check(st == "OK" and ok, "nkid does not run correctly after: %s %s" % (st, ok))
    alive(ctx, r, n, "clients-dying")


class Load:
    """Threads running cached kernels until stopped; counts what fails."""

    def __init__(self, n, threads=4, ok_codes=()):
        self.n = n
        self.stop = threading.Event()
        self.errors = []
        self.wrong = 0
        self.calls = 0
        self.ok_codes = set(ok_codes)
        self.cases = [kernels.Case(7.0 + i, seed=i) for i in range(threads)]
        cl = n.client()
        for c in self.cases:
            cl.compile(c.ref)
        self.threads = [threading.Thread(target=self.loop, args=(c,)) for c in self.cases]
        for t in self.threads:
            t.start()

    def loop(self, c):
        cl = self.n.client()
        while not self.stop.is_set():
            st, ok = run_case(cl, c, timeout=10)
            self.calls += 1
            if st == "OK" and not ok:
                self.wrong += 1
            elif st != "OK" and st not in self.ok_codes:
                self.errors.append("%s %s" % (st, ok))
        cl.close()

    def end(self):
        self.stop.set()
        for t in self.threads:
            t.join()


def signals(ctx, r):
    n = ctx.nkid(config={"cpu": {"cores": 2}, "shutdown_grace_ms": 1000})
    cl = n.client()
    # A broken config under load: refused, the old one kept, no call fails.
    load = Load(n)
    time.sleep(0.5)
    with open(n.config, "w") as f:
        f.write('{"cpu": {"cores": 2}, "jobs": {"max_queued": "many"')
    n.kill(signal.SIGHUP)
    time.sleep(1.0)
    n.write_config({"cpu": {"cores": 2}, "shutdown_grace_ms": 1000,
                    "jobs": {"max_queued_per_client": 63}})
    n.kill(signal.SIGHUP)
    time.sleep(1.0)
    load.end()
    text = n.log_text()
    r.check(re.search(r"reload.*(invalid JSON|nkid\.json)", text, re.I | re.S) is not None,
            "the broken config was not reported")
    r.check("max_queued_per_client" in text, "the good reload was not applied")
    r.check(not load.errors, "calls failed during the reloads: %s" % load.errors[:3])
    r.fig("reload_calls", load.calls)
    r.check(load.wrong == 0, "%d wrong results" % load.wrong)
    r.add("wrong", load.wrong)
    alive(ctx, r, n, "after the reloads")
    # SIGSTOP: calls with deadlines get DEADLINE_EXCEEDED; SIGCONT serves.
    n.kill(signal.SIGSTOP)
    t0 = time.time()
    st, msg = call(cl, "Ping", pb.PingRequest(), timeout=0.5)
    st2, _ = call(cl, "Status", pb.StatusRequest(), timeout=0.5)
    waited = time.time() - t0
    n.kill(signal.SIGCONT)
    r.check(st == "DEADLINE_EXCEEDED" and st2 == "DEADLINE_EXCEEDED",
            "calls to a stopped nkid: %s, %s" % (st, st2))
    r.check(waited < 3, "deadlines of 0.5 s took %.1f s" % waited)
    r.check(wait_for(lambda: n.ctl_ok("--timeout", "1", "ping"), 5) is not None,
            "nkid does not serve after SIGCONT")
    # SIGTERM under load: exit 0 within the grace (1 s) and a margin.
    load = Load(n, ok_codes=("UNAVAILABLE", "CANCELLED", "DEADLINE_EXCEEDED"))
    time.sleep(0.5)
    t0 = time.time()
    n.kill(signal.SIGTERM)
    try:
        rc = n.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        rc = None
    took = time.time() - t0
    load.end()
    r.fig("sigterm_exit_s", round(took, 3))
    r.check(rc == 0, "nkid exited %s at SIGTERM under load" % rc)
    r.check(took < 2.5, "SIGTERM under load took %.1f s (grace 1 s)" % took)
    r.check(load.wrong == 0, "%d wrong results during the stop" % load.wrong)
    r.check(not load.errors, "unexpected failures during the stop: %s" % load.errors[:3])
    n.proc = None


def descriptors(ctx, r):
    n = ctx.nkid(start=False, config={"access": {"max_connections_per_uid": 1000}})

    def low_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    n.preexec = low_limit
    n.start()
    cl = n.client()
    socks = []
    for _ in range(200):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(n.sock)
        except OSError:
            pass
        socks.append(s)
    time.sleep(0.5)

    def cpu():
        with open("/proc/%d/stat" % n.pid) as f:
            w = f.read().rsplit(")", 1)[1].split()
        return (int(w[11]) + int(w[12])) / os.sysconf("SC_CLK_TCK")
    lines0 = n.log_text().count("\n")
    c0 = cpu()
    time.sleep(2.0)
    spent = cpu() - c0
    logged = n.log_text().count("\n") - lines0
    r.fig("connections", len(socks))
    r.fig("cpu_s_while_exhausted", round(spent, 3))
    r.fig("log_lines_2s", logged)
    r.check(spent < 0.5, "nkid spun at EMFILE: %.2f s of CPU in 2 s" % spent)
    r.check(logged < 40, "nkid flooded its log at EMFILE: %d lines in 2 s" % logged)
    for s in socks:
        s.close()
    t = wait_for(lambda: n.ctl_ok("--timeout", "1", "ping"), 10, 0.1)
    r.check(t is not None, "nkid does not serve once descriptors are back")
    st, ok = run_case(cl, kernels.Case(3.0))
    r.check(st == "OK" and ok, "a run after EMFILE: %s %s" % (st, ok))
    alive(ctx, r, n, "descriptors")


def compiler(ctx, r):
    """The neuron backend with its test doubles: a compiler that hangs and
    one that crashes get clear errors, and nkid goes on."""
    if not os.path.exists(ctx.fake_nrt):
        raise Skip("no %s (make unit)" % ctx.fake_nrt)
    n = ctx.nkid(start=False)
    dev = os.path.join(n.dir, "dev")
    os.makedirs(dev)
    for i in range(2):
        open(os.path.join(dev, "neuron%d" % i), "w").close()
    pids = os.path.join(n.dir, "cc-pids")
    n.env["FAKE_NEURONX_CC_PIDS"] = pids
    n.write_config({"backend": "neuron", "neuron": {
        "compiler": os.path.join(TOP, "tests", "neuron", "fake-neuronx-cc"),
        "profiler": os.path.join(TOP, "tests", "neuron", "fake-neuron-profile"),
        "ls": os.path.join(n.dir, "no-neuron-ls"), "runtime_library": ctx.fake_nrt,
        "device_glob": dev + "/neuron*", "compile_timeout_ms": 1500, "kill_grace_ms": 500}})
    n.start()
    cl = n.client()

    def compile_src(name, src):
        ref = pb.KernelRef(kernel=pb.Kernel(name=name, format="penguin", ir=src.encode()))
        t0 = time.time()
        st, msg = call(cl, "Compile", pb.CompileRequest(ref=ref), timeout=30)
        return st, msg, time.time() - t0
    for what, src, limit in (("hang", "FAKE_CC_HANG\n", 4.0),
                             ("hang-term-proof", "FAKE_CC_HANG FAKE_CC_HANG_TERM_PROOF\n", 4.5),
                             ("crash", "FAKE_CC_CRASH\n", 5.0),
                             ("garbage", "FAKE_CC_GARBAGE\n", 5.0),
                             ("no-neff", "FAKE_CC_NONEFF\n", 5.0),
                             ("chatty", "FAKE_CC_CHATTY\n", 20.0)):
        st, msg, took = compile_src(what, src)
        r.fig(what + "_s", round(took, 2))
        r.check(st in ("DEADLINE_EXCEEDED", "INVALID_ARGUMENT", "INTERNAL",
                       "FAILED_PRECONDITION", "RESOURCE_EXHAUSTED", "UNAVAILABLE"),
                "%s compiler: %s %s" % (what, st, str(msg)[:160]))
        r.check(bool(msg) and took < limit, "%s compiler: %.1f s, '%s'" % (what, took,
                                                                          str(msg)[:160]))
        r.add("compiler_faults")
        alive(ctx, r, n, "after a %s compiler" % what)
    # No compiler process left behind (a zombie waiting for init is gone).
    def running(pid):
        try:
            with open("/proc/%s/stat" % pid) as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False
    mine = open(pids).read().split() if os.path.exists(pids) else []
    wait_for(lambda: not [p for p in mine if running(p)], 3, 0.05)
    left = [p for p in mine if running(p)]
    r.check(not left, "compiler processes left running: %s" % left)
    for p in left:
        try:
            os.kill(int(p), signal.SIGKILL)
        except OSError:
            pass
    st, msg, _ = compile_src("ok", "# fake-neff: input a float32 4\n# fake-neff: output o float32 4\n")
    r.check(st == "OK", "a good compile after the faults: %s %s" % (st, msg))


def remote(ctx, r):
    """The remote cache tier (Redis) down, slow and lying: a host keeps
    serving right answers, each call bounded by remote.timeout_ms, and
    refuses every entry whose bytes were changed."""
    with open(os.path.join(TOP, "daemon", "config.c")) as f:
        if '"remote.' not in f.read():
            raise Skip("nkid has no remote cache tier (no 'remote' keys in daemon/config.c)")
    redis = PrivateRedis("nkid-faults-redis.")
    rcli, rsock, key = redis.cli, redis.sock, redis.key
    try:
        cfg = {"remote": {"url": "unix://" + rsock, "mode": "read-write",
                          "hmac_key_file": key, "timeout_ms": 300, "lock_ms": 2000}}
        cases = [kernels.Case(11.0 + i / 4.0, seed=i) for i in range(4)]

        def host(what, url=None):
            c = dict(cfg["remote"], url=url or cfg["remote"]["url"])
            n = ctx.nkid(config={"remote": c})
            cl = n.client()
            worst = 0.0
            for c_ in cases:
                t0 = time.time()
                st, ok = run_case(cl, c_)
                worst = max(worst, time.time() - t0)
                r.check(st == "OK" and ok, "%s: %s %s" % (what, st, ok))
            alive(ctx, r, n, what)
            try:
                stat = json.loads(n.nkictl("--json", "cache", "stat").stdout).get("remote", {})
            except ValueError:
                stat = {}
            n.stop()
            r.add("remote_faults")
            return worst, stat
        host("a host that pushes")
        n_keys = len(rcli("--scan", "--pattern", "nkid:neff:*").stdout.split())
        r.check(n_keys >= len(cases), "only %d entries reached Redis" % n_keys)
        host("a host that pulls")
        # Lying: every entry's bytes changed in a different way.
        keys = rcli("--scan", "--pattern", "nkid:neff:*").stdout.decode().split()
        for i, k in enumerate(keys):
            v = rcli("--raw", "get", k).stdout
            how = i % 4
            if how == 0:
                rcli("setrange", k, str(len(v) // 2), "X")
            elif how == 1:
                rcli("set", k, data=v[:len(v) // 2])
            elif how == 2:
                rcli("set", k, data=os.urandom(64))
            else:
                rcli("set", k, data=rcli("--raw", "get", keys[0]).stdout)
        _, stat = host("a host served by a lying Redis")
        r.fig("lying_rejected", stat.get("rejected", -1))
        r.check(stat.get("rejected", 0) >= 1, "no lying entry was counted as rejected: %s" % stat)
        # Down: the server is gone.
        redis.kill()
        worst, stat = host("a host whose Redis is down")
        r.fig("down_errors", stat.get("errors", -1))
        r.fig("down_worst_s", round(worst, 3))
        # Slow: a server that accepts and never answers.
        slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        os.unlink(rsock) if os.path.exists(rsock) else None
        slow.bind(rsock)
        slow.listen(64)
        held = []
        stop = threading.Event()

        def accept():
            slow.settimeout(0.2)
            while not stop.is_set():
                try:
                    held.append(slow.accept()[0])
                except OSError:
                    pass
        th = threading.Thread(target=accept)
        th.start()
        worst, _ = host("a host whose Redis never answers")
        stop.set()
        th.join()
        for c in held:
            c.close()
        slow.close()
        r.fig("slow_worst_s", round(worst, 3))
        r.check(worst < 3.0, "a call took %.1f s with a Redis that never answers" % worst)
    finally:
        redis.close()
