#!/bin/sh
# Socket activation without -s: nkid started by systemd-socket-activate
# with only --state-dir takes the socket it is passed, puts its lock beside
# the path that socket is bound to (not beside the configured socket), and
# serves the very first call; a second nkid on that socket is refused,
# naming the first; on SIGTERM nkid leaves the socket to its owner.
. "$(dirname "$0")/lib.sh"

command -v systemd-socket-activate >/dev/null ||
	skip "systemd-socket-activate (package systemd) is missing"

# The configured socket would be /run/nkid/nkid.sock; nothing may go there.
before=$(ls -l /run/nkid 2>&1 || true)

systemd-socket-activate -l "$SOCK" "$NKID" --state-dir "$T/state" \
	>>"$LOG" 2>&1 &
NKID_PID=$!
i=0; while [ ! -S "$SOCK" ] && [ $i -lt 50 ]; do i=$((i + 1)); sleep 0.1; done
[ -S "$SOCK" ] || fail "systemd-socket-activate did not create $SOCK"

# The very first call starts nkid and is served by it.
"$NKICTL" -s "$SOCK" --timeout 10 --json status >"$T/status.json" ||
	fail "the first call on an activated socket failed"
[ "$(json_get "$T/status.json" "d['pid']")" = "$NKID_PID" ] ||
	fail "status pid is not the activated nkid's"
[ "$(json_get "$T/status.json" "d['socket']")" = "$SOCK" ] ||
	fail "nkid does not report the socket it was passed: $(cat "$T/status.json")"

# The lock is beside the socket, names nkid and is held.
[ -f "$SOCK.lock" ] || fail "no lock file beside $SOCK: $(ls -l "$T")"
[ "$(cat "$SOCK.lock")" = "$NKID_PID" ] ||
	fail "the lock names '$(cat "$SOCK.lock")', not nkid pid $NKID_PID"
if command -v flock >/dev/null; then
	! flock -n "$SOCK.lock" true || fail "$SOCK.lock is not locked"
fi
[ "$before" = "$(ls -l /run/nkid 2>&1 || true)" ] ||
	fail "nkid touched /run/nkid, the configured socket's directory"

# Another nkid for the same socket is told who has it.
rc=0
"$NKID" -s "$SOCK" --state-dir "$T/state2" >"$T/second.out" 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "a second nkid started on $SOCK"
grep -q "socket '$SOCK' is in use by nkid pid $NKID_PID" "$T/second.out" ||
	fail "the second nkid was not told who holds the socket: $(cat "$T/second.out")"
"$NKICTL" -s "$SOCK" --timeout 5 ping -n 1 >/dev/null ||
	fail "nkid stopped serving after a second nkid tried its socket"

rc=0; stop_nkid || rc=$?
[ $rc -eq 0 ] || fail "activated nkid exited $rc on SIGTERM"
[ -S "$SOCK" ] || fail "nkid removed the socket it was passed"
echo ok
