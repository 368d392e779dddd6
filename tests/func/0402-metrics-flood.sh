#!/bin/sh
# GET /metrics at its connection limit: clients that hold every connection
# (metrics.max_connections) delay a scrape, and once they close, the next
# scrape is answered at once; before, 16 connections wedged the endpoint
# for good (the listening socket was never polled again).
. "$(dirname "$0")/lib.sh"

command -v curl >/dev/null || fail "no curl"
PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL=http://127.0.0.1:$PORT/metrics

# flood N: N connections that send nothing, held 0.5 s while a scrape with
# a 1 s limit runs (its status in $during), then closed.
flood() {
	"$PY" - "$PORT" "$1" <<'P' >"$T/flood.out" || fail "flood failed"
import socket, subprocess, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
time.sleep(0.2)
r = subprocess.run(["curl", "-s", "-m", "1", "-o", "/dev/null", "-w", "%{http_code}",
                    "http://127.0.0.1:%d/metrics" % port], capture_output=True, text=True)
print(r.stdout)
for s in held:
    s.close()
P
	during=$(cat "$T/flood.out")
}

# scrape_soon: GET /metrics answers 200 within 2 s.
scrape_soon() {
	code=$(curl -s -m 2 -o /dev/null -w '%{http_code}' "$URL") || true
	[ "$code" = 200 ] || fail "$1: GET /metrics answered '$code' after the flood"
}

cat >"$T/c.json" <<J
{"metrics": {"listen": "127.0.0.1:$PORT"}}
J
start_nkid -c "$T/c.json"
scrape_soon "before"
flood 16
scrape_soon "16 connections (the default limit)"
flood 40
scrape_soon "40 connections"
stop_nkid || fail "nkid exited non-zero"

# A limit of 4: the 5th waits while 4 are held, and is served after.
cat >"$T/c4.json" <<J
{"metrics": {"listen": "127.0.0.1:$PORT", "max_connections": 4}}
J
start_nkid -c "$T/c4.json"
flood 4
[ "$during" != 200 ] || fail "a 5th connection was served at max_connections 4"
scrape_soon "4 connections at max_connections 4"
"$NKID" -n -c "$T/c4.json" >/dev/null || fail "nkid -n refused metrics.max_connections"
echo '{"metrics": {"max_connections": 0}}' >"$T/bad.json"
! "$NKID" -n -c "$T/bad.json" 2>"$T/err" || fail "max_connections 0 accepted"
grep -q "metrics.max_connections" "$T/err" || fail "no key named: $(cat "$T/err")"
echo ok
