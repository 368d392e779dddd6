#!/bin/sh
# Single-flight: 16 processes start the same new kernel at once -> exactly
# one compile; every process gets the same NEFF key.
. "$(dirname "$0")/lib.sh"

trace_mm
start_nkid

i=0 pids=
while [ $i -lt 16 ]; do
	"$NKICTL" --json compile "$T/mm.nkir" >"$T/c$i.json" 2>&1 &
	pids="$pids $!"
	i=$((i + 1))
done
wait_all=0
for p in $pids; do
	wait "$p" || wait_all=1
done
[ $wait_all -eq 0 ] || fail "a compile failed: $(cat "$T"/c*.json)"
keys=$(cat "$T"/c*.json | "$PY" -c 'import sys,json; print(len({json.loads(l)["neff_key"] for l in sys.stdin}))')
[ "$keys" = 1 ] || fail "16 compiles gave $keys different keys"
"$NKICTL" --json status >"$T/st.json"
[ "$(json_get "$T/st.json" "d['cache']['compiles']")" = 1 ] ||
	fail "16 identical requests caused $(json_get "$T/st.json" "d['cache']['compiles']") compiles"
[ "$(json_get "$T/st.json" "d['cache']['hits'] + d['cache']['coalesced']")" = 15 ] ||
	fail "hits + coalesced != 15: $(json_get "$T/st.json" "d['cache']")"
stop_nkid || fail "nkid exited non-zero"
echo ok
