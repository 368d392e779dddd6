"""crash: kill -9 of nkid during concurrent compiles and runs from 8
client processes, round after round; after each, the cache verifies
offline, every acknowledged store is present and every result correct."""

import os
import random
import sqlite3
import subprocess
import sys
import time

import kernels
from common import alive, run_case

WORKERS = 8


def read_acks(paths):
    """{key: (a, seed)} acknowledged, and the count of wrong results, over
    every worker file."""
    acks, wrong, runs = {}, 0, 0
    for p in paths:
        try:
            with open(p) as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        for line in lines:
            w = line.split()
            if len(w) == 4 and w[0] == "ACK":
                acks[w[1]] = (float(w[2]), int(w[3]))
            elif len(w) == 3 and w[0] == "RUN":
                runs += 1
                wrong += w[1] == "WRONG"
    return acks, wrong, runs


def present_keys(cache_dir):
    db = sqlite3.connect("file:%s/index.db?mode=ro" % cache_dir, uri=True)
    try:
        assert db.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        return {k for (k,) in db.execute("SELECT key FROM neff WHERE status = 'ok'")}
    finally:
        db.close()


def check_results(cl, acks, keys):
    """Run each key by key alone with its inputs: the count of wrong ones
    and of failures (with the first message)."""
    wrong, failed, first = 0, 0, ""
    for k in keys:
        a, seed = acks[k]
        st, ok = run_case(cl, kernels.Case(a, seed=seed), by_key=k)
        if st != "OK":
            failed += 1
            first = first or "%s %s" % (st, ok)
        elif not ok:
            wrong += 1
    return wrong, failed, first


def scenario(ctx, r):
    rnd = random.Random(18)
    n = ctx.nkid(config={"cache": {"max_bytes": "1GiB"}}, start=False)
    stop = os.path.join(n.dir, "stop")
    outs = [os.path.join(n.dir, "worker.%d" % i) for i in range(WORKERS)]
    here = os.path.dirname(os.path.abspath(__file__))
    procs = [subprocess.Popen([sys.executable, os.path.join(here, "worker.py"), n.sock, o, stop,
                               str(i + 1)], stdout=subprocess.DEVNULL)
             for i, o in enumerate(outs)]
    checked = set()
    lost = set()
    rounds = wrong_stored = verify_failed = 0
    try:
        for rd in range(ctx.rounds):
            # Odd rounds put every blob in a file, even rounds in the index.
            if rd % 2:
                n.env["NKID_CACHE_INLINE_MAX"] = "256"
            else:
                n.env.pop("NKID_CACHE_INLINE_MAX", None)
            n.start()
            if rd == 0:
                time.sleep(2.0)     # the workers import numpy and gRPC
            time.sleep(rnd.uniform(0.4, 1.2))
            n.crash()
            rounds += 1
            v = n.offline("cache", "verify")
            if not r.check(v.returncode == 0, "round %d: cache verify: %s"
                           % (rd, (v.stdout + v.stderr).strip()[-300:])):
                verify_failed += 1
            acks, _, _ = read_acks(outs)
            have = present_keys(n.cache)
            gone = set(acks) - have
            r.check(not gone, "round %d: %d acknowledged stores lost (%s)"
                    % (rd, len(gone), " ".join(sorted(gone)[:3])))
            lost |= gone
            # Results of the stores new this round, by key, from a
            # fresh nkid (the next round's).
            n.start()
            new = sorted(k for k in acks if k not in checked and k in have)
            rnd.shuffle(new)
            w, f, first = check_results(n.client(), acks, new[:40])
            wrong_stored += w
            r.check(w == 0, "round %d: %d stored kernels gave wrong results" % (rd, w))
            r.check(f == 0, "round %d: %d stored kernels failed: %s" % (rd, f, first))
            checked.update(new[:40])
            n.crash()
        # The end: every acknowledged store runs correctly from the cache.
        with open(stop, "w"):
            pass
        for p in procs:
            p.wait(timeout=60)
        n.start()
        acks, worker_wrong, runs = read_acks(outs)
        have = present_keys(n.cache)
        lost |= set(acks) - have
        w, f, first = check_results(n.client(), acks, sorted(set(acks) & have))
        wrong_stored += w
        r.check(f == 0, "end: %d acknowledged kernels failed: %s" % (f, first))
        alive(ctx, r, n, "after the last round")
        r.check(n.stop() == 0, "nkid did not stop cleanly")
        r.check(not os.listdir(os.path.join(n.cache, "tmp")), "temp files left in cache/tmp")
    finally:
        with open(stop, "w"):
            pass
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    r.fig("rounds", rounds)
    r.fig("acked", len(acks))
    r.fig("lost", len(lost))
    r.fig("wrong", wrong_stored + worker_wrong)
    r.fig("runs_checked", runs + len(acks))
    r.fig("verify_failed", verify_failed)
    r.check(worker_wrong == 0, "%d runs by the clients gave wrong results" % worker_wrong)
    r.check(rounds >= ctx.rounds, "only %d rounds" % rounds)
    r.check(len(acks) > rounds, "too few stores acknowledged (%d) to mean anything" % len(acks))
