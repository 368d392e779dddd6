#!/bin/sh
# Every pulled entry is verified before it is stored or served: a value
# altered inside Redis, a truncated one, one signed with another fleet
# key, another kernel's entry under this key, and garbage are each
# rejected (counted, logged with the key), never served, and the kernel
# compiles locally instead; the push that follows repairs the store.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/remote-lib.sh"

start_redis
fleet_config "$T/fleet.json"
make_kernels "$T/k" 2
start_host 1 "$T/fleet.json"
hctl 1 --json compile "$T/k/k0.nkir" >"$T/c0.json" || fail "compile failed"
hctl 1 --json compile "$T/k/k1.nkir" >"$T/c1.json" || fail "compile failed"
key=$(json_get "$T/c0.json" 'd["neff_key"]')
key1=$(json_get "$T/c1.json" 'd["neff_key"]')
E=nkid:neff:$key
i=0
while [ "$(rcli exists "$E")" != 1 ] || [ "$(rcli exists "nkid:neff:$key1")" != 1 ]; do
	i=$((i + 1)); [ $i -lt 50 ] || fail "entries not pushed"; sleep 0.1
done
len=$(rcli strlen "$E")
start_host 2 "$T/fleet.json"

# expect_rejected WHY: host 2, which lacks the kernel, must reject the
# entry (log naming the key and WHY), compile locally, and serve that.
nrej=0
expect_rejected() {
	nrej=$((nrej + 1))
	hctl 2 --json compile "$T/k/k0.nkir" >"$T/r.json" || fail "$1: compile failed"
	[ "$(json_get "$T/r.json" 'd["cache_hit"]')" = False ] || fail "$1: served from the store"
	[ "$(hstat 2 'd["cache"]["remote"]["rejected"]')" = $nrej ] || fail "$1: not counted: $(cat "$T/st.json")"
	[ "$(hstat 2 'd["cache"]["compiles"]')" = $nrej ] || fail "$1: not compiled locally"
	grep -q "entry '$key' rejected: $1" "$T/h2.log" || fail "$1: not logged: $(grep rejected "$T/h2.log")"
	hctl 2 cache rm "$key" >/dev/null || fail "cache rm failed"
	# Host 2 pushed a good entry again: wait for it.
	i=0
	while [ "$(rcli strlen "$E")" != "$len" ]; do
		i=$((i + 1)); [ $i -lt 50 ] || fail "$1: the store was not repaired"; sleep 0.1
	done
}

# A byte of the NEFF altered in place.
rcli setrange "$E" $((len - 40)) X >/dev/null
expect_rejected "its HMAC does not match the fleet key"

# Truncated by 10 bytes.
rcli eval "local v = redis.call('get', KEYS[1]); redis.call('set', KEYS[1], string.sub(v, 1, #v - 10)); return #v" 1 "$E" >/dev/null
expect_rejected "truncated"

# Another kernel's (valid, signed) entry stored under this key.
rcli eval "redis.call('set', KEYS[1], redis.call('get', KEYS[2])); return 1" 2 "$E" "nkid:neff:$key1" >/dev/null
expect_rejected "it is the entry of key '$key1'"

# Not an entry at all.
rcli set "$E" "hello, fleet" >/dev/null
expect_rejected "not an nkid entry"

# Signed with another fleet key: a host of another fleet pushes it.
fleet_key "$T/other.key" "another-fleet-key-9876543210"
sed "s|$T/fleet.key|$T/other.key|" "$T/fleet.json" >"$T/other.json"
start_host 9 "$T/other.json"
hctl 9 compile "$T/k/k0.nkir" >/dev/null || fail "other fleet: compile failed"
[ "$(hstat 9 'd["cache"]["remote"]["rejected"]')" = 1 ] || fail "the other fleet served our entry"
i=0
while [ "$(hstat 9 'd["cache"]["remote"]["pushes"]')" != 1 ]; do
	i=$((i + 1)); [ $i -lt 50 ] || fail "other fleet did not push"; sleep 0.1
done
expect_rejected "its HMAC does not match the fleet key"

# Repaired: a fresh host pulls it and compiles nothing.
start_host 3 "$T/fleet.json"
hctl 3 --json compile "$T/k/k0.nkir" >"$T/r3.json" || fail "host 3: compile failed"
[ "$(json_get "$T/r3.json" 'd["cache_hit"]')" = True ] || fail "host 3 did not pull the repaired entry"
[ "$(hstat 3 'd["cache"]["remote"]["rejected"]')" = 0 ] || fail "host 3 rejected the repaired entry"
echo ok
