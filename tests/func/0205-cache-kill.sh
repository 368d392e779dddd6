#!/bin/sh
# Crash safety: kill -9 of nkid during many concurrent stores, three
# times; after each restart quick_check is ok, every acknowledged entry is
# present and verifies, and no temp file remains.
. "$(dirname "$0")/lib.sh"

trace_mm
# Half the blobs in files: both store paths are exercised.
export NKID_CACHE_INLINE_MAX=700
# The compiles in flight die with nkid: they do not wait for the next one.
export NKID_RECONNECT_TIMEOUT=0
round=0
while [ $round -lt 3 ]; do
	start_nkid
	i=0 pids=
	while [ $i -lt 24 ]; do
		# Distinct options: distinct keys, every one a store.
		# One file per store: concurrent appends to one file can
		# interleave.
		( "$NKICTL" --json compile --options "-r$round -k$i" "$T/mm.nkir" \
			>"$T/c.$round.$i" 2>/dev/null && \
			json_get "$T/c.$round.$i" "d['neff_key']" >"$T/ack.$round.$i" ) &
		pids="$pids $!"
		i=$((i + 1))
	done
	# Kill once the first store is acknowledged (slow builds, e.g.
	# ASan, take longer than 0.2 s to get there).
	w=0
	while [ -z "$(ls "$T" | grep "^ack\.$round\.")" ] && [ $w -lt 100 ]; do
		sleep 0.1; w=$((w + 1))
	done
	kill -KILL "$NKID_PID"
	wait "$NKID_PID" 2>/dev/null || true
	NKID_PID=
	for p in $pids; do wait "$p" || true; done
	"$PY" - "$T/state/cache/index.db" <<'PYEOF' || fail "quick_check failed after kill -9 (round $round)"
import sqlite3, sys
r = sqlite3.connect(sys.argv[1]).execute("PRAGMA quick_check").fetchone()[0]
assert r == "ok", r
PYEOF
	round=$((round + 1))
done
cat "$T"/ack.* >"$T/acked" 2>/dev/null || true
start_nkid
stop_nkid
[ -z "$(ls "$T/state/cache/tmp")" ] || fail "temp files left: $(ls "$T/state/cache/tmp")"
n=$(wc -l <"$T/acked")
[ "$n" -gt 0 ] || fail "no store was acknowledged before the kills"
"$NKICTL" cache verify --state-dir "$T/state" >"$T/v" || fail "cache does not verify: $(cat "$T/v")"
"$NKICTL" --json cache ls --state-dir "$T/state" >"$T/ls.json"
for k in $(cat "$T/acked"); do
	grep -q "$k" "$T/ls.json" || fail "acknowledged entry $k lost"
done
echo "ok ($n acknowledged stores survived)"
