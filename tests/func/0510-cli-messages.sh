#!/bin/sh
# Messages that name what is wrong (issue 31, item 11): a refused peer of an
# nkid running on its built-in defaults is not sent to /etc/nkid/nkid.json;
# a truncated bundle says it is cut short (not "absurd blob size"); export
# into a missing directory names FILE, not its temp file; a socket systemd
# passes is not logged with a mode nkid did not give it.
. "$(dirname "$0")/lib.sh"
command -v setpriv >/dev/null || fail "setpriv (util-linux) is missing"

chmod 0755 "$T"
start_nkid
# As a socket unit with SocketMode=0666 would pass it.
chmod 0666 "$SOCK"
rc=0
setpriv --reuid 65534 --regid 65534 --clear-groups \
	"$NKICTL" -s "$SOCK" --timeout 3 status >"$T/out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "uid 65534: exit $rc, $(cat "$T/out")"
grep -q "PERMISSION_DENIED: uid 65534 is not allowed" "$T/out" ||
	fail "uid 65534 not told PERMISSION_DENIED: $(cat "$T/out")"
! grep -q "/etc/nkid/nkid.json" "$T/out" || fail "the message cites a config nkid did not read: $(cat "$T/out")"
grep -q "built-in defaults" "$T/out" || fail "the message does not say nkid runs on its defaults: $(cat "$T/out")"

trace_va 64,64
"$NKICTL" compile "$T/va.nkir" >/dev/null || fail "compile"
"$NKICTL" cache export "$T/b.nkb" >/dev/null || fail "export"
size=$(stat -c %s "$T/b.nkb")
head -c $((size - 100)) "$T/b.nkb" >"$T/cut.nkb"
rc=0; "$NKICTL" cache import --cache-dir "$T/c2" "$T/cut.nkb" >"$T/imp.out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "import of a truncated bundle: exit $rc, $(cat "$T/imp.out")"
grep -q "the bundle ends before its blob of [0-9]* bytes (is it cut short?)" "$T/imp.out" ||
	fail "the truncated bundle's message: $(cat "$T/imp.out")"
# export into a directory that does not exist names FILE, not a temp file
rc=0; "$NKICTL" cache export "$T/nodir/b.nkb" >"$T/exp.out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "export into a missing directory: exit $rc"
grep -q "cannot write '$T/nodir/b.nkb': No such file or directory" "$T/exp.out" ||
	fail "export into a missing directory: $(cat "$T/exp.out")"
stop_nkid || fail "nkid exited non-zero"

# item 17: a socket systemd passes is logged as systemd's, without a mode
# and group nkid did not give it.
if command -v systemd-socket-activate >/dev/null; then
	: >"$LOG"
	systemd-socket-activate -l "$T/act.sock" "$NKID" --state-dir "$T/act" >>"$LOG" 2>&1 &
	NKID_PID=$!
	i=0; while [ ! -S "$T/act.sock" ] && [ $i -lt 50 ]; do i=$((i+1)); sleep 0.1; done
	"$NKICTL" -s "$T/act.sock" --timeout 10 ping >/dev/null || fail "the activated nkid does not answer"
	grep -q "listening on '$T/act.sock' (from systemd)" "$LOG" || fail "no 'from systemd' in the log"
	! grep -q "(mode 0" "$LOG" || fail "the log gives a passed socket a mode: $(grep listening "$LOG")"
	stop_nkid || fail "the activated nkid exited non-zero"
fi
echo ok
