"""make soak DURATION=600: a mixed load on one nkid for DURATION seconds
from many client processes (cached and new kernels, simulations, leases,
cancels, exports, status), with a config reload every 30 s. Fails on any
error, a wrong result, nkid's RSS growing more than 10% after warm-up, or
descriptors left behind. Writes tests/faults/soak.json, soak.svg (the
throughput and p99 over time) and soak.md (the section of report.md).

    .venv/bin/python tests/faults/soak.py [--build build] [--duration 600]
        [--clients 8] [--out tests/faults]"""

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

RELOAD_S = 30
SAMPLE_S = 5
BUCKET_S = 10
RSS_BOUND_PCT = 10.0


# ---------------------------------------------------------------- a client

def client_main(sock, out, stop, wid):
    import numpy as np  # noqa: F401
    import kernels
    from nkid.client import Client, from_wire
    from nkid.errors import NkidError
    from nkid._proto import nkid_pb2 as pb

    rnd = random.Random(wid)
    cl = Client(sock)
    pool = [kernels.Case(1.0 + i / 4.0, seed=i) for i in range(16)]
    spin = kernels.Spin(400)
    fresh = 0
    # The disk cache is small and evicts: the kernels exported are pinned,
    # as an operator pins what they ship.
    cl.call("CachePin", pb.CachePinRequest(keys=[cl.compile(c.ref).neff_key for c in pool]),
            timeout=60)
    f = open(out, "a", buffering=1)

    def rec(op, t0, status, detail=""):
        f.write("%.3f %s %.3f %s %s\n" % (time.time(), op, (time.time() - t0) * 1e3, status,
                                          detail.replace("\n", " ")[:200]))

    def checked(op, t0, c, rep):
        ok = c.check(from_wire(rep.outputs[0]))
        rec(op, t0, "OK" if ok else "WRONG")

    ops = (["cached"] * 40 + ["new"] * 12 + ["simulate"] * 10 + ["lease"] * 6 +
           ["cancel"] * 5 + ["deadline"] * 5 + ["export"] * 4 + ["status"] * 8 + ["list"] * 4 +
           ["benchmark"] * 6)
    while not os.path.exists(stop):
        op = rnd.choice(ops)
        t0 = time.time()
        try:
            if op == "cached":
                c = rnd.choice(pool)
                checked(op, t0, c, cl.run(c.ref, c.inputs))
            elif op == "new":
                fresh += 1
                c = kernels.Case(wid * 1000 + fresh / 1024.0, seed=fresh % 5)
                checked(op, t0, c, cl.run(c.ref, c.inputs))
            elif op == "simulate":
                c = rnd.choice(pool)
                checked(op, t0, c, cl.simulate(c.ref, c.inputs))
            elif op == "benchmark":
                c = rnd.choice(pool)
                rep = cl.benchmark(c.ref, c.inputs, warmup=1, iters=3)
                rec(op, t0, "OK" if len(rep.samples_us) == 3 else "WRONG")
            elif op == "lease":
                q = []
                got = []

                def reqs():
                    yield pb.LeaseRequest(core=-1, max_seconds=5, holder="soak")
                    while not got:
                        time.sleep(0.01)
                    time.sleep(0.05)
                for rep in cl._stub.Lease(reqs(), timeout=30):
                    q.append(rep.state)
                    if rep.state == pb.LeaseReply.GRANTED:
                        got.append(1)
                rec(op, t0, "OK" if pb.LeaseReply.GRANTED in q else "WRONG", str(q))
            elif op == "cancel":
                # Start a long run, cancel it by its job id: CANCELLED.
                res = {}

                def runner():
                    try:
                        cl.run(spin.ref, spin.inputs)
                        res["st"] = "OK"
                    except NkidError as e:
                        res["st"], res["msg"] = e.code, str(e)
                th = threading.Thread(target=runner)
                th.start()
                job = None
                for _ in range(200):
                    jobs = cl.call("Jobs", pb.JobsRequest(), timeout=10).jobs
                    mine = [j for j in jobs if j.pid == os.getpid() and j.kind == "run"]
                    if mine:
                        job = mine[0].id
                        break
                    if not th.is_alive():
                        break
                    time.sleep(0.005)
                if job is not None:
                    try:
                        cl.call("Cancel", pb.CancelRequest(job_id=job), timeout=10)
                    except NkidError as e:
                        # It may have finished first.
                        if e.code not in ("NOT_FOUND", "FAILED_PRECONDITION"):
                            raise
                th.join()
                st = res.get("st")
                rec(op, t0, "OK" if st in ("CANCELLED", "OK") else "ERR",
                    "%s %s" % (st, res.get("msg", "")))
            elif op == "deadline":
                try:
                    cl.call("Run", pb.RunRequest(ref=spin.ref, inputs=spin.inputs), timeout=0.03)
                    rec(op, t0, "OK")
                except NkidError as e:
                    rec(op, t0, "OK" if e.code in ("DEADLINE_EXCEEDED", "CANCELLED") else "ERR",
                        "%s %s" % (e.code, e))
            elif op == "export":
                keys = [cl.compile(c.ref).neff_key for c in rnd.sample(pool, 2)]
                data = b"".join(ch.data for ch in cl._stub.CacheExport(
                    pb.CacheExportRequest(keys=keys), timeout=30))
                rec(op, t0, "OK" if data.startswith(b"NKIDBDL1") else "WRONG")
            elif op == "status":
                st = cl.status()
                rec(op, t0, "OK" if st.pid > 0 else "WRONG")
            else:
                cl.call("CacheList", pb.CacheListRequest(limit=20), timeout=10)
                rec(op, t0, "OK")
        except NkidError as e:
            rec(op, t0, "ERR", "%s %s" % (e.code, e))
        except Exception as e:  # a client-side surprise is an error too
            rec(op, t0, "ERR", "%s %s" % (type(e).__name__, e))
    f.close()


# ---------------------------------------------------------------- the driver

def read_records(paths):
    recs = []
    for p in paths:
        try:
            with open(p) as f:
                for line in f:
                    w = line.rstrip("\n").split(" ", 4)
                    if len(w) >= 4:
                        recs.append((float(w[0]), w[1], float(w[2]), w[3],
                                     w[4] if len(w) > 4 else ""))
        except OSError:
            pass
    return recs


def svg_plot(series, t_end, reloads, path):
    """Two panels, throughput (ops/s) and p99 (ms) per bucket, as SVG."""
    series = [s for s in series if s["t"] <= t_end]
    W, H, L, R, T, G = 760, 420, 60, 20, 30, 40
    ph = (H - T - 2 * G) / 2
    pw = W - L - R
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="11">' % (W, H),
           '<rect width="100%" height="100%" fill="white"/>']
    for i, (title, key, color) in enumerate((("throughput (ops/s)", "ops_s", "#1f77b4"),
                                             ("p99 latency (ms)", "p99_ms", "#d62728"))):
        y0 = T + i * (ph + G)
        vals = [s[key] for s in series] or [0]
        vmax = max(vals) * 1.15 or 1
        out.append('<text x="%d" y="%d" font-size="12">%s</text>' % (L, y0 - 8, title))
        out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888"/>'
                   % (L, y0, pw, ph))
        for k in range(5):
            v = vmax * k / 4
            y = y0 + ph - ph * k / 4
            out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/>'
                       % (L, L + pw, y, y))
            out.append('<text x="%d" y="%.1f" text-anchor="end">%.0f</text>' % (L - 4, y + 4, v))
        for rt in reloads:
            x = L + pw * rt / max(t_end, 1)
            out.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#2ca02c" '
                       'stroke-dasharray="2,3"/>' % (x, x, y0, y0 + ph))
        pts = " ".join("%.1f,%.1f" % (L + pw * s["t"] / max(t_end, 1),
                                      y0 + ph - ph * s[key] / vmax) for s in series)
        out.append('<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>'
                   % (color, pts))
        for k in range(0, int(t_end) + 1, max(60, int(t_end / 10) // 60 * 60 or 60)):
            x = L + pw * k / max(t_end, 1)
            out.append('<text x="%.1f" y="%d" text-anchor="middle">%d s</text>'
                       % (x, y0 + ph + 14, k))
    out.append('<text x="%d" y="%d" fill="#2ca02c">dashed: config reloads (SIGHUP)</text>'
               % (W - R - 200, H - 6))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--duration", type=float, default=600)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        client_main(a.worker[0], a.worker[1], a.worker[2], int(a.worker[3]))
        return 0

    from daemon import Nkid
    import numpy as np

    cfg = {"cpu": {"cores": 2}, "log_level": "info",
           "cache": {"max_bytes": "4MiB", "max_memory_bytes": "16MiB"},
           "jobs": {"max_queued_per_client": 64}}
    n = Nkid(build=a.build)
    n.write_config(cfg)
    n.start()
    stop = os.path.join(n.dir, "stop")
    outs = [os.path.join(n.dir, "client.%d" % i) for i in range(a.clients)]
    fds_before = n.nfds()
    rss_before = n.rss_kib()
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", n.sock, o,
                               stop, str(i + 1)]) for i, o in enumerate(outs)]
    t0 = time.time()
    # Warm-up: the loaded-kernel budget and the allocator's arenas fill.
    warmup = min(120.0, a.duration / 5)
    samples, reloads = [], []
    next_reload = RELOAD_S
    failures = []
    try:
        while time.time() - t0 < a.duration:
            time.sleep(SAMPLE_S)
            t = time.time() - t0
            if not n.alive():
                failures.append("nkid died at %.0f s: %s" % (t, n.tail(5)))
                break
            samples.append({"t": round(t, 1), "rss_kib": n.rss_kib(), "fds": n.nfds()})
            if t >= next_reload:
                # Toggle a key that takes effect at once: a real reload.
                cfg["jobs"]["max_queued_per_client"] = 64 if len(reloads) % 2 else 63
                n.write_config(cfg)
                n.kill(signal.SIGHUP)
                reloads.append(round(t, 1))
                next_reload += RELOAD_S
    finally:
        with open(stop, "w"):
            pass
        for p in procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                failures.append("a client did not stop")
    elapsed = time.time() - t0
    time.sleep(3)       # connections close, jobs end
    alive = n.alive()
    fds_after = n.nfds() if alive else -1
    rss_end = n.rss_kib() if alive else 0
    rc = n.stop()
    if rc != 0:
        failures.append("nkid exited %s at SIGTERM" % rc)
    log = n.log_text()
    recs = read_records(outs)
    n.close()

    errors = [r for r in recs if r[3] != "OK"]
    wrong = [r for r in recs if r[3] == "WRONG"]
    by_op = {}
    for r in recs:
        by_op.setdefault(r[1], []).append(r[2])
    series = []
    for b in range(int(elapsed // BUCKET_S)):      # whole buckets only
        lat = [r[2] for r in recs if b * BUCKET_S <= r[0] - t0 < (b + 1) * BUCKET_S]
        if lat:
            series.append({"t": (b + 0.5) * BUCKET_S, "ops_s": len(lat) / BUCKET_S,
                           "p99_ms": float(np.percentile(lat, 99))})
    after_warm = [s for s in samples if s["t"] >= warmup]
    rss_warm = after_warm[0]["rss_kib"] if after_warm else rss_before
    rss_max = max((s["rss_kib"] for s in after_warm), default=rss_warm)
    growth = 100.0 * (rss_max - rss_warm) / max(rss_warm, 1)
    slope = 0.0
    if len(after_warm) >= 3:
        ts = np.array([s_["t"] for s_ in after_warm])
        rs = np.array([s_["rss_kib"] for s_ in after_warm], dtype=float)
        slope = float(np.polyfit(ts, rs, 1)[0]) * 3600 / 1024     # MiB per hour
    if errors:
        kinds = {}
        for e in errors:
            k = "%s %s %s" % (e[1], e[3], e[4].split(" ")[0])
            kinds[k] = kinds.get(k, 0) + 1
        failures.append("%d errors (%s), first: %s" % (
            len(errors), ", ".join("%s: %d" % kv for kv in sorted(kinds.items())),
            " ".join(map(str, errors[0][1:]))))
    if growth > RSS_BOUND_PCT:
        failures.append("RSS grew %.1f%% after warm-up (%d -> %d KiB)"
                        % (growth, rss_warm, rss_max))
    if alive and fds_after > fds_before:
        failures.append("descriptors grew: %d before the load, %d after" % (fds_before,
                                                                             fds_after))
    if "reload" not in log.lower():
        failures.append("no reload in nkid's log")
    lat_all = [r[2] for r in recs]
    summary = {
        "seconds": round(elapsed),
        "duration": round(a.duration),
        "clients": a.clients,
        "ops": len(recs),
        "ops_per_s": round(len(recs) / max(elapsed, 1), 1),
        "errors": len(errors),
        "wrong": len(wrong),
        "p50_ms": round(float(np.percentile(lat_all, 50)), 2) if lat_all else None,
        "p99_ms": round(float(np.percentile(lat_all, 99)), 2) if lat_all else None,
        "by_op": {k: {"n": len(v), "p50_ms": round(float(np.percentile(v, 50)), 2),
                      "p99_ms": round(float(np.percentile(v, 99)), 2)}
                  for k, v in sorted(by_op.items())},
        "reloads": len(reloads),
        "rss_kib_before": rss_before,
        "rss_kib_after_warmup": rss_warm,
        "rss_kib_max_after_warmup": rss_max,
        "rss_kib_end": rss_end,
        "rss_growth_pct": round(growth, 2),
        "rss_slope_mib_per_hour": round(slope, 2),
        "fds_before": fds_before,
        "fds_after": fds_after,
        "fds_max": max((s["fds"] for s in samples), default=0),
        "warmup_s": warmup,
        "failures": failures,
        "series": series,
        "samples": samples,
    }
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "soak.json"), "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    svg_plot(series, elapsed, reloads, os.path.join(a.out, "soak.svg"))
    write_md(summary, os.path.join(a.out, "soak.md"))
    patch_report(os.path.join(a.out, "report.md"), os.path.join(a.out, "soak.md"))
    print("soak: %d s, %d clients, %d ops (%.1f/s), %d errors, %d wrong, p99 %s ms, RSS %+.1f%% "
          "after warm-up, descriptors %d -> %d, %d reloads"
          % (elapsed, a.clients, len(recs), summary["ops_per_s"], len(errors), len(wrong),
             summary["p99_ms"], growth, fds_before, fds_after, len(reloads)))
    for f_ in failures:
        print("  FAIL: " + f_)
    return 1 if failures else 0


def write_md(s, path):
    L = ["## Soak\n",
         "`make soak DURATION=%d`: %d client processes on one nkid (2 cores), a mix of runs of "
         "cached kernels, new kernels (compiled and stored; the disk cache is 4 MiB, so it "
         "evicts), simulations, benchmarks, leases, cancels by job id, deadlines that pass "
         "while running, exports, status and cache listings; a config reload every %d s.\n"
         % (s.get("duration", s["seconds"]), s["clients"], RELOAD_S),
         "| figure | value |", "|---|---:|",
         "| seconds | %d |" % s["seconds"], "| operations | %d (%.1f/s) |" % (s["ops"],
                                                                             s["ops_per_s"]),
         "| errors | %d |" % s["errors"], "| wrong results | %d |" % s["wrong"],
         "| p50 / p99 | %s / %s ms |" % (s["p50_ms"], s["p99_ms"]),
         "| RSS before / after warm-up (%d s) / max after / end | %d / %d / %d / %d KiB |"
         % (s["warmup_s"], s["rss_kib_before"], s["rss_kib_after_warmup"],
            s["rss_kib_max_after_warmup"], s["rss_kib_end"]),
         "| RSS growth after warm-up | %.2f%% (bound %d%%); trend %+.1f MiB/hour |"
         % (s["rss_growth_pct"], RSS_BOUND_PCT, s["rss_slope_mib_per_hour"]),
         "| descriptors before / max / after | %d / %d / %d |" % (s["fds_before"],
                                                                  s["fds_max"], s["fds_after"]),
         "| reloads | %d |" % s["reloads"], "",
         "![throughput and p99 over time](soak.svg)\n",
         "| operation | count | p50 ms | p99 ms |", "|---|---:|---:|---:|"]
    for k, v in s["by_op"].items():
        L.append("| %s | %d | %s | %s |" % (k, v["n"], v["p50_ms"], v["p99_ms"]))
    L.append("")
    L.append("RSS each minute (KiB): " + ", ".join(
        "%d s %d" % (x["t"], x["rss_kib"]) for x in s["samples"] if int(x["t"]) % 60 < SAMPLE_S)
        + "\n")
    if s["failures"]:
        L.append("Failures: " + "; ".join(s["failures"]) + "\n")
    with open(path, "w") as f:
        f.write("\n".join(L))


def patch_report(report, soak_md):
    """Replace the soak section of an existing report.md."""
    if not os.path.exists(report):
        return
    with open(report) as f:
        text = f.read()
    with open(soak_md) as f:
        soak = f.read()
    i = text.find("## Soak")
    text = (text[:i] if i >= 0 else text + "\n") + soak
    with open(report, "w") as f:
        f.write(text)


if __name__ == "__main__":
    sys.exit(main())
