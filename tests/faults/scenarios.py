"""The scenarios of make faults, in order, and the report they make."""

import datetime
import glob
import json
import os
import platform
import subprocess

import sc_crash
import sc_storage
import sc_hostile
import sc_peers
import sc_lifecycle
import sc_planted
from common import Context, run_one  # noqa: F401  (run.py uses them)
from daemon import TOP

ALL = [
    ("crash", sc_crash.scenario),
    ("storage", sc_storage.scenario),
    ("hostile", sc_hostile.scenario),
    ("peers", sc_peers.scenario),
    ("clients-dying", sc_lifecycle.clients_dying),
    ("signals", sc_lifecycle.signals),
    ("descriptors", sc_lifecycle.descriptors),
    ("compiler", sc_lifecycle.compiler),
    ("remote", sc_lifecycle.remote),
    ("remote-planted-lock", sc_planted.remote_planted_lock),
    ("metrics-flood", sc_planted.metrics_flood),
]

SOAK_JSON = os.path.join(os.path.dirname(os.path.abspath(__file__)), "soak.json")


def fuzz_targets():
    return sorted(os.path.basename(p)[5:-2] for p in glob.glob(
        os.path.join(TOP, "tests", "fuzz", "fuzz_*.c")))


def summarize(ctx, results, total):
    by = {r.name: r for r in results}

    def f(name, key, default=0):
        r = by.get(name)
        return r.figures.get(key, default) if r else default

    soak = {}
    if os.path.exists(SOAK_JSON):
        with open(SOAK_JSON) as fh:
            soak = json.load(fh)
    commit = subprocess.run(["git", "-C", TOP, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    wrong = sum(r.figures.get("wrong", 0) for r in results)
    return {
        "commit": commit,
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "machine": "%s, %d cores" % (platform.platform(), os.cpu_count()),
        "seconds": round(total),
        "scenarios": {r.name: {"status": r.status, "figures": r.figures,
                               "failures": r.failures, "notes": r.notes[:5] if r.status == "SKIP"
                               else [n for n in r.notes if not n.startswith("Traceback")][:5],
                               "seconds": round(r.seconds, 1)} for r in results},
        "crash_rounds": f("crash", "rounds"),
        "stores_acknowledged": f("crash", "acked"),
        "lost_acknowledged": f("crash", "lost"),
        "wrong_results": wrong,
        "hostile_inputs_tried": f("hostile", "tried"),
        "daemon_crashes": ctx.crashes,
        "storage_faults_tried": f("storage", "tried"),
        "storage_faults_survived": f("storage", "survived"),
        "remote_planted_lock_worst_s": f("remote-planted-lock", "worst_s", None),
        "metrics_after_flood": f("metrics-flood", "after_flood", None),
        "soak_seconds": soak.get("seconds", 0),
        "soak_errors": soak.get("errors", None),
        "soak_rss_growth_pct": soak.get("rss_growth_pct", None),
        "fuzz_targets": len(fuzz_targets()),
        "fuzz_target_names": fuzz_targets(),
        "failed": [r.name for r in results if r.status == "FAIL"],
        "skipped": [r.name for r in results if r.status == "SKIP"],
    }


def write_report(path, s, results):
    L = []
    L.append("# make faults: the figures\n")
    L.append("Written by `make faults` (tests/faults/run.py) at commit %s on %s (%s), in %d s. "
             "Rerun it to check them; docs/reliability.md says what each scenario does and what "
             "is not covered.\n" % (s["commit"], s["date"], s["machine"], s["seconds"]))
    L.append("| figure | value | target |")
    L.append("|---|---:|---|")
    rows = [
        ("crash_rounds", ">= 50"), ("stores_acknowledged", ""), ("lost_acknowledged", "0"),
        ("wrong_results", "0"), ("hostile_inputs_tried", ">= 1000"), ("daemon_crashes", "0"),
        ("storage_faults_tried", ""), ("storage_faults_survived", "= tried"),
        ("soak_seconds", ">= 600"), ("soak_errors", "0"), ("soak_rss_growth_pct", "< 10"),
        ("fuzz_targets", ">= 6"),
        ("remote_planted_lock_worst_s", "< 5"), ("metrics_after_flood", "200"),
    ]
    for k, t in rows:
        L.append("| `%s` | %s | %s |" % (k, s.get(k), t))
    L.append("")
    L.append("## Scenarios\n")
    L.append("| scenario | result | figures | seconds |")
    L.append("|---|---|---|---:|")
    for r in results:
        figs = ", ".join("%s %s" % (k, _fmt(v)) for k, v in r.figures.items())
        L.append("| %s | %s | %s | %.0f |" % (r.name, r.status, figs, r.seconds))
    L.append("")
    for r in results:
        if r.failures or (r.notes and r.status != "FAIL"):
            L.append("**%s**: " % r.name + "; ".join(
                r.failures + [n for n in r.notes if not n.startswith("Traceback")]))
            L.append("")
    L.append("Fuzz targets (each runs in `make check` on its corpus plus 20 s of fresh inputs "
             "under ASan and UBSan; `make fuzz` runs them longer): %s.\n"
             % ", ".join("`fuzz_%s`" % n for n in s["fuzz_target_names"]))
    soak_md = os.path.join(os.path.dirname(path), "soak.md")
    if os.path.exists(soak_md):
        with open(soak_md) as f:
            L.append(f.read())
    else:
        L.append("## Soak\n\nNot run yet: `make soak DURATION=600`.\n")
    with open(path, "w") as f:
        f.write("\n".join(L))


def _fmt(v):
    return "%.3g" % v if isinstance(v, float) else str(v)
