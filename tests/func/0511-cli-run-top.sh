#!/bin/sh
# run and top as a person uses them (issue 31): `run -o DIR` that cannot be
# written fails before the kernel runs (item 15).
. "$(dirname "$0")/lib.sh"

trace_va 64,64
ones_npy "$T/x.npy" 64,64
start_nkid
rc=0; "$NKICTL" run "$T/va.nkir" -i "$T/x.npy" -i "$T/x.npy" -o /proc/nope >"$T/r.out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "run -o /proc/nope: exit $rc, $(cat "$T/r.out")"
grep -q "cannot write into output directory '/proc/nope'" "$T/r.out" || fail "run -o /proc/nope: $(cat "$T/r.out")"
"$NKICTL" --json status >"$T/st.json" || fail "status"
[ "$(json_get "$T/st.json" "d['counters']['methods']['Run']['calls']")" = 0 ] ||
	fail "the kernel ran before the output directory was checked: $(cat "$T/st.json")"
"$NKICTL" run "$T/va.nkir" -i "$T/x.npy" -i "$T/x.npy" -o "$T/newout" >"$T/r2.out" 2>&1 ||
	fail "run -o into a new directory: $(cat "$T/r2.out")"
[ -n "$(ls "$T/newout")" ] || fail "run -o into a new directory wrote nothing"
stop_nkid || fail "nkid exited non-zero"
echo ok
