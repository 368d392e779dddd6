#!/bin/sh
# warmup with mistakes in its manifest (issue 31, item 5): a kernel file
# that cannot be read is reported by name and the others are compiled
# (exit 1, the summary counts it failed); a truncated manifest says where
# it ends (line and column).
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
stop_nkid || fail "nkid exited non-zero"
echo ok
