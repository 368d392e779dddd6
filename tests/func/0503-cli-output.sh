#!/bin/sh
# What nkictl prints and how it exits, against a real nkid: human units,
# `status` lists only the methods called and has a hit rate, `jobs` shows a
# running job's elapsed time in fixed columns, `--json` on failures gives
# {"error": ...} with the documented exit codes, a wrong input shape exits 2
# before nkid is asked, `--json lock` prints an object after CMD, and a
# refused import names the file.
. "$(dirname "$0")/lib.sh"

trace_va 256,1024
"$PY" - "$T" <<'PYEOF' || fail "npy"
import numpy as np, sys
np.save(sys.argv[1] + "/x.npy", np.ones((256, 1024), np.float32))
np.save(sys.argv[1] + "/small.npy", np.ones((2, 3), np.float32))
np.save(sys.argv[1] + "/f64.npy", np.ones((256, 1024)))
PYEOF
start_nkid
"$NKICTL" run "$T/va.nkir" -i "$T/x.npy" -i "$T/x.npy" -o "$T/o" >"$T/run" || fail "run"
grep -Eq "^queued  +[0-9.]+ (us|ms|s)$" "$T/run" && grep -Eq "^executed  +[0-9.]+ (us|ms|s)$" "$T/run" ||
	fail "run times not in human units: $(cat "$T/run")"

# status: the methods called, none of the others; a hit rate; units
"$NKICTL" status >"$T/st" || fail "status"
grep -q "^Run  *1  *0$" "$T/st" || fail "Run not listed: $(cat "$T/st")"
grep -q "Warmup" "$T/st" && fail "status lists a method never called: $(cat "$T/st")"
grep -q "CacheImport" "$T/st" && fail "status lists CacheImport"
grep -Eq "^cache hit rate  +[0-9.]+% \([0-9]+ hits?, [0-9]+ miss(es)?\)$" "$T/st" || fail "no hit rate: $(cat "$T/st")"
grep -Eq "^cache  +1 entries, [0-9.]+ B of 16.0 GiB$" "$T/st" || fail "cache size: $(cat "$T/st")"
grep -q "17179869184" "$T/st" && fail "raw bytes in status: $(cat "$T/st")"
"$NKICTL" --json status >"$T/st.json" || fail "status --json"
[ "$(json_get "$T/st.json" "sorted(d['counters']['methods']).count('Warmup'), d['cache']['max_bytes']")" = \
	"(1, 17179869184)" ] || fail "--json keeps every method and exact numbers"

# jobs: a running job has its elapsed time; columns fit every kind
hold_lease running
sleep 1.2
"$NKICTL" benchmark "$T/va.nkir" -n 2 >/dev/null 2>&1 &
B=$!
i=0
until "$NKICTL" jobs | grep -q "benchmark"; do
	i=$((i + 1)); [ $i -lt 100 ] || fail "no queued benchmark"; sleep 0.1
done
"$NKICTL" jobs --all >"$T/jobs" || fail "jobs"
awk 'NR == 1 { h = index($0, "STATE") } NR > 1 && substr($0, h, 5) !~ /^(done |runni|queue)/ { exit 1 }' \
	"$T/jobs" || fail "the STATE column shifts: $(cat "$T/jobs")"
grep -Eq "lease .* running .* [0-9.]+ s  -$" "$T/jobs" || fail "a running job's RUN is not its elapsed time: $(cat "$T/jobs")"
grep -Eq "benchmark .* queued .* [0-9.]+ (us|ms|s)  +-  -$" "$T/jobs" || fail "a queued job's WAIT: $(cat "$T/jobs")"
kill "$LOCK"; wait "$LOCK" || true
wait "$B" || fail "benchmark failed"

# exit codes and JSON errors
rc=0; "$NKICTL" --json cancel 999999 >"$T/e.json" 2>"$T/e.err" || rc=$?
[ $rc -eq 1 ] && [ "$(json_get "$T/e.json" "(d['error']['code'], d['error']['exit'])")" = "('NOT_FOUND', 1)" ] ||
	fail "cancel of no job: rc $rc $(cat "$T/e.json")"
grep -q "nkictl: cancel: NOT_FOUND: " "$T/e.err" || fail "no message on stderr: $(cat "$T/e.err")"
rc=0; "$NKICTL" --json -s "$T/nope.sock" jobs >"$T/e.json" 2>/dev/null || rc=$?
[ $rc -eq 3 ] && [ "$(json_get "$T/e.json" "d['error']['code']")" = UNAVAILABLE ] || fail "connect: rc $rc"
rc=0; "$NKICTL" jobs --bogus --json >"$T/e.json" 2>/dev/null || rc=$?
[ $rc -eq 2 ] && [ "$(json_get "$T/e.json" "d['error']['code']")" = USAGE ] || fail "usage: rc $rc"
# a wrong input shape or dtype exits 2, as docs/cli.md promises, before nkid
calls=$(json_get "$T/st.json" "d['counters']['methods']['Run']['calls']")
rc=0; "$NKICTL" run "$T/va.nkir" -i "$T/x.npy" -i "$T/small.npy" >"$T/e" 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -q "input 'y' of kernel 'vector_add' from '.*small.npy' has shape (2, 3), the parameter is (256, 1024)" "$T/e" ||
	fail "a wrong shape: rc $rc $(cat "$T/e")"
rc=0; "$NKICTL" --json simulate "$T/va.nkir" -i "$T/f64.npy" -i "$T/x.npy" >"$T/e.json" 2>/dev/null || rc=$?
[ $rc -eq 2 ] && [ "$(json_get "$T/e.json" "d['error']['code']")" = USAGE ] || fail "a wrong dtype: rc $rc"
"$NKICTL" --json status >"$T/st2.json"
[ "$(json_get "$T/st2.json" "d['counters']['methods']['Run']['calls']")" = "$calls" ] ||
	fail "a refused input reached nkid"

# lock --json: CMD's output, then one object
"$NKICTL" --json lock -- sh -c 'echo from-cmd; exit 3' >"$T/lock.out" 2>&1 && fail "lock lost CMD's status"
[ "$(head -n 1 "$T/lock.out")" = from-cmd ] || fail "lock --json: $(cat "$T/lock.out")"
tail -n 1 "$T/lock.out" >"$T/lock.json"
[ "$(json_get "$T/lock.json" "(d['core'], d['visible_cores'], d['exit'], d['signal'], d['held_s'] >= 0)")" = \
	"(0, '0', 3, None, True)" ] || fail "lock --json: $(cat "$T/lock.out")"

# a refused import is named by its file, not "upload from pid N"
printf 'NKIDBDL1 not a bundle' >"$T/junk.nkb"
rc=0; "$NKICTL" cache import "$T/junk.nkb" >"$T/e" 2>&1 || rc=$?
[ $rc -eq 1 ] && grep -q "bundle '$T/junk.nkb' refused" "$T/e" && ! grep -q "upload from pid" "$T/e" ||
	fail "import of junk: rc $rc $(cat "$T/e")"
stop_nkid || fail "nkid exited non-zero"
echo ok
