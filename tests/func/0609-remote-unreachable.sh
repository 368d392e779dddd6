#!/bin/sh
# A remote tier nkid cannot reach (issue 31, item 1): in a network
# namespace of its own (what PrivateNetwork=yes gives nkid.service), nkid -n
# warns that remote.url cannot be reached and names the drop-in that opens
# the network; the start log says the same; nkictl status keeps the real
# error (the errno text) and when it happened, for an unreachable network
# and for a connect that never completes (a route into loopback that drops
# the SYN). Outside the namespace, a refused port is warned about without
# the unit's hint.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/remote-lib.sh"

unshare -rn true 2>/dev/null || { echo "SKIP: no unprivileged network namespace"; exit 77; }
command -v ip >/dev/null || { echo "SKIP: no ip(8)"; exit 77; }

# config URL: a config with the remote tier at URL.
config() {
	[ -f "$T/fleet.key" ] || fleet_key "$T/fleet.key"
	cat >"$T/c.json" <<J
{ "remote": { "url": "$1", "mode": "read-write",
  "hmac_key_file": "$T/fleet.key", "timeout_ms": 300 } }
J
}

# netns CMD: CMD in a new network namespace with loopback up and
# 10.77.0.0/16 routed into loopback (where nothing answers a SYN).
netns() {
	exec unshare -rn sh -c 'ip link set lo up && ip route add 10.77.0.0/16 dev lo && eval "$1"' sh "$1"
}

config "redis://192.0.2.1:6379"
(netns "'$NKID' -n -c '$T/c.json'") >"$T/n.out" 2>&1 || fail "nkid -n failed: $(cat "$T/n.out")"
grep -q "warning: remote tier 'redis://192.0.2.1:6379' cannot be reached from here: cannot connect to '192.0.2.1:6379': Network is unreachable" "$T/n.out" ||
	fail "nkid -n does not warn of an unreachable network: $(cat "$T/n.out")"
grep -q "nkid-remote.conf" "$T/n.out" || fail "nkid -n does not name the drop-in: $(cat "$T/n.out")"
grep -q "config '$T/c.json' is valid" "$T/n.out" || fail "the config is still valid: $(cat "$T/n.out")"

# A refused port outside the namespace: warned, without the unit's hint.
config "redis://127.0.0.1:1"
"$NKID" -n -c "$T/c.json" >"$T/r.out" 2>&1 || fail "nkid -n failed: $(cat "$T/r.out")"
grep -q "cannot connect to '127.0.0.1:1': Connection refused$" "$T/r.out" ||
	fail "nkid -n does not warn of a refused port: $(cat "$T/r.out")"

# A Redis that answers: no warning.
start_redis
config "unix://$RSOCK"
"$NKID" -n -c "$T/c.json" >"$T/ok.out" 2>&1 || fail "nkid -n failed: $(cat "$T/ok.out")"
! grep -q warning "$T/ok.out" || fail "nkid -n warns of a Redis that answers: $(cat "$T/ok.out")"
stop_redis

# status_of URL: start nkid on URL in the namespace, its status in
# $T/st.txt and $T/st.json once an error is recorded.
status_of() {
	config "$1"
	: >"$LOG"
	(netns "exec '$NKID' -s '$SOCK' --state-dir '$T/state' -c '$T/c.json'") >>"$LOG" 2>&1 &
	NKID_PID=$!
	wait_ready
	# The subshell execs unshare, unshare sh, sh nkid: NKID_PID is nkid.
	i=0
	while ! "$NKICTL" --json status >"$T/st.json" 2>&1 ||
	    [ "$(json_get "$T/st.json" 'd["cache"]["remote"]["errors"]')" -lt 2 ]; do
		i=$((i + 1)); [ $i -lt 50 ] || fail "no remote error recorded: $(cat "$T/st.json")"
		sleep 0.1
	done
	"$NKICTL" status >"$T/st.txt" || fail "status failed"
	stop_nkid || true
}

status_of "redis://192.0.2.1:6379"
grep -q "warn: remote tier 'redis://192.0.2.1:6379': cannot connect (Network is unreachable).*nkid-remote.conf" "$LOG" ||
	fail "the start log does not name the drop-in"
grep -q "last error: cannot connect: Network is unreachable (at [0-9][0-9]:[0-9][0-9]:[0-9][0-9], [0-9]* s ago)" "$T/st.txt" ||
	fail "status does not show the errno and its time: $(cat "$T/st.txt")"
ms=$(json_get "$T/st.json" 'd["cache"]["remote"]["last_error_unix_ms"]')
now=$(date +%s)
[ $((ms / 1000)) -le "$now" ] && [ $((ms / 1000)) -ge $((now - 30)) ] ||
	fail "last_error_unix_ms $ms is not a recent time (now $now)"

status_of "redis://10.77.0.1:6379"
grep -q "last error: cannot connect within 300 ms (remote.timeout_ms): Connection timed out (at " "$T/st.txt" ||
	fail "status does not say the connect timed out: $(cat "$T/st.txt")"
echo "ok"
