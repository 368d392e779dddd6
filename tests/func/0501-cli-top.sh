#!/bin/sh
# `nkictl top` on a terminal (tmux): with a lease holding the core, a
# benchmark and runs queued behind it, the screen shows the core busy and
# its holder, the queues per class, the busiest clients, the cache's hit
# rate and compiles; an idle screen sends only what changes; `q` quits with
# exit 0. Off a terminal the screen is refused, and -b/--json give frames.
. "$(dirname "$0")/lib.sh"

command -v tmux >/dev/null || fail "no tmux (scripts/deps.sh installs it)"
TM="tmux -S $T/tmux.sock"
cleanup_top() {
	$TM kill-server 2>/dev/null || true
	cleanup
}
trap cleanup_top EXIT

trace_va 256,1024
ones_npy "$T/x.npy" 256,1024
start_nkid
"$NKICTL" compile "$T/va.nkir" >/dev/null || fail "compile"
"$NKICTL" compile "$T/va.nkir" >/dev/null || fail "compile (a hit)"

# wait_pane PATTERN: until the screen shows it (10 s).
wait_pane() {
	i=0
	while ! $TM capture-pane -p -t top >"$T/pane" 2>/dev/null || ! grep -q -- "$1" "$T/pane"; do
		i=$((i + 1))
		[ $i -lt 100 ] || fail "the screen never showed '$1':
$(cat "$T/pane")"
		sleep 0.1
	done
}

# quit_top: `q` ends top with exit 0 (its shell writes the status).
quit_top() {
	$TM send-keys -t top q
	i=0
	while [ ! -s "$T/top.rc" ]; do
		i=$((i + 1)); [ $i -lt 50 ] || fail "q did not end top"; sleep 0.1
	done
	[ "$(cat "$T/top.rc")" = 0 ] || fail "top exited $(cat "$T/top.rc") after q"
	rm -f "$T/top.rc"
	$TM kill-session -t top
}

# An idle screen: refreshed five times a second, only what changes is sent.
$TM new-session -d -s top -x 160 -y 48 \
	"'$NKICTL' -s '$SOCK' top -d 0.2; echo \$? >'$T/top.rc'; sleep 60"
wait_pane "QUEUE"
sleep 0.5
$TM pipe-pane -t top -o "cat >>'$T/idle.out'"
sleep 2
$TM pipe-pane -t top
full=$(wc -c <"$T/pane")
idle=$(wc -c <"$T/idle.out")
# ten refreshes in 2 s; a repaint of each would send ten screens
[ "$idle" -lt "$((full * 2))" ] ||
	fail "an idle screen sent $idle bytes in 2 s for a screen of $full: it repaints"
quit_top

# A busy nkid: a lease holds the core, runs of two clients queue behind it.
hold_lease "lease .*running"
"$NKICTL" run "$T/va.nkir" -i "$T/x.npy" -i "$T/x.npy" -o "$T/o1" >/dev/null 2>&1 &
R1=$!
"$NKICTL" run "$T/va.nkir" -i "$T/x.npy" -i "$T/x.npy" -o "$T/o2" --batch >/dev/null 2>&1 &
R2=$!
$TM new-session -d -s top -x 160 -y 48 \
	"'$NKICTL' -s '$SOCK' top; echo \$? >'$T/top.rc'; sleep 60"
wait_pane "interactive  *1  *1 "
wait_pane "batch  *1  *0"
wait_pane "leased  *100.0%"
grep -q "nkid 0.1.0, pid $NKID_PID" "$T/pane" || fail "no header: $(cat "$T/pane")"
grep -q "pid $LOCK uid" "$T/pane" || fail "the lease's holder (pid $LOCK) is not shown: $(cat "$T/pane")"
grep -Eq "hit rate [0-9.]+%" "$T/pane" || fail "no hit rate: $(cat "$T/pane")"
grep -q "compiles: 1 (0 coalesced, 0 failed)" "$T/pane" || fail "no compiles: $(cat "$T/pane")"
grep -q "CLIENT PID" "$T/pane" || fail "no clients: $(cat "$T/pane")"
grep -Eq "^ *$R1 +0 +0 +1 " "$T/pane" || fail "the queued client $R1 is not listed: $(cat "$T/pane")"
cp "$T/pane" "$T/busy.pane"
# The lease ends: the runs go through, their clients are seen done.
kill "$LOCK"
wait "$LOCK" || true
wait "$R1" || fail "run 1 failed"
wait "$R2" || fail "run 2 failed"
wait_pane "interactive  *0  *0"
wait_pane "^ *$R1  *0  *0  *0  *1 "
wait_pane "^ *$R2  *0  *0  *0  *1 "
quit_top

# Off a terminal: refused; frames of text or JSON on request.
rc=0; "$NKICTL" top </dev/null >"$T/out" 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -q "needs a terminal" "$T/out" || fail "top on a pipe: rc $rc $(cat "$T/out")"
"$NKICTL" top -b -n 2 -d 0.2 >"$T/frames" || fail "top -b"
[ "$(grep -c "^CORE " "$T/frames")" = 2 ] || fail "top -b -n 2: $(cat "$T/frames")"
"$NKICTL" --json top -n 2 -d 0.2 >"$T/frames.json" || fail "top --json"
"$PY" - "$T/frames.json" <<'PYEOF' || fail "top --json frames: $(cat "$T/frames.json")"
import json, sys
frames = [json.loads(l) for l in open(sys.argv[1])]
assert len(frames) == 2, frames
f = frames[1]
assert f["interval_s"] > 0 and f["cores"][0]["busy_percent"] is not None, f
assert f["cache"]["hit_rate"] > 0 and "interactive" in f["queues"], f
PYEOF
stop_nkid
rc=0; NKID_RECONNECT_TIMEOUT=0 "$NKICTL" top -b -n 1 >"$T/out" 2>&1 || rc=$?
[ $rc -eq 3 ] && grep -q "cannot connect to nkid" "$T/out" || fail "top -b without nkid: rc $rc"
echo ok
