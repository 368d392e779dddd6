"""Restart nkid under client processes calling a kernel in a loop, and
count what the clients saw (tests/func/0009-restart.sh, scripts/bench.py).

    restart_drive.py drive --nkid NKID --dir DIR [--clients 16]
        [--restarts 5] [--modes plain,activate] [--json OUT]

starts CLIENTS processes (``client`` below) that call a tiny nki.jit
kernel (128x8 float32 add) in a loop on DIR/nkid.sock, each result checked
against numpy, and restarts nkid RESTARTS times in each mode:

- ``plain``: nkid -s DIR/nkid.sock; SIGTERM, wait for it to exit, start a
  new one on the same socket (nkid removes its socket when it stops and
  makes a new one);
- ``activate``: systemd-socket-activate -l DIR/nkid.sock runs ``supervise``
  (this file), which holds the listening socket as systemd's nkid.socket
  does and, on SIGUSR1, stops nkid (SIGTERM, wait) and starts a new one
  given the same socket (LISTEN_FDS).

Prints (and writes to OUT) one JSON object: calls, failed calls (with the
first messages), and per mode the longest call (the stall a client saw,
ms) while nkid restarted.  Exit status 0 whatever the counts: the caller
judges them.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))


# ------------------------------------------------------------------ client

def client(args):
    import numpy as np
    sys.path.insert(0, os.path.join(TOP, "client", "python"))
    from nkid import nki
    import nkid.nki.language as nl

    @nki.jit
    def tiny_add(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.load(a) + nl.load(b))
        return out

    rng = np.random.default_rng(os.getpid())
    a = rng.standard_normal((128, 8), dtype=np.float32)
    b = rng.standard_normal((128, 8), dtype=np.float32)
    calls = failed = 0
    errors = []
    slow = []          # (start, ms) of calls over 20 ms
    ready = False
    while not os.path.exists(args.stop):
        t0 = time.monotonic()
        try:
            out = tiny_add(a, b)
            if not np.array_equal(out, a + b):
                raise AssertionError("wrong result")
            calls += 1
        except Exception as e:  # noqa: BLE001  (every failure is counted)
            failed += 1
            if len(errors) < 5:
                errors.append("%s: %s" % (type(e).__name__, str(e)[:300]))
        dt = (time.monotonic() - t0) * 1000
        if dt > 20:
            slow.append((t0, dt))
        if not ready:
            ready = True
            open(args.ready, "w").close()
    with open(args.out, "w") as f:
        json.dump({"calls": calls, "failed": failed, "errors": errors, "slow": slow}, f)


# -------------------------------------------------------------- supervise

def supervise(args):
    """Under systemd-socket-activate: fd 3 is the listening socket."""
    if os.environ.get("LISTEN_FDS") != "1":
        sys.exit("supervise: no socket passed (LISTEN_FDS)")
    os.set_inheritable(3, True)
    state = {"proc": None, "restart": False, "quit": False}

    def start():
        # LISTEN_PID must be nkid's own pid: the shell execs nkid.
        state["proc"] = subprocess.Popen(
            ["sh", "-c", 'LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" "$@"', args.nkid,
             "--state-dir", args.state], pass_fds=(3,), stdout=args.log_f,
            stderr=subprocess.STDOUT)
        with open(args.pidfile + ".tmp", "w") as f:
            f.write("%d\n" % state["proc"].pid)
        os.rename(args.pidfile + ".tmp", args.pidfile)

    def on_usr1(sig, frm):
        state["restart"] = True

    def on_term(sig, frm):
        state["quit"] = True

    signal.signal(signal.SIGUSR1, on_usr1)
    signal.signal(signal.SIGTERM, on_term)
    args.log_f = open(args.log, "ab")
    start()
    while not state["quit"]:
        if state["restart"]:
            state["restart"] = False
            state["proc"].send_signal(signal.SIGTERM)
            state["proc"].wait()
            start()
        time.sleep(0.002)
    state["proc"].send_signal(signal.SIGTERM)
    state["proc"].wait()


# ------------------------------------------------------------------ drive

def _ping(sock, timeout):
    sys.path.insert(0, os.path.join(TOP, "client", "python"))
    from nkid.client import Client
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            c = Client(sock)
            c.call("Ping", __import__("nkid.client").client.pb.PingRequest(), timeout=1)
            c.close()
            return True
        except Exception:  # noqa: BLE001
            time.sleep(0.01)
    return False


def _status_pid(sock):
    from nkid.client import Client
    c = Client(sock)
    try:
        return c.status().pid
    finally:
        c.close()


def drive(args):
    d = args.dir
    sock = os.path.join(d, "nkid.sock")
    state = os.path.join(d, "state")
    log = os.path.join(d, "nkid.log")
    stop = os.path.join(d, "stop")
    os.makedirs(state, exist_ok=True)
    logf = open(log, "ab")
    env = dict(os.environ, NKID_SOCKET=sock)
    env.pop("NKID_SHM_THRESHOLD", None)
    modes = [m for m in args.modes.split(",") if m]
    phases = []
    result = {"clients": args.clients, "restarts_per_mode": args.restarts, "modes": {}}

    def plain_start():
        return subprocess.Popen([args.nkid, "-s", sock, "--state-dir", state],
                                stdout=logf, stderr=subprocess.STDOUT)

    nkid = plain_start() if modes[0] == "plain" else None
    sup = None
    if nkid is not None and not _ping(sock, 15):
        sys.exit("nkid did not start")
    # The clients, warmed up on the first nkid (or the first activation).
    if modes[0] == "activate":
        sup = _activate(args, sock, state, log)
    procs = []
    for i in range(args.clients):
        p = subprocess.Popen([sys.executable, __file__, "client", "--stop", stop,
                              "--ready", os.path.join(d, "ready.%d" % i),
                              "--out", os.path.join(d, "client.%d.json" % i)], env=env,
                             stderr=open(os.path.join(d, "client.%d.log" % i), "wb"))
        procs.append(p)
    end = time.monotonic() + 60
    while any(not os.path.exists(os.path.join(d, "ready.%d" % i)) for i in range(args.clients)):
        if time.monotonic() > end or any(p.poll() is not None for p in procs):
            open(stop, "w").close()
            sys.exit("the clients did not start")
        time.sleep(0.05)
    time.sleep(0.2)
    for mode in modes:
        if mode == "plain":
            if nkid is None:
                nkid = plain_start()
            t0 = time.monotonic()
            for _ in range(args.restarts):
                time.sleep(args.gap)
                nkid.send_signal(signal.SIGTERM)
                nkid.wait()
                nkid = plain_start()
                _ping(sock, 15)
            time.sleep(args.gap)
            phases.append((mode, t0, time.monotonic()))
            nkid.send_signal(signal.SIGTERM)
            nkid.wait()
            nkid = None
        else:
            if sup is None:
                sup = _activate(args, sock, state, log)
            pidfile = os.path.join(d, "nkid.pid")
            t0 = time.monotonic()
            for _ in range(args.restarts):
                time.sleep(args.gap)
                old = open(pidfile).read()
                sup.send_signal(signal.SIGUSR1)
                end = time.monotonic() + 15
                while open(pidfile).read() == old and time.monotonic() < end:
                    time.sleep(0.005)
                _ping(sock, 15)
            time.sleep(args.gap)
            phases.append((mode, t0, time.monotonic()))
            sup.send_signal(signal.SIGTERM)
            sup.wait()
            sup = None
    open(stop, "w").close()
    # Stopped nkid last: let the clients' calls in flight end somewhere.
    if nkid is None and sup is None:
        nkid = plain_start()
    for p in procs:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
    if nkid is not None:
        nkid.send_signal(signal.SIGTERM)
        nkid.wait()
    calls = failed = 0
    errors = []
    for m, _, _ in phases:
        result["modes"][m] = {"max_stall_ms": 0.0}
    for i in range(args.clients):
        try:
            with open(os.path.join(d, "client.%d.json" % i)) as f:
                r = json.load(f)
        except (OSError, ValueError):
            failed += 1
            errors.append("client %d left no report" % i)
            continue
        calls += r["calls"]
        failed += r["failed"]
        errors += r["errors"]
        for t, ms in r["slow"]:
            for m, a, b in phases:
                if a <= t <= b:
                    mm = result["modes"][m]
                    mm["max_stall_ms"] = max(mm["max_stall_ms"], round(ms, 1))
    result.update(calls=calls, failed_calls=failed, errors=errors[:10],
                  max_stall_ms=max([v["max_stall_ms"] for v in result["modes"].values()] or [0]))
    text = json.dumps(result, indent=1, sort_keys=True)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text)


def _activate(args, sock, state, log):
    pidfile = os.path.join(args.dir, "nkid.pid")
    sup = subprocess.Popen(["systemd-socket-activate", "-l", sock, sys.executable, __file__,
                            "supervise", "--nkid", args.nkid, "--state", state, "--log", log,
                            "--pidfile", pidfile], stdout=subprocess.DEVNULL,
                           stderr=open(log, "ab"))
    end = time.monotonic() + 15
    while not os.path.exists(sock):
        if time.monotonic() > end or sup.poll() is not None:
            sys.exit("systemd-socket-activate did not make %s" % sock)
        time.sleep(0.01)
    if not _ping(sock, 15):
        sys.exit("the activated nkid did not answer")
    return sup


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("client")
    c.add_argument("--stop", required=True)
    c.add_argument("--ready", required=True)
    c.add_argument("--out", required=True)
    s = sub.add_parser("supervise")
    s.add_argument("--nkid", required=True)
    s.add_argument("--state", required=True)
    s.add_argument("--log", required=True)
    s.add_argument("--pidfile", required=True)
    dr = sub.add_parser("drive")
    dr.add_argument("--nkid", required=True)
    dr.add_argument("--dir", required=True)
    dr.add_argument("--clients", type=int, default=16)
    dr.add_argument("--restarts", type=int, default=5)
    dr.add_argument("--modes", default="plain,activate")
    dr.add_argument("--gap", type=float, default=0.4)
    dr.add_argument("--json")
    args = ap.parse_args()
    {"client": client, "supervise": supervise, "drive": drive}[args.cmd](args)


if __name__ == "__main__":
    main()
