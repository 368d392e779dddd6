"""make faults: every fault scenario of issue 18 against a real nkid, with
bounded loads; one line per scenario with its figures, then
tests/faults/report.md and tests/faults/results.json.

    .venv/bin/python tests/faults/run.py [--build build] [--only NAME,...]
        [--rounds 50] [--no-write]

Needs root for the scenarios that mount a tmpfs, bind a read-only cache or
act as other uids; without it those are skipped with the reason."""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import scenarios  # noqa: E402
from daemon import TOP  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--only", default="", help="comma-separated scenario names")
    ap.add_argument("--rounds", type=int, default=50, help="kill -9 rounds")
    ap.add_argument("--no-write", action="store_true", help="print, write no report")
    a = ap.parse_args()

    ctx = scenarios.Context(build=a.build, rounds=a.rounds)
    only = [s for s in a.only.split(",") if s]
    t0 = time.time()
    results = []
    for name, fn in scenarios.ALL:
        if only and name not in only:
            continue
        r = scenarios.run_one(ctx, name, fn)
        results.append(r)
        print(r.line(), flush=True)
    total = time.time() - t0
    failed = [r for r in results if r.status == "FAIL"]
    print("faults: %d scenarios passed, %d failed, %d skipped (%.0f s)"
          % (sum(r.status == "PASS" for r in results), len(failed),
             sum(r.status == "SKIP" for r in results), total))
    if not a.no_write and not only:
        summary = scenarios.summarize(ctx, results, total)
        with open(os.path.join(HERE, "results.json"), "w") as f:
            json.dump(summary, f, indent=2, sort_keys=True)
            f.write("\n")
        scenarios.write_report(os.path.join(HERE, "report.md"), summary, results)
        print("wrote %s and %s" % (os.path.relpath(os.path.join(HERE, "report.md"), TOP),
                                   os.path.relpath(os.path.join(HERE, "results.json"), TOP)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
