#!/bin/sh
# `nkictl benchmark FILE`: percentiles of nkid's latency and of the host's,
# a text histogram, the samples as CSV, shapes sent without data; `nkictl
# profile FILE -o DIR`: nki.profile's layout in DIR, never over existing
# artifacts unless --overwrite.
. "$(dirname "$0")/lib.sh"

trace_va 256,1024
"$PY" -c 'import numpy as np, sys; np.save(sys.argv[1], np.full((256, 1024), 2, np.float32))' \
	"$T/x.npy" || fail "npy"
start_nkid

"$NKICTL" benchmark "$T/va.nkir" -w 2 -n 40 >"$T/b" || fail "benchmark: $(cat "$T/b")"
grep -q "^executions  *40 timed after 2 warm-up$" "$T/b" || fail "no counts: $(cat "$T/b")"
grep -q "^latency  *model$" "$T/b" || fail "no latency source: $(cat "$T/b")"
grep -Eq "^model  *[0-9.]+ (us|ms) on trn1 \(model [0-9]+\)$" "$T/b" || fail "no model line: $(cat "$T/b")"
for p in p0 p1 p10 p25 p50 p90 p99 p100; do
	grep -Eq "^ *$p +[0-9.]+ (us|ms) +[0-9.]+ (us|ms)$" "$T/b" || fail "no $p row: $(cat "$T/b")"
done
grep -q "^host cpu time: 40 samples$" "$T/b" || fail "no histogram title: $(cat "$T/b")"
[ "$(grep -Ec "^ +[0-9.]+ (us|ms) - [0-9.]+ (us|ms) +#* +[0-9]+$" "$T/b")" = 10 ] ||
	fail "the histogram has not 10 bins: $(cat "$T/b")"
[ "$(grep -E "^ +[0-9.]+ (us|ms) - " "$T/b" | awk '{ s += $NF } END { print s }')" = 40 ] ||
	fail "the histogram does not count 40 samples"
grep -q "########################################" "$T/b" || fail "no full bar: $(cat "$T/b")"

"$NKICTL" benchmark "$T/va.nkir" -n 25 --csv "$T/s.csv" >/dev/null || fail "benchmark --csv"
[ "$(head -n 1 "$T/s.csv")" = "iteration,latency_us,cpu_us" ] || fail "csv header: $(head -n 2 "$T/s.csv")"
[ "$(wc -l <"$T/s.csv")" = 26 ] || fail "csv rows: $(wc -l <"$T/s.csv")"
"$PY" - "$T/s.csv" <<'PYEOF' || fail "csv rows not numbers"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [int(r["iteration"]) for r in rows] == list(range(1, 26))
assert all(float(r["latency_us"]) > 0 and float(r["cpu_us"]) > 0 for r in rows)
PYEOF
"$NKICTL" benchmark "$T/va.nkir" -n 3 --csv - >"$T/s2.csv" || fail "--csv -"
[ "$(wc -l <"$T/s2.csv")" = 4 ] && ! grep -q PERCENTILE "$T/s2.csv" || fail "--csv - mixes the report in"
"$NKICTL" --json benchmark "$T/va.nkir" -n 5 -i "$T/x.npy" -i y="$T/x.npy" >"$T/b.json" || fail "--json"
[ "$(json_get "$T/b.json" "(sorted(d['percentiles']) == sorted(['p0','p1','p10','p25','p50','p90','p99','p100']), len(d['samples_us']), len(d['cpu_samples_us']), d['iters'], d['latency_source'])")" = \
	"(True, 5, 5, 5, 'model')" ] || fail "benchmark --json: $(cat "$T/b.json")"
rc=0; "$NKICTL" benchmark "$T/va.nkir" -n 0 >/dev/null 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "-n 0: rc $rc"
# --target drives the model (not only the target saved at trace time);
# a target NKI does not name is refused with the list.
"$NKICTL" benchmark "$T/va.nkir" -n 2 --target trn2 >"$T/b2" || fail "--target trn2: $(cat "$T/b2")"
grep -Eq "^model  *[0-9.]+ (us|ms) on trn2 \(model [0-9]+\)$" "$T/b2" || fail "trn2 not modeled: $(cat "$T/b2")"
"$NKICTL" --json benchmark "$T/va.nkir" -n 2 --target gen4 >"$T/b3.json" || fail "--target gen4"
[ "$(json_get "$T/b3.json" "(d['model_target'], d['model_version'] != '')")" = "('trn3', True)" ] ||
	fail "gen4 is not trn3: $(cat "$T/b3.json")"
rc=0; "$NKICTL" benchmark "$T/va.nkir" -n 2 --target trn7 >"$T/e" 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -q "unknown target 'trn7': NKI names trn1 (inf2, gen2), trn2 (gen3), trn3 (gen4)" "$T/e" ||
	fail "--target trn7: rc $rc: $(cat "$T/e")"
# nkid itself refuses it for any kernel call (the cpu backend's compile).
rc=0; "$NKICTL" run "$T/va.nkir" -i "$T/x.npy" -i "$T/x.npy" -o "$T/r7" --target trn7 >"$T/e" 2>&1 || rc=$?
[ $rc -ne 0 ] && grep -q "unknown target 'trn7': NKI names trn1 (inf2, gen2), trn2 (gen3), trn3 (gen4)" "$T/e" ||
	fail "run --target trn7: rc $rc: $(cat "$T/e")"
rc=0; "$NKICTL" profile "$T/va.nkir" -o "$T/p7" --target trn7 >"$T/e" 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -q "unknown target 'trn7'" "$T/e" && [ ! -e "$T/p7" ] ||
	fail "profile --target trn7: rc $rc: $(cat "$T/e")"

# profile
"$NKICTL" profile "$T/va.nkir" -i "$T/x.npy" -i "$T/x.npy" -o "$T/p" -n 5 --profile-nth 2 >"$T/pr" ||
	fail "profile: $(cat "$T/pr")"
for f in file.neff profile.ntff profile_exec_4.ntff json_reports/profile.json \
	json_reports/profile_exec_4.json out.npy; do
	[ -s "$T/p/$f" ] || fail "profile did not write $f: $(ls -R "$T/p")"
done
grep -q "^trace  *$T/p/profile.ntff (execution 2, " "$T/pr" || fail "profile report: $(cat "$T/pr")"
grep -q "^summary  *$T/p/json_reports/profile.json: [0-9.]* us (model on trn1), critical path " "$T/pr" ||
	fail "no summary: $(cat "$T/pr")"
"$PY" - "$T/p" <<'PYEOF' || fail "profile contents"
import json, sys, numpy as np
d = sys.argv[1]
t = json.load(open(d + "/profile.ntff"))
assert "traceEvents" in t, list(t)
s = json.load(open(d + "/json_reports/profile_exec_4.json"))
assert s["execution"] == 4 and s["kernel"] == "vector_add", s
assert (np.load(d + "/out.npy") == 4).all()
assert s["target"] == "trn1" and s["model_version"], s
# Slices never overlap on one track: ts and dur are rounded together.
ends = {}
for e in sorted((e for e in t["traceEvents"] if e.get("ph") == "X"),
                key=lambda e: (e["tid"], e["ts"])):
    ts, dur = round(e["ts"] * 1000), round(e["dur"] * 1000)   # whole ns
    assert ts >= ends.get(e["tid"], 0), e
    ends[e["tid"]] = ts + dur
PYEOF
"$NKICTL" profile "$T/va.nkir" -i "$T/x.npy" -i "$T/x.npy" -o "$T/p2" --target trn2 >"$T/pr2" ||
	fail "profile --target trn2: $(cat "$T/pr2")"
grep -q "^summary  *$T/p2/json_reports/profile.json: [0-9.]* us (model on trn2), " "$T/pr2" ||
	fail "profile --target trn2 modeled another target: $(cat "$T/pr2")"
rc=0; "$NKICTL" profile "$T/va.nkir" -i "$T/x.npy" -i "$T/x.npy" -o "$T/p" >"$T/e" 2>&1 || rc=$?
[ $rc -eq 1 ] && grep -q "'$T/p/file.neff' exists; give --overwrite" "$T/e" || fail "profile over artifacts: rc $rc"
"$NKICTL" --json profile "$T/va.nkir" -i "$T/x.npy" -i "$T/x.npy" -o "$T/p" --overwrite >"$T/p.json" ||
	fail "profile --overwrite"
[ "$(json_get "$T/p.json" "([t['execution'] for t in d['traces']], d['neff_path'], d['outputs'][0]['name'])")" = \
	"([1], '$T/p/file.neff', 'out')" ] || fail "profile --json: $(cat "$T/p.json")"
stop_nkid || fail "nkid exited non-zero"
echo ok
