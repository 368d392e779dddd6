#!/bin/sh
# warmup with mistakes in its manifest (issue 31, item 5): a kernel file
# that cannot be read is reported by name and the others are compiled
# (exit 1, the summary counts it failed); a truncated manifest says where
# it ends (line and column). Item 7: the hint of a cached failure. Item
# 18: cache verify says why a cached failure failed.
. "$(dirname "$0")/lib.sh"

trace_va 64,64
start_nkid
printf '{"kernels": ["va.nkir", "missing.nkir"]}\n' >"$T/m.json"
rc=0; "$NKICTL" warmup "$T/m.json" >"$T/w.out" 2>"$T/w.err" || rc=$?
[ $rc -eq 1 ] || fail "warmup with a missing kernel file: exit $rc, $(cat "$T/w.out" "$T/w.err")"
grep -q "1 compiled, 0 already cached, 1 failed" "$T/w.out" ||
	fail "the readable kernel was not compiled: $(cat "$T/w.out" "$T/w.err")"
grep -q "missing.nkir" "$T/w.err" || fail "the unreadable file is not named: $(cat "$T/w.err")"
rc=0; "$NKICTL" --json warmup "$T/m.json" >"$T/w.json" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "--json warmup with a missing kernel file: exit $rc"
[ "$(json_get "$T/w.json" "sorted(r['state'] for r in d['results'])")" = "['cached', 'unreadable']" ] ||
	fail "--json results: $(cat "$T/w.json")"

printf '{"kernels": [\n  "va.nkir",\n  "mm.nk' >"$T/cut.json"
rc=0; "$NKICTL" warmup "$T/cut.json" >"$T/c.out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "warmup of a truncated manifest: exit $rc"
grep -q "manifest '$T/cut.json' is not valid JSON: error at line 3, column 4 (on its last line: is it cut short?)" "$T/c.out" ||
	fail "the truncated manifest's message: $(cat "$T/c.out")"
# item 7: a cached failure's hint names the flags that exist and the key
# as cache ls shows it; warmup has --retry-failed.
"$PY" - "$T/bad.nkir" <<'PYEOF'
import sys
from nkid._proto import nkid_pb2
r = nkid_pb2.KernelRef(); r.kernel.name = "broken"; r.kernel.format = "nkir/1"; r.kernel.ir = b"\xff\xff"
open(sys.argv[1], "wb").write(b"NKIDKRF1" + r.SerializeToString())
PYEOF
"$NKICTL" compile "$T/bad.nkir" >/dev/null 2>&1 && fail "the broken kernel compiled"
rc=0; "$NKICTL" compile "$T/bad.nkir" >"$T/b.out" 2>&1 || rc=$?
key=$("$NKICTL" cache ls --no-signature broken | awk 'NR == 2 { print $1 }')
grep -q "a failure cached for key $key; to compile again: --retry-failed in nkictl, retry_failed=True in Python" "$T/b.out" ||
	fail "the cached failure's hint (key $key): $(cat "$T/b.out")"
echo '{"kernels": ["bad.nkir"]}' >"$T/bad.json"
compiles=$("$NKICTL" --json status | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["cache"]["failures"])')
rc=0; "$NKICTL" warmup --retry-failed "$T/bad.json" >"$T/wr.out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "warmup --retry-failed of a broken kernel: exit $rc, $(cat "$T/wr.out")"
after=$("$NKICTL" --json status | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["cache"]["failures"])')
[ "$after" -eq $((compiles + 1)) ] || fail "warmup --retry-failed did not compile again (failures $compiles -> $after)"
# item 18: cache verify of a cached failure shows the compiler's first
# line as its MESSAGE, through nkid and offline, and names the kernel.
first=$("$NKICTL" --json cache show "$key" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["log"].splitlines()[0])')
[ -n "$first" ] || fail "the failed entry has no log"
for where in "" "--state-dir $T/state"; do
	# shellcheck disable=SC2086
	"$NKICTL" --json cache verify -k "$key" $where >"$T/v.json" 2>&1 || true
	[ "$(json_get "$T/v.json" "d['entries'][0]['message']")" = "$first" ] ||
		fail "verify $where: the message is not the compiler's: $(cat "$T/v.json")"
	[ "$(json_get "$T/v.json" "d['entries'][0]['kernel']")" = broken ] ||
		fail "verify $where: the kernel is not named: $(cat "$T/v.json")"
done
stop_nkid || fail "nkid exited non-zero"
echo ok
