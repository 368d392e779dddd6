"""remote-planted-lock and metrics-flood: what a peer without privileges
can do to the fleet tier and to /metrics (issue 30): locks planted in the
fleet's Redis by a writer without the fleet key, and connections that
hold every slot of the metrics endpoint."""

import socket
import threading
import time
import urllib.error
import urllib.request

import kernels
from common import PrivateRedis, alive, call, run_case
from nkid._proto import nkid_pb2 as pb


def remote_planted_lock(ctx, r):
    """Fleet locks planted by a writer of Redis without the fleet key (no
    TTL, a hash, a TTL of an hour, a hash at an entry's name): a host
    compiles each kernel at once and answers right; a planted lock kept
    alive costs at most remote.lock_wait_ms."""
    redis = PrivateRedis("nkid-faults-planted.")
    rcli, rsock, key = redis.cli, redis.sock, redis.key
    renew_stop = threading.Event()
    try:
        cases = [kernels.Case(21.0 + i / 4.0, seed=i) for i in range(5)]
        # The keys, from a host without the tier (same backend and compiler).
        plain = ctx.nkid()
        keys = []
        for c in cases:
            st, rep = call(plain.client(), "Compile", pb.CompileRequest(ref=c.ref))
            r.check(st == "OK", "compile on a plain host: %s %s" % (st, rep))
            keys.append(rep.neff_key if st == "OK" else "0" * 64)
        plain.stop()
        rcli("set", "nkid:lock:" + keys[0], "planted")
        rcli("hset", "nkid:lock:" + keys[1], "a", "b")
        rcli("set", "nkid:lock:" + keys[2], "planted", "px", "3600000")
        rcli("hset", "nkid:neff:" + keys[3], "a", "b")
        n = ctx.nkid(config={"remote": {
            "url": "unix://" + rsock, "mode": "read-write", "hmac_key_file": key,
            "timeout_ms": 300, "lock_ms": 2000, "lock_wait_ms": 2000}})
        cl = n.client()
        worst = 0.0
        for i, what in enumerate(("no TTL", "a hash", "a TTL of an hour",
                                  "a hash at the entry")):
            t0 = time.time()
            st, ok = run_case(cl, cases[i], timeout=120)
            took = time.time() - t0
            worst = max(worst, took)
            r.check(st == "OK" and ok, "lock planted with %s: %s %s" % (what, st, ok))
            r.check(took < 5.0, "lock planted with %s: %.1f s" % (what, took))
            r.add("planted")
        r.fig("worst_s", round(worst, 3))
        # A planted lock kept alive as a holder would: bounded by lock_wait_ms.

        def renew():
            while not renew_stop.is_set():
                rcli("set", "nkid:lock:" + keys[4], "planted", "px", "1000")
                renew_stop.wait(0.2)
        th = threading.Thread(target=renew)
        th.start()
        time.sleep(0.3)
        t0 = time.time()
        st, ok = run_case(cl, cases[4], timeout=120)
        took = time.time() - t0
        renew_stop.set()
        th.join()
        r.fig("renewed_lock_s", round(took, 3))
        r.check(st == "OK" and ok, "lock kept alive: %s %s" % (st, ok))
        r.check(1.5 <= took < 6.0, "lock kept alive: %.1f s (remote.lock_wait_ms 2000)" % took)
        log = n.log_text()
        r.check(log.count("is not one a host of the fleet set") == 1,
                "planted locks not logged exactly once")
        alive(ctx, r, n, "planted locks")
    finally:
        renew_stop.set()
        redis.close()


def metrics_flood(ctx, r):
    """Connections that send nothing hold every slot of /metrics (16, then
    64): a scrape after they close is answered at once."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    n = ctx.nkid(config={"metrics": {"listen": "127.0.0.1:%d" % port}})
    url = "http://127.0.0.1:%d/metrics" % port

    def scrape(timeout):
        t0 = time.time()
        try:
            with urllib.request.urlopen(url, timeout=timeout) as f:
                f.read()
                return f.status, time.time() - t0
        except (urllib.error.URLError, OSError):
            return 0, time.time() - t0
    code, _ = scrape(5)
    r.check(code == 200, "no scrape before the flood: %s" % code)
    worst, last = 0.0, 0
    for count in (16, 64):
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(count)]
        time.sleep(0.2)
        scrape(0.5)             # waits in the backlog, as a scraper would
        for c in held:
            c.close()
        code, took = scrape(5)
        r.check(code == 200, "after %d connections closed: no answer (%s)" % (count, code))
        worst = max(worst, took)
        last = code
        r.add("floods")
    r.fig("after_flood", last)
    r.fig("after_flood_s", round(worst, 3))
    alive(ctx, r, n, "metrics flood")
