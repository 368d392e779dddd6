#!/bin/sh
# The config (and every file it names, e.g. remote.hmac_key_file) must be
# a regular file: a FIFO or a link to a device is refused at once, never
# waited on. `nkid -n -c FIFO` answers within 2 s; a running nkid whose
# config path became a FIFO keeps serving on SIGHUP and logs why (before,
# either hung: the whole daemon on SIGHUP). Files live in the test's dir.
. "$(dirname "$0")/lib.sh"

mkfifo "$T/fifo.json"
ln -s /dev/zero "$T/dev.json"
for c in fifo dev; do
	timeout 5 "$NKID" -n -c "$T/$c.json" >"$T/o" 2>&1 && fail "nkid -n accepted the $c"
	rc=$?
	[ $rc -ne 124 ] || fail "nkid -n -c $c hung"
	grep -q "not a regular file" "$T/o" || fail "$c: $(cat "$T/o")"
done
# A fleet key that is a FIFO: refused by name, at once.
cat >"$T/remote.json" <<J
{"remote": {"mode": "read", "url": "unix://$T/nothing.sock", "hmac_key_file": "$T/fifo.json"}}
J
timeout 10 "$NKID" -s "$SOCK" --state-dir "$T/state2" -c "$T/remote.json" >"$T/o" 2>&1 &&
    fail "nkid started with a FIFO as its fleet key"
[ $? -ne 124 ] || fail "nkid hung on a FIFO fleet key"
grep -q "remote.hmac_key_file '$T/fifo.json': not a regular file" "$T/o" || fail "fleet key: $(cat "$T/o")"

echo '{"log_level": "debug"}' >"$T/c.json"
start_nkid -c "$T/c.json"
rm "$T/c.json"
mkfifo "$T/c.json"
kill -HUP "$NKID_PID"
sleep 0.5
timeout 5 "$NKICTL" --timeout 2 ping -n 1 >/dev/null || fail "nkid does not answer after SIGHUP with a FIFO config"
i=0
until grep -q "not a regular file" "$LOG"; do
	i=$((i + 1)); [ $i -lt 30 ] || fail "the refused reload not logged"; sleep 0.1
done
stop_nkid || fail "nkid exited non-zero"
echo ok
