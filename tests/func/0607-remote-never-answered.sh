#!/bin/sh
# A Redis stopped (SIGSTOP) before nkid ever heard from it: requests are
# served locally within remote.timeout_ms; when it is continued, the log
# says it answers (after N failures), never "answers again" of a store
# that never answered.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/remote-lib.sh"

start_redis
make_kernels "$T/k" 3
kill -STOP "$REDIS_PID"
REMOTE_TIMEOUT_MS=200 fleet_config "$T/fleet.json"
start_host 1 "$T/fleet.json"
t0=$(date +%s%N)
hctl 1 compile "$T/k/k0.nkir" >/dev/null || fail "compile with a stopped Redis failed"
ms=$((($(date +%s%N) - t0) / 1000000))
[ $ms -lt 3000 ] || fail "a compile took $ms ms with a stopped Redis (remote.timeout_ms 200)"
grep -Eq "(no answer|cannot connect) within 200 ms" "$T/h1.log" || fail "the timeout not logged: $(grep remote "$T/h1.log" | tail -3)"
kill -CONT "$REDIS_PID"
# The reconnect is retried within a few seconds; each compile asks again.
i=0
while ! grep -q "remote tier '[^']*' answers" "$T/h1.log"; do
	i=$((i + 1)); [ $i -lt 100 ] || fail "never answered after SIGCONT: $(grep remote "$T/h1.log" | tail -5)"
	hctl 1 compile "$T/k/k$((i % 2 + 1)).nkir" >/dev/null 2>&1 || true
	sleep 0.1
done
! grep -q "answers again" "$T/h1.log" || fail "said 'answers again' of a Redis that never answered"
grep -q "answers (after [0-9]* failures)" "$T/h1.log" || fail "$(grep answers "$T/h1.log")"
echo ok
