"""make bench: measure nkid against baselines taken in the same run, and
write bench/report.md and bench/results.json.

Every figure is a ratio to a baseline measured side by side on this
machine (shared and noisy), or an absolute figure with its target. Each
row names the command that produced it.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BIN = os.path.join(TOP, "build", "bin")
BENCH = os.path.join(TOP, "build", "bench")
PY = os.path.join(TOP, ".venv", "bin", "python")

rows = []       # (key, value, baseline, ratio, target, command)
results = {}


def record(key, value, baseline, ratio, target, command):
    rows.append((key, value, baseline, ratio, target, command))
    results[key] = ratio if ratio is not None else value


def wait_socket(path, proc, timeout=10.0):
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(path):
            return
        if proc.poll() is not None:
            raise RuntimeError("server exited at start")
        time.sleep(0.05)
    raise RuntimeError("no socket at %s" % path)


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def parse_p50(text):
    """The p50 figure (microseconds) from a ping/echo summary line."""
    m = re.search(r"p50[\s=:]*([0-9.]+)", text)
    if not m:
        raise ValueError("no p50 in %r" % text)
    return float(m.group(1))


def bench_ping(tmp, n=10000):
    """nkictl ping p50 over a bare gRPC-core echo, same socket kind."""
    echo_sock = os.path.join(tmp, "echo.sock")
    echo = subprocess.Popen([os.path.join(BENCH, "echo_server"), echo_sock])
    nkid_sock = os.path.join(tmp, "nkid.sock")
    nkid = subprocess.Popen([os.path.join(BIN, "nkid"), "-s", nkid_sock,
                             "--state-dir", os.path.join(tmp, "state")],
                            stderr=subprocess.DEVNULL)
    try:
        wait_socket(echo_sock, echo)
        wait_socket(nkid_sock, nkid)
        time.sleep(0.3)
        idle = rss_mib(nkid.pid)
        record("rss_idle_mib", round(idle, 1), None, None, "< 20",
               "VmRSS of an idle nkid")
        base, ours = [], []
        for _ in range(3):      # interleave to share the noise
            out = subprocess.check_output(
                [os.path.join(BENCH, "echo_client"), echo_sock,
                 "/bench.Echo/Echo", str(n)], text=True)
            base.append(parse_p50(out))
            out = subprocess.check_output(
                [os.path.join(BIN, "nkictl"), "-s", nkid_sock, "ping", "-n",
                 str(n)], text=True)
            ours.append(parse_p50(out))
        b, o = sorted(base)[1], sorted(ours)[1]
        record("rpc_ping_ratio_vs_grpc_echo", round(o, 1), round(b, 1),
               round(o / b, 3), "<= 1.5",
               "nkictl ping -n %d vs build/bench/echo_client (p50 us, median of 3)" % n)
    finally:
        for p in (nkid, echo):
            p.terminate()
            p.wait()


def write_report():
    os.makedirs(os.path.join(TOP, "bench"), exist_ok=True)
    with open(os.path.join(TOP, "bench", "results.json"), "w") as f:
        json.dump(results, f, indent=2, sort_keys=True)
        f.write("\n")
    with open(os.path.join(TOP, "bench", "report.md"), "w") as f:
        f.write("# nkid benchmark report\n\n")
        f.write("Made by `make bench` on %s (%d CPUs). Ratios compare with a\n"
                "baseline measured in the same run.\n\n" % (
                    time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                    os.cpu_count()))
        f.write("| figure | value | baseline | ratio | target | command |\n")
        f.write("|---|---|---|---|---|---|\n")
        for key, value, base, ratio, target, cmd in rows:
            f.write("| %s | %s | %s | %s | %s | `%s` |\n" % (
                key, value, "" if base is None else base,
                "" if ratio is None else ratio, target, cmd))


def main():
    tmp = tempfile.mkdtemp(prefix="nkid-bench.")
    try:
        bench_ping(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    write_report()
    with open(os.path.join(TOP, "bench", "report.md")) as f:
        sys.stdout.write(f.read())


if __name__ == "__main__":
    main()
