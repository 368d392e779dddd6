#!/bin/sh
# run and top as a person uses them (issue 31): `run -o DIR` that cannot be
# written fails before the kernel runs (item 15); `top -b -n 1 -d 1`
# waits the interval and prints its figures (item 14); nkimodel --help
# (item 20).
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
# item 14: top -b -n 1 -d 1 waits its interval and prints its figures
"$NKICTL" compile "$T/va.nkir" >/dev/null || fail "compile"
t0=$(date +%s%N)
"$NKICTL" top -b -n 1 -d 1 >"$T/top.out" 2>&1 || fail "top -b: $(cat "$T/top.out")"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ $ms -ge 1000 ] || fail "top -b -n 1 -d 1 returned after $ms ms"
grep -q "in the last 1.0 s" "$T/top.out" || fail "no interval figures: $(cat "$T/top.out")"
"$NKICTL" --json top -n 1 -d 0.5 >"$T/top.json" || fail "top --json"
iv=$(json_get "$T/top.json" "d['interval_s']")
"$PY" -c "import sys; sys.exit(0 if 0.45 <= float('$iv') <= 1.5 else 1)" ||
	fail "top --json -n 1: interval_s $iv"
# item 20: nkimodel answers --help and -h (exit 0, on stdout) and models
# the kernel
"$TOP/build/bin/nkimodel" --help >"$T/m.help" 2>&1 || fail "nkimodel --help: $(cat "$T/m.help")"
grep -q "^usage: nkimodel" "$T/m.help" && grep -q -- "-t target" "$T/m.help" ||
	fail "nkimodel --help: $(cat "$T/m.help")"
"$TOP/build/bin/nkimodel" -h >/dev/null 2>&1 || fail "nkimodel -h"
"$TOP/build/bin/nkimodel" "$T/va.nkir" | grep -q "us modeled" || fail "nkimodel of the kernel"
grep -q "nkimodel" "$TOP/README.md" || fail "the README does not name nkimodel"
stop_nkid || fail "nkid exited non-zero"
echo ok
