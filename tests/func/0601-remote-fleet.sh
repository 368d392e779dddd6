#!/bin/sh
# A fleet on one Redis: the same new kernel sent 32 times at once across
# three nkid daemons (separate state dirs) compiles once in total and all
# three compute the right result; a host joining later serves it with no
# compile; `nkictl cache pull MANIFEST` warms a fresh host from the fleet,
# `nkictl cache push` writes named entries.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/remote-lib.sh"

start_redis
fleet_config "$T/fleet.json"
"$PY" -m nkid.trace examples.matmul:matmul --shape 256,128 --dtype float32 \
	--shape 256,1024 --dtype float32 -o "$T/mm.nkir" >/dev/null || fail "cannot trace matmul"
for n in 1 2 3; do start_host $n "$T/fleet.json"; done
[ "$(hstat 1 'd["cache"]["remote"]["state"]')" = up ] || fail "host 1: remote tier not up: $(cat "$T/st.json")"

# 32 identical requests at once, spread over the three hosts.
i=0 pids=
while [ $i -lt 32 ]; do
	hctl $((i % 3 + 1)) --json compile "$T/mm.nkir" >"$T/c$i.json" 2>&1 &
	pids="$pids $!"
	i=$((i + 1))
done
bad=0
for p in $pids; do wait "$p" || bad=1; done
[ $bad -eq 0 ] || fail "a compile failed: $(cat "$T"/c*.json)"
keys=$(cat "$T"/c*.json | "$PY" -c 'import sys,json; print(len({json.loads(l)["neff_key"] for l in sys.stdin}))')
[ "$keys" = 1 ] || fail "32 compiles gave $keys different keys"
key=$(json_get "$T/c0.json" 'd["neff_key"]')
compiles=0 hits=0
for n in 1 2 3; do
	c=$(hstat $n 'd["cache"]["compiles"]')
	h=$(hstat $n 'd["cache"]["remote"]["hits"]')
	compiles=$((compiles + c)) hits=$((hits + h))
done
[ $compiles -eq 1 ] || fail "3 hosts x 32 identical requests compiled $compiles times (want 1)"
[ $hits -eq 2 ] || fail "the two other hosts pulled $hits entries (want 2)"
[ "$(rcli exists "nkid:neff:$key")" = 1 ] || fail "the entry is not in Redis"
[ "$(rcli keys 'nkid:lock:*' | wc -w)" = 0 ] || fail "a fleet lock was left behind"

# Every host computes C = A @ B.
"$PY" - "$T" <<'P' || fail "cannot write the inputs"
import sys, numpy as np
rng = np.random.default_rng(3)
a = rng.standard_normal((128, 256), dtype=np.float32)
b = rng.standard_normal((256, 1024), dtype=np.float32)
np.save(sys.argv[1] + "/a_t.npy", np.ascontiguousarray(a.T))
np.save(sys.argv[1] + "/b.npy", b)
np.save(sys.argv[1] + "/want.npy", a @ b)
P
for n in 1 2 3; do
	mkdir -p "$T/out$n"
	hctl $n run "$T/mm.nkir" -i "$T/a_t.npy" -i "$T/b.npy" -o "$T/out$n" >/dev/null ||
		fail "run on host $n failed"
	"$PY" -c 'import sys, glob, numpy as np
got = np.load(glob.glob(sys.argv[1] + "/*.npy")[0]); want = np.load(sys.argv[2])
assert np.allclose(got, want, rtol=1e-4, atol=1e-3), float(np.max(np.abs(got - want)))' \
	    "$T/out$n" "$T/want.npy" || fail "host $n computed a wrong result"
done

# A host joining later: served from the fleet, no compile.
start_host 4 "$T/fleet.json"
hctl 4 --json compile "$T/mm.nkir" >"$T/late.json" || fail "late host: compile failed"
[ "$(json_get "$T/late.json" 'd["cache_hit"]')" = True ] || fail "late host compiled: $(cat "$T/late.json")"
[ "$(hstat 4 'd["cache"]["compiles"]')" = 0 ] || fail "late host compiled"
[ "$(hstat 4 'd["cache"]["remote"]["hits"]')" = 1 ] || fail "late host did not pull: $(cat "$T/st.json")"
hctl 4 cache stat | grep -q "^remote *up, unix://$RSOCK, read-write" ||
	fail "cache stat does not show the remote tier: $(hctl 4 cache stat)"
stop_host "$HOST_PID" 4

# cache pull MANIFEST: a fresh host takes the kernel before serving.
echo '{"kernels": ["mm.nkir"]}' >"$T/m.json"
start_host 5 "$T/fleet.json"
hctl 5 --json cache pull "$T/m.json" >"$T/pull.json" || fail "cache pull failed: $(cat "$T/pull.json")"
[ "$(json_get "$T/pull.json" 'd["pulled"]')" = 1 ] || fail "cache pull: $(cat "$T/pull.json")"
[ "$(json_get "$T/pull.json" 'd["results"][0]["neff_key"]')" = "$key" ] || fail "cache pull derived another key"
hctl 5 --json cache pull "$T/m.json" >"$T/pull.json" || fail "second cache pull failed"
[ "$(json_get "$T/pull.json" 'd["present"]')" = 1 ] || fail "second pull: $(cat "$T/pull.json")"
hctl 5 cache ls | grep -q "${key%"${key#????????????}"}" || fail "pulled entry not in the cache"
hctl 5 --json compile "$T/mm.nkir" >"$T/c5.json" || fail "host 5: compile failed"
[ "$(hstat 5 'd["cache"]["compiles"]')" = 0 ] || fail "host 5 compiled after a pull"

# cache push KEY: written again after it is gone from Redis; a missing key
# is named; a kernel the fleet lacks is "missing" for pull (exit 1).
rcli del "nkid:neff:$key" >/dev/null
hctl 2 cache push "$key" >"$T/push.out" || fail "cache push failed: $(cat "$T/push.out")"
grep -q "pushed 1 entry" "$T/push.out" || fail "cache push: $(cat "$T/push.out")"
[ "$(rcli exists "nkid:neff:$key")" = 1 ] || fail "cache push did not write the entry"
rc=0; hctl 2 cache push 0000000000000000000000000000000000000000000000000000000000000000 \
	>"$T/push.out" 2>&1 || rc=$?
[ $rc -eq 1 ] && grep -q "no entry '0000" "$T/push.out" || fail "missing key not named: $(cat "$T/push.out")"
"$PY" -m nkid.trace examples.matmul:matmul --shape 128,128 --dtype float32 \
	--shape 128,512 --dtype float32 -o "$T/new.nkir" >/dev/null || fail "cannot trace"
echo '{"kernels": ["new.nkir"]}' >"$T/m2.json"
rc=0; hctl 5 cache pull "$T/m2.json" >"$T/pull.out" 2>&1 || rc=$?
[ $rc -eq 1 ] && grep -q "new.nkir': missing" "$T/pull.out" || fail "missing kernel: rc $rc, $(cat "$T/pull.out")"
echo ok
