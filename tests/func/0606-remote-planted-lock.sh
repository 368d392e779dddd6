#!/bin/sh
# A writer of the store without the fleet key plants fleet locks: a string
# that never expires, a hash, a string with a TTL longer than any lock of
# the fleet, a hash where an entry belongs, and a lock it keeps renewing.
# None may stall a host: the first four are ignored (counted in
# nkid_remote_locks_ignored_total, logged once) or rejected and the kernel
# compiles here at once; the renewed one is waited for remote.lock_wait_ms
# at most. Every kernel compiled here is pushed, so the fleet is served.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/remote-lib.sh"

start_redis
make_kernels "$T/k" 5
# The keys, from a host with no remote tier (same backend, same compiler).
cat >"$T/plain.json" <<J
{"log_level": "debug"}
J
start_host 0 "$T/plain.json"
for i in 0 1 2 3 4; do
	hctl 0 --json compile "$T/k/k$i.nkir" >"$T/c$i.json" || fail "compile failed"
	eval "key$i=\$(json_get \"\$T/c$i.json\" 'd[\"neff_key\"]')"
done
fleet_config "$T/fleet.json" '"lock_wait_ms": 1500'
# ... and GET /metrics on a unix socket, for the remote tier's series.
"$PY" - "$T/fleet.json" "$T/metrics.sock" <<'P'
import json, sys
c = json.load(open(sys.argv[1]))
c["metrics"] = {"listen": sys.argv[2]}
json.dump(c, open(sys.argv[1], "w"))
P
rcli set "nkid:lock:$key0" planted >/dev/null
rcli hset "nkid:lock:$key1" a b >/dev/null
rcli set "nkid:lock:$key2" planted px 3600000 >/dev/null
rcli hset "nkid:neff:$key3" a b >/dev/null
start_host 1 "$T/fleet.json"

# compile_within N MAX_MS: host 1 compiles kernel N (not from the store)
# within MAX_MS; its time in $ms.
compile_within() {
	t0=$(date +%s%N)
	timeout 30 "$NKICTL" -s "$T/h1.sock" --json compile "$T/k/k$1.nkir" \
	    >"$T/r$1.json" 2>&1 || fail "kernel $1: compile failed: $(cat "$T/r$1.json")"
	ms=$((($(date +%s%N) - t0) / 1000000))
	[ $ms -lt "$2" ] || fail "kernel $1: $ms ms (at most $2)"
	[ "$(json_get "$T/r$1.json" 'd["cache_hit"]')" = False ] || fail "kernel $1: a hit"
}

for i in 0 1 2; do
	compile_within $i 3000
done
[ "$(grep -c "is not one a host of the fleet set" "$T/h1.log")" = 1 ] ||
    fail "the ignored locks not logged once: $(grep 'fleet lock' "$T/h1.log")"
grep -q "it never expires" "$T/h1.log" || fail "no TTL not named"
compile_within 3 3000
grep -q "entry '$key3' rejected: it is not a string" "$T/h1.log" ||
    fail "the hash entry not rejected: $(grep "$key3" "$T/h1.log")"
[ "$(hstat 1 'd["cache"]["remote"]["rejected"]')" = 1 ] || fail "rejected: $(cat "$T/st.json")"
[ "$(hstat 1 'd["cache"]["remote"]["errors"]')" = 0 ] ||
    fail "wrong types counted as errors of the store: $(cat "$T/st.json")"
[ "$(hstat 1 'd["cache"]["remote"]["state"]')" = up ] || fail "tier not up: $(cat "$T/st.json")"
[ "$(hstat 1 'd["cache"]["compiles"]')" = 4 ] || fail "compiles: $(cat "$T/st.json")"
# The remote series in /metrics (docs/metrics.md).
curl -sf --max-time 5 --unix-socket "$T/metrics.sock" http://nkid/metrics >"$T/m.txt" ||
    fail "GET /metrics failed"
for want in 'nkid_remote_fleet_locks_total{outcome="ignored"} 3' \
    'nkid_remote_rejected_total 1' 'nkid_remote_errors_total 0' \
    'nkid_remote_state{state="up"} 1' 'nkid_remote_breaker_open 0' \
    'nkid_remote_misses_total 3'; do
	grep -qxF "$want" "$T/m.txt" || fail "no '$want' in /metrics: $(grep nkid_remote "$T/m.txt")"
done
if command -v promtool >/dev/null; then
	promtool check metrics <"$T/m.txt" || fail "promtool refused the metrics"
fi
# Pushed despite the planted locks (the hash at the entry's key stays).
for k in $key0 $key1 $key2; do
	wait_entry "$k"
done

# A planted lock kept alive, as a holder would: waited 1.5 s, no more.
( while :; do rcli set "nkid:lock:$key4" planted px 1000 >/dev/null; sleep 0.2; done ) &
RENEW=$!
# shellcheck disable=SC2064
trap "kill $RENEW 2>/dev/null || true; remote_cleanup" EXIT
sleep 0.3
compile_within 4 4000
[ $ms -ge 1400 ] || fail "kernel 4: answered in $ms ms: did not wait for the lock"
kill "$RENEW" 2>/dev/null || true
grep -q "waited 1500 ms for another host's compile of '$key4' (remote.lock_wait_ms)" "$T/h1.log" ||
    fail "the bounded wait not logged"
[ "$(hstat 1 'd["cache"]["remote"]["locks_waited"]')" = 1 ] || fail "locks_waited: $(cat "$T/st.json")"
echo ok
