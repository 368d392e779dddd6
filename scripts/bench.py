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


def start_nkid(tmp, name="nkid", extra=()):
    sock = os.path.join(tmp, name + ".sock")
    proc = subprocess.Popen([os.path.join(BIN, "nkid"), "-s", sock, "--state-dir",
                             os.path.join(tmp, name + "-state")] + list(extra),
                            stderr=subprocess.DEVNULL)
    wait_socket(sock, proc)
    os.environ["NKID_SOCKET"] = sock
    return proc, sock


def stop(proc):
    proc.terminate()
    proc.wait()


def p50(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def executor_cases():
    """(key, kernel, args, numpy function): each tutorial's computation at the
    tutorial's shapes, written for this project (tests/python/kernels)."""
    import numpy as np
    import ml_dtypes
    sys.path.insert(0, os.path.join(TOP, "tests", "python"))
    from kernels import elementwise, layout, matmul, norms
    rng = np.random.default_rng(1)
    f32 = np.float32
    a = rng.random((4096, 4096), dtype=f32)
    b = rng.random((4096, 4096), dtype=f32)
    x = rng.random((1024, 1024), dtype=f32)
    y = rng.random((1024, 1024), dtype=f32)
    xT = np.ascontiguousarray(x.T)
    img = rng.random((128, 64, 64), dtype=f32)
    t2 = np.arange(128 * 64 * 64).astype(f32).reshape(128, 64 * 64)
    r = rng.random((4096, 512), dtype=f32)
    g = rng.random((512,), dtype=f32)
    cases = [
        ("executor_ratio_tensor_add", elementwise.add_spmd, (a, b), lambda: a + b),
        ("executor_ratio_matmul_tiled", matmul.mm_tiled, (xT, y), lambda: x @ y),
        ("executor_ratio_matmul_hoisted", matmul.mm_hoisted, (xT, y), lambda: x @ y),
        ("executor_ratio_matmul_blocked", matmul.mm_blocked, (xT, y), lambda: x @ y),
        ("executor_ratio_transpose2d", layout.swap_blocks, (t2, (64, 64)),
         lambda: np.ascontiguousarray(
             t2.reshape(128, 64, 64).transpose(0, 2, 1)).reshape(128, 4096)),
        ("executor_ratio_average_pool2d", layout.pool_mean, (img, 2),
         lambda: img.reshape(128, 32, 2, 32, 2).mean(axis=(2, 4))),
        ("executor_ratio_rmsnorm", norms.rms_norm, (r, g),
         lambda: r / np.sqrt(np.mean(r * r, axis=1, keepdims=True) + 1e-6) * g),
        ("executor_ratio_softmax", norms.softmax_rows, (r,),
         lambda: (lambda e: e / e.sum(axis=1, keepdims=True))(
             np.exp(r - r.max(axis=1, keepdims=True)))),
    ]
    grids = {"executor_ratio_tensor_add": (4096 // 128, 4096 // 512)}
    return [c + (grids.get(c[0], ()),) for c in cases]


def bench_executor(tmp):
    """The cpu backend's execution time (as nkid measures it) over numpy
    computing the same result in this process, p50 of several runs."""
    from nkid.client import get_client, kernel_ref
    from nkid.nki._numpy_kernel import BaremetalKernel
    proc, sock = start_nkid(tmp, "exec")
    worst = 0.0
    try:
        client = get_client(sock)
        for key, kern, args, ref, grid in executor_cases():
            k = BaremetalKernel(getattr(kern, "func", kern), grid=grid)
            traced = k.specialize(args, {})
            inputs, _ = k._inputs(traced, args, {})
            refk = kernel_ref(traced)
            client.run(refk, inputs)                 # compile + warm
            ours = [client.run(refk, inputs).exec_us for _ in range(5)]
            base = []
            for _ in range(5):
                t0 = time.perf_counter()
                ref()
                base.append((time.perf_counter() - t0) * 1e6)
            o, b = p50(ours), p50(base)
            worst = max(worst, o / b)
            record(key, round(o, 0), round(b, 0), round(o / b, 3), "<= 2.0",
                   "RunReply.exec_us vs numpy in-process (us, p50 of 5)")
    finally:
        stop(proc)
    record("executor_ratio_vs_numpy_max", None, None, round(worst, 3), "<= 2.0",
           "max of the executor_ratio_* rows")


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
        bench_executor(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    write_report()
    with open(os.path.join(TOP, "bench", "report.md")) as f:
        sys.stdout.write(f.read())


if __name__ == "__main__":
    main()
