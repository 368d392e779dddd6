#!/bin/sh
# The remote tier's configuration: Redis ACL credentials (a wrong password
# or none is a clear error at start naming the remote tier), the keys nkid
# -n checks, unreadable files, a store that is down at start (nkid serves
# anyway), and read mode (pulls, never pushes or locks).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/remote-lib.sh"

start_redis --user nkid on '>s3cret' '~nkid:*' '&nkid:*' '+@all' --user default off
RCLI_AUTH="--user nkid --pass s3cret --no-auth-warning"
printf 's3cret\n' >"$T/pw"
printf 'wrong\n' >"$T/badpw"
make_kernels "$T/k" 2

# start_fails CONFIG TEXT: nkid refuses to start and says TEXT.
start_fails() {
	rc=0
	"$NKID" -s "$T/x.sock" --state-dir "$T/x" -c "$1" >"$T/out" 2>&1 &
	p=$!
	i=0
	while kill -0 $p 2>/dev/null; do
		i=$((i + 1))
		if [ $i -ge 50 ]; then kill -KILL $p; fail "nkid started with $1"; fi
		sleep 0.1
	done
	wait $p || rc=$?
	[ $rc -ne 0 ] || fail "nkid exited 0 with $1"
	grep -q "$2" "$T/out" || fail "expected '$2': $(cat "$T/out")"
}

fleet_config "$T/bad.json" "\"user\": \"nkid\", \"password_file\": \"$T/badpw\""
start_fails "$T/bad.json" "remote tier 'unix://$RSOCK': Redis refused user 'nkid' (remote.user, remote.password_file): WRONGPASS"
fleet_config "$T/none.json"
start_fails "$T/none.json" "remote tier 'unix://$RSOCK': Redis wants a password (remote.password_file): NOAUTH"
fleet_config "$T/nokey.json" "\"user\": \"nkid\", \"password_file\": \"$T/pw\", \"hmac_key_file\": \"$T/missing.key\""
sed -i '0,/"hmac_key_file": "[^"]*",/s///' "$T/nokey.json"
start_fails "$T/nokey.json" "remote tier: cannot read remote.hmac_key_file '$T/missing.key': No such file"
fleet_key "$T/short.key" short
fleet_config "$T/short.json" "\"user\": \"nkid\", \"password_file\": \"$T/pw\""
sed -i "s|$T/fleet.key|$T/short.key|" "$T/short.json"
start_fails "$T/short.json" "the fleet key in remote.hmac_key_file '$T/short.key' has 5 bytes, fewer than 16"

# What nkid -n checks in the config alone.
check_fails() {
	echo "$1" >"$T/n.json"
	rc=0; "$NKID" -n -c "$T/n.json" >"$T/out" 2>&1 || rc=$?
	[ $rc -ne 0 ] || fail "nkid -n accepted $1"
	grep -q "$2" "$T/out" || fail "expected '$2': $(cat "$T/out")"
}
check_fails '{"remote": {"mode": "read"}}' "'remote.mode' is 'read': 'remote.url' must name the fleet's Redis"
check_fails '{"remote": {"mode": "read", "url": "redis://h"}}' "'remote.hmac_key_file' must name the fleet key"
check_fails '{"remote": {"url": "http://h"}}' "'remote.url': 'http://h' is not a Redis URL"
check_fails '{"remote": {"url": "redis://u:p@h:6379"}}' "no user or password in the URL"
check_fails '{"remote": {"url": "rediss://h"}}' "TLS (rediss://) is not supported"
check_fails '{"remote": {"user": "nkid"}}' "'remote.user' needs 'remote.password_file'"
check_fails '{"remote": {"mode": "write"}}' "'remote.mode' must be one of: off read read-write"
check_fails '{"remote": {"timeout_ms": 0}}' "'remote.timeout_ms' must be an integer from 10 to 60000"
check_fails '{"remote": {"password_file": "pw"}}' "'remote.password_file' must be an absolute path"
echo '{"remote": {"mode": "read-write", "url": "redis://[::1]:7000/3", "hmac_key_file": "/k"}}' >"$T/n.json"
"$NKID" -n -c "$T/n.json" >"$T/out" 2>&1 || fail "a good remote config refused: $(cat "$T/out")"

# The right password: serves, pushes, and status names the tier.
fleet_config "$T/good.json" "\"user\": \"nkid\", \"password_file\": \"$T/pw\""
start_host 1 "$T/good.json"
hctl 1 --json compile "$T/k/k0.nkir" >"$T/c0.json" || fail "compile failed"
key=$(json_get "$T/c0.json" 'd["neff_key"]')
wait_entry "$key"
hctl 1 status | grep -q "^remote *up, unix://$RSOCK, read-write" || fail "status: $(hctl 1 status)"

# Read mode: pulls what the fleet has, compiles the rest without a lock,
# pushes nothing; cache push is refused.
sed 's/"read-write"/"read"/' "$T/good.json" >"$T/read.json"
start_host 2 "$T/read.json"
hctl 2 --json compile "$T/k/k0.nkir" >"$T/r0.json" || fail "read host: compile failed"
[ "$(json_get "$T/r0.json" 'd["cache_hit"]')" = True ] || fail "read host did not pull"
hctl 2 --json compile "$T/k/k1.nkir" >"$T/r1.json" || fail "read host: compile failed"
key1=$(json_get "$T/r1.json" 'd["neff_key"]')
sleep 0.3
[ "$(rcli exists "nkid:neff:$key1")" = 0 ] || fail "a read-only host pushed"
[ "$(hstat 2 'd["cache"]["remote"]["locks_taken"]')" = 0 ] || fail "a read-only host took a lock"
rc=0; hctl 2 cache push >"$T/out" 2>&1 || rc=$?
[ $rc -eq 1 ] && grep -q "FAILED_PRECONDITION: CachePush needs the remote tier in mode 'read-write' (remote.mode is 'read')" "$T/out" ||
	fail "cache push in read mode: $(cat "$T/out")"

# Redis down at start: nkid starts, says so, serves from the local cache.
stop_redis
start_host 3 "$T/good.json"
grep -q "remote tier 'unix://$RSOCK': cannot connect" "$T/h3.log" || fail "the outage at start is not logged"
hctl 3 compile "$T/k/k1.nkir" >/dev/null || fail "compile failed with Redis down"
[ "$(hstat 3 'd["cache"]["remote"]["state"]')" = down ] || fail "state: $(cat "$T/st.json")"
stop_host "$HOST_PID" 3
echo ok
