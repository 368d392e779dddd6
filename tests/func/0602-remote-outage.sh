#!/bin/sh
# The store is never on the critical path: Redis killed during a load of
# compiles (none fails; errors are counted; pushes resume once Redis is
# back, without restarting nkid), then Redis stopped with SIGSTOP (each
# call ends within remote.timeout_ms plus the local compile, and the
# circuit opens).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/remote-lib.sh"

REMOTE_TIMEOUT_MS=300
start_redis
fleet_config "$T/fleet.json"
make_kernels "$T/k" 60
start_host 1 "$T/fleet.json"

# wait_state STATE: host 1's remote tier reaches STATE within 15 s.
wait_state() {
	i=0
	while [ "$(hstat 1 'd["cache"]["remote"]["state"]')" != "$1" ]; do
		i=$((i + 1))
		[ $i -lt 150 ] || fail "remote tier not '$1' after 15 s: $(cat "$T/st.json")"
		sleep 0.1
	done
}

# compile_ok I: kernel I compiles through host 1; its key in $KEY.
compile_ok() {
	hctl 1 --json compile "$T/k/k$1.nkir" >"$T/c$1.json" 2>&1 ||
		fail "compile of k$1 failed: $(cat "$T/c$1.json")"
	KEY=$(json_get "$T/c$1.json" 'd["neff_key"]')
}

# Four loaders of ten kernels each; Redis is killed while they run.
for l in 0 1 2 3; do
	(
		i=$l
		while [ $i -lt 40 ]; do
			hctl 1 compile "$T/k/k$i.nkir" >"$T/load$i.out" 2>&1 || exit 1
			i=$((i + 4))
		done
	) &
	eval "loader$l=\$!"
done
sleep 0.2
stop_redis
bad=0
for l in 0 1 2 3; do eval "wait \$loader$l" || bad=1; done
[ $bad -eq 0 ] || fail "a compile failed while Redis died: $(cat "$T"/load*.out)"
compile_ok 40
[ "$(hstat 1 'd["cache"]["compiles"]')" = 41 ] || fail "not every kernel compiled: $(cat "$T/st.json")"
errors=$(hstat 1 'd["cache"]["remote"]["errors"]')
[ "$errors" -ge 1 ] || fail "Redis died and no error was counted: $(cat "$T/st.json")"
[ "$(hstat 1 'd["cache"]["remote"]["state"]')" = down ] || fail "remote tier not down: $(cat "$T/st.json")"
grep -q "remote tier 'unix://$RSOCK': .*requests are served from the local cache" "$T/h1.log" ||
	fail "the outage is not in the log"
# Reconnecting fails too: the circuit opens.
i=0
while ! grep -q "failures in a row.*not asking it for" "$T/h1.log"; do
	i=$((i + 1)); [ $i -lt 50 ] || fail "the circuit did not open with Redis dead"; sleep 0.1
done
compile_ok 59
[ "$(hstat 1 'd["cache"]["remote"]["skipped"]')" -ge 1 ] || fail "nothing skipped with the circuit open"

# Redis is back: nkid reconnects by itself and pushes again.
pushes=$(hstat 1 'd["cache"]["remote"]["pushes"]')
start_redis
wait_state up
compile_ok 41
wait_entry "$KEY"
[ "$(hstat 1 'd["cache"]["remote"]["pushes"]')" -gt "$pushes" ] || fail "pushes not counted"

# Redis stopped: each call ends within timeout_ms plus the local path,
# until the circuit opens after three failures in a row.
trips=$(grep -c "failures in a row.*not asking it for" "$T/h1.log" || true)
errors=$(hstat 1 'd["cache"]["remote"]["errors"]')
kill -STOP "$REDIS_PID"
i=42
while [ "$(grep -c "failures in a row.*not asking it for" "$T/h1.log")" -le "$trips" ]; do
	[ $i -lt 58 ] || fail "the circuit did not open: $(grep remote "$T/h1.log")"
	t0=$(date +%s%N)
	compile_ok $i
	ms=$((($(date +%s%N) - t0) / 1000000))
	[ $ms -lt $((REMOTE_TIMEOUT_MS + 1500)) ] || fail "k$i took $ms ms with Redis stopped"
	i=$((i + 1))
	sleep 0.2
done
[ "$(hstat 1 'd["cache"]["remote"]["errors"]')" -ge $((errors + 3)) ] || fail "timeouts not counted"
grep -q "no answer within $REMOTE_TIMEOUT_MS ms" "$T/h1.log" || fail "the timeout is not in the log"
kill -CONT "$REDIS_PID"
wait_state up
compile_ok 58
wait_entry "$KEY"
echo ok
