#!/bin/sh
# Progress lines: on a terminal (script(1) gives one) `cache import`,
# `cache export` and `warmup` redraw one line with bytes or kernels, rate
# and ETA, and erase it; with stderr not a terminal they say nothing but
# their summary.
. "$(dirname "$0")/lib.sh"

command -v script >/dev/null || fail "script (util-linux) is missing"
trace_va 256,1024
# A bundle of one 96 MiB entry (of another compiler: kept, never served).
big_bundle "$T/big.nkb" 96 || fail "cannot write the big bundle"
echo '{"kernels": ["va.nkir", {"path": "va.nkir", "options": "-a"}, {"path": "va.nkir", "options": "-b"}]}' \
	>"$T/m.json"
start_nkid

# on_tty CMD...: run CMD on a terminal; what it drew is in $T/tty.
on_tty() {
	script -qec "$*" /dev/null >"$T/tty" 2>&1
}

on_tty "'$NKICTL' cache import '$T/big.nkb'" || fail "import on a tty: $(cat "$T/tty")"
grep -q "imported 1 entry" "$T/tty" || fail "import: $(cat "$T/tty")"
grep -q "import: [0-9.]* [KMG]iB of 96.0 MiB ([0-9]*%)" "$T/tty" || fail "no import progress: $(cat -v "$T/tty")"
grep -q "import: 96.0 MiB of 96.0 MiB (100%)" "$T/tty" || fail "import progress never at 100%: $(cat -v "$T/tty")"
grep -q "$(printf '\r\033\[K')import: " "$T/tty" || fail "the line is not redrawn in place"
if grep -q "MiB/s" "$T/tty"; then	# at least half a second: a rate, and an ETA while not done
	grep -q "MiB (100%), [0-9.]* [KMG]iB/s" "$T/tty" || fail "no rate: $(cat -v "$T/tty")"
fi
on_tty "'$NKICTL' cache export '$T/out.nkb'" || fail "export on a tty: $(cat "$T/tty")"
grep -q "exported 1 entry to $T/out.nkb (96.0 MiB)" "$T/tty" || fail "export: $(cat "$T/tty")"
grep -q "export: [0-9.]* [KMG]iB" "$T/tty" || fail "no export progress: $(cat -v "$T/tty")"
on_tty "'$NKICTL' warmup '$T/m.json'" || fail "warmup on a tty: $(cat "$T/tty")"
grep -q "warmup: 3 of 3 kernels (100%)" "$T/tty" || fail "no warmup progress: $(cat -v "$T/tty")"
grep -q "warmup: 3 kernels: 3 compiled" "$T/tty" || fail "warmup: $(cat "$T/tty")"

# Not a terminal: silent but for the summary.
"$NKICTL" cache export "$T/out2.nkb" >"$T/out" 2>"$T/err" || fail "export"
[ ! -s "$T/err" ] && grep -q "exported 4 entries" "$T/out" || fail "export off a tty: $(cat "$T/err")"
"$NKICTL" cache import "$T/out2.nkb" >"$T/out" 2>"$T/err" || fail "import"
[ ! -s "$T/err" ] && grep -q "imported 0 entries (4 already present)" "$T/out" ||
	fail "import off a tty: $(cat "$T/err" "$T/out")"
"$NKICTL" warmup "$T/m.json" >"$T/out" 2>"$T/err" || fail "warmup"
[ ! -s "$T/err" ] && grep -q "0 compiled, 3 already cached" "$T/out" || fail "warmup off a tty: $(cat "$T/err")"
stop_nkid || fail "nkid exited non-zero"
echo ok
