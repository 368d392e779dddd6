#!/bin/sh
# Per-core lock files: nkid holds lock_dir/core-N for its lifetime (a
# process following the convention cannot take it, and no child inherits
# it); a core locked by another process at start makes nkid refuse to
# start, naming the holder; after nkid exits nothing stays locked.
. "$(dirname "$0")/lib.sh"

command -v flock >/dev/null || fail "flock (util-linux) is missing"
LOCKS=$T/state/lock
mkdir -p "$LOCKS"

# Someone else holds core 0: nkid names it and does not start.
sh -c 'flock 9 && exec sleep 10' 9>"$LOCKS/core-0" &
holder=$!
n=0; while ! grep -q FLOCK /proc/locks || flock -n "$LOCKS/core-0" true; do
	n=$((n + 1)); [ $n -lt 50 ] || fail "the outside lock was never taken"; sleep 0.05
done
rc=0; "$NKID" -s "$SOCK" --state-dir "$T/state" >"$T/start.out" 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "nkid started with core 0 locked by another process"
grep -q "core 0 is held by pid [0-9]* (sleep)" "$T/start.out" ||
	fail "the holder is not named: $(cat "$T/start.out")"
[ ! -S "$SOCK" ] || fail "the socket was left behind"
kill $holder; wait $holder 2>/dev/null || true

# nkid holds both cores; an outside process cannot take them.
echo '{ "cpu": { "cores": 2 } }' >"$T/c.json"
start_nkid -c "$T/c.json"
for n in 0 1; do
	! flock -n "$LOCKS/core-$n" true || fail "core-$n is not locked by nkid"
	[ "$(cat "$LOCKS/core-$n")" = "$NKID_PID" ] || fail "core-$n does not name nkid"
done
# A lease's command does not inherit the lock (O_CLOEXEC).
"$NKICTL" lock -- sh -c "ls -l /proc/\$\$/fd | grep -c core- || true" >"$T/fds" 2>&1 ||
	fail "lock failed: $(cat "$T/fds")"
[ "$(cat "$T/fds")" = 0 ] || fail "a child inherited a core lock: $(cat "$T/fds")"
stop_nkid || fail "nkid exited non-zero"
flock -n "$LOCKS/core-0" true || fail "core-0 still locked after nkid exited"
echo ok
