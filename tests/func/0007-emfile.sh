#!/bin/sh
# Out of descriptors: nkid under a limit of 64 descriptors, with 200 real
# connections held open, neither spins (under 1 s of CPU over 5 s) nor
# floods its log, and serves again once they close. Two ways to run out:
# first the connections fill the 16 descriptor numbers that accepted
# connections rotate through (docs/protocol.md, "Identity"); then, the
# limit lowered to the descriptors nkid holds (as when its own files fill
# its table), accept4 itself fails with EMFILE while clients wait.
. "$(dirname "$0")/lib.sh"

command -v prlimit >/dev/null || fail "prlimit (util-linux) is missing"
HOLDERS=
trap 'for h in $HOLDERS; do kill "$h" 2>/dev/null || true; done; cleanup' EXIT

# hold N: open N connections to nkid's socket and keep them open until
# killed; returns once they are all connected.
hold() {
	"$PY" - "$SOCK" "$1" >"$T/held.$1" 2>&1 <<'P' &
import socket, sys, time
socks = []
for i in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    socks.append(s)
print(len(socks), flush=True)
while True:
    time.sleep(60)
P
	HOLDERS="$HOLDERS $!"
	i=0
	while [ "$(cat "$T/held.$1" 2>/dev/null)" != "$1" ]; do
		i=$((i + 1))
		[ $i -lt 100 ] || fail "could not open $1 connections: $(cat "$T/held.$1")"
		sleep 0.1
	done
}

# cpu: nkid's user + system time, in clock ticks.
cpu() {
	awk '{ print $14 + $15 }' "/proc/$NKID_PID/stat"
}

# mark, then quiet WHAT: from the mark until 5 s after the call to quiet,
# nkid uses under 1 s of CPU and logs at most 10 lines.
mark() {
	c0=$(cpu); l0=$(wc -l <"$LOG")
}
quiet() {
	sleep 5
	kill -0 "$NKID_PID" 2>/dev/null || fail "nkid died $1"
	c=$(( $(cpu) - c0 )); l=$(( $(wc -l <"$LOG") - l0 ))
	echo "$1: $c ticks of CPU ($(getconf CLK_TCK) a second), $l log lines in 5 s"
	[ "$c" -lt "$(getconf CLK_TCK)" ] || fail "nkid spins $1: $c ticks of CPU in 5 s"
	[ "$l" -le 10 ] || fail "nkid floods its log $1: $l lines in 5 s"
}

prlimit --nofile=64 "$NKID" -s "$SOCK" --state-dir "$T/state" >>"$LOG" 2>&1 &
NKID_PID=$!
wait_ready
[ $(prlimit --pid "$NKID_PID" --nofile --noheadings --output SOFT) -eq 64 ] ||
	fail "nkid does not run with 64 descriptors"

# 1. 200 connections: 16 fit in the rotating range, the rest are refused.
mark
hold 200
quiet "with 200 connections open"

# 2. Every descriptor number nkid may use is taken: accept4 fails EMFILE.
low=$("$PY" -c 'import os, sys
fds = {int(f) for f in os.listdir("/proc/%s/fd" % sys.argv[1])}
print(min(set(range(len(fds) + 1)) - fds))' "$NKID_PID")
prlimit --pid "$NKID_PID" --nofile="$low:64" || fail "cannot lower nkid's limit"
mark
hold 20
quiet "out of descriptors (limit $low) with 20 clients waiting"
grep -q "cannot accept on '$SOCK': Too many open files" "$LOG" ||
	fail "accept4 never ran out of descriptors"

# 3. Descriptors back, connections closed: nkid serves again.
prlimit --pid "$NKID_PID" --nofile=64:64 || fail "cannot restore nkid's limit"
for h in $HOLDERS; do kill "$h"; wait "$h" 2>/dev/null || true; done
HOLDERS=
i=0
while ! "$NKICTL" -s "$SOCK" --timeout 1 ping -n 1 >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 20 ] || fail "nkid does not serve again after the connections closed"
	sleep 0.5
done
"$NKICTL" --json status >"$T/status.json" || fail "status failed"
[ "$(json_get "$T/status.json" "d['counters']['refused']")" -ge 100 ] ||
	fail "refusals not counted: $(cat "$T/status.json")"
rc=0; stop_nkid || rc=$?
[ $rc -eq 0 ] || fail "nkid exited $rc on SIGTERM"
echo ok
