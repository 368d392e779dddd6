#!/bin/sh
# A cache that cannot be opened at start: nkid serves without it, and
# SIGTERM still stops it at once with status 0 while the retry timer is
# armed (the timer once kept the loop running after the server stopped,
# and nkid hung). A memory hit's use, recorded in batches, has no disk to
# go to: that batch once crashed nkid a second after the hit.
. "$(dirname "$0")/lib.sh"

mkdir -p "$T/state/cache/index.db"	# a directory: the open always fails
"$PY" -m nkid.trace examples.matmul:matmul --shape 128,128 --dtype float32 \
	--shape 128,512 --dtype float32 -o "$T/mm.nkir" >/dev/null || fail "trace"
for round in 1 2 3; do
	start_nkid
	grep -q "running without a persistent cache, trying again" "$LOG" ||
		fail "no retry announced"
	"$NKICTL" --json compile "$T/mm.nkir" >/dev/null ||
		fail "compile without a cache"
	if [ $round = 1 ]; then
		# A hit in memory is a use to record: its batch, due within
		# a second, has no disk to go to (it once crashed nkid).
		"$NKICTL" --json compile "$T/mm.nkir" >/dev/null ||
			fail "second compile without a cache"
		sleep 1.5
		"$NKICTL" ping -n 1 >/dev/null 2>&1 ||
			fail "nkid died after a memory hit without a cache: $(tail -3 "$LOG")"
	fi
	# Round 2 stops while a retry is due, round 3 after one has failed.
	[ $round = 1 ] || sleep $((round - 1)).2
	t0=$(date +%s%N)
	pid=$NKID_PID
	kill -TERM "$pid"
	i=0
	while kill -0 "$pid" 2>/dev/null; do
		i=$((i + 1)); [ $i -lt 50 ] || fail "round $round: nkid still running 5 s after SIGTERM"
		sleep 0.1
	done
	rc=0; wait "$pid" || rc=$?
	NKID_PID=
	[ $rc = 0 ] || fail "round $round: nkid exited $rc"
	ms=$((($(date +%s%N) - t0) / 1000000))
	[ $ms -lt 3000 ] || fail "round $round: stopping took $ms ms"
done
echo ok
