#!/bin/sh
# Prometheus metrics: no listener unless configured; metrics.listen checked
# by nkid -n; GET /metrics passes promtool check metrics and agrees with
# Status; a real Prometheus scraping nkid every second answers a query with
# nkid's numbers; a socket systemd passes by the name "metrics" is served
# in either order beside nkid's own socket; nkid-metrics.socket verifies.
. "$(dirname "$0")/lib.sh"

command -v promtool >/dev/null || fail "promtool is missing (make deps installs prometheus)"
command -v prometheus >/dev/null || fail "prometheus is missing (make deps)"
PROM_PID=
trap 'if [ -n "$PROM_PID" ]; then kill -KILL "$PROM_PID" 2>/dev/null || true; fi; cleanup' EXIT

# free_port: a TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
	"$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# listeners PID: nkid's listening sockets, one a line ("tcp ADDR:PORT" in
# hex as /proc has it, "unix PATH").
listeners() {
	"$PY" - "$1" <<'P'
import os, sys
pid = sys.argv[1]
inodes = set()
for fd in os.listdir("/proc/%s/fd" % pid):
    try:
        link = os.readlink("/proc/%s/fd/%s" % (pid, fd))
    except OSError:
        continue
    if link.startswith("socket:["):
        inodes.add(link[8:-1])
out = []
for proto in ("tcp", "tcp6"):
    for line in open("/proc/%s/net/%s" % (pid, proto)).readlines()[1:]:
        f = line.split()
        if f[3] == "0A" and f[9] in inodes:
            out.append("tcp " + f[1])
for line in open("/proc/%s/net/unix" % pid).readlines()[1:]:
    f = line.split()
    if f[3] == "00010000" and f[6] in inodes:
        out.append("unix " + (f[7] if len(f) > 7 else "@"))
print("\n".join(sorted(out)))
P
}

# scrape URL FILE: GET URL into FILE, or fail.
scrape() {
	curl -sf --max-time 5 "$1" >"$2" || fail "GET $1 failed"
}

# value FILE SERIES: the value of one sample ("name{labels}") in FILE.
value() {
	awk -v s="$2" '$1 == s { print $2; found = 1 } END { exit !found }' "$1" ||
		fail "no sample $2 in the scrape"
}

# --- Off by default: nkid listens on its socket and nothing else.
start_nkid
[ "$(listeners "$NKID_PID")" = "unix $SOCK" ] ||
	fail "default nkid listens on more than its socket: $(listeners "$NKID_PID")"
grep -q "metrics: serving" "$LOG" && fail "default nkid serves metrics"
# nor maps libmicrohttpd (and GnuTLS with it): loaded when metrics are on
grep -E 'libmicrohttpd|libgnutls' "/proc/$NKID_PID/maps" >"$T/maps.txt" &&
	fail "nkid without metrics maps $(awk '{ print $6 }' "$T/maps.txt" | sort -u)"
stop_nkid || fail "nkid did not stop"

# --- metrics.listen is checked by nkid -n.
for bad in 'nohost' 'localhost:0' 'localhost:65536' ':http' '[::1:9464' \
	'relative/path.sock' '1.2.3.4:94x'; do
	printf '{ "metrics": { "listen": "%s" } }\n' "$bad" >"$T/bad.json"
	rc=0; "$NKID" -n -c "$T/bad.json" >"$T/bad.out" 2>&1 || rc=$?
	[ $rc -eq 1 ] || fail "metrics.listen '$bad' accepted"
	grep -qF "'metrics.listen' must be \"\" (off), HOST:PORT" "$T/bad.out" ||
		fail "metrics.listen '$bad': $(cat "$T/bad.out")"
done
for good in '127.0.0.1:9464' ':9464' '[::1]:9464' 'localhost:9464' '/run/nkid/metrics.sock'; do
	printf '{ "metrics": { "listen": "%s" } }\n' "$good" >"$T/good.json"
	"$NKID" -n -c "$T/good.json" >"$T/good.out" 2>&1 ||
		fail "metrics.listen '$good' refused: $(cat "$T/good.out")"
done

# --- Configured: GET /metrics, promtool, figures that agree with Status.
trace_va 128,512
ones_npy "$T/x.npy" 128,512
PORT=$(free_port)
URL=http://127.0.0.1:$PORT/metrics
printf '{ "metrics": { "listen": "127.0.0.1:%s" } }\n' "$PORT" >"$T/m.json"
start_nkid -c "$T/m.json"
grep -q "metrics: serving GET /metrics on '127.0.0.1:$PORT'" "$LOG" || fail "no metrics log line"
grep -q libmicrohttpd "/proc/$NKID_PID/maps" || fail "serving metrics without libmicrohttpd mapped?"
"$NKICTL" ping -n 25 >/dev/null || fail "ping failed"
"$NKICTL" run "$T/va.nkir" -i x="$T/x.npy" -i y="$T/x.npy" -o "$T/o" >/dev/null ||
	fail "run failed"
"$NKICTL" lock -- true || fail "lock failed"
"$NKICTL" --json status >"$T/st.json" || fail "status failed"
scrape "$URL" "$T/m1.txt"
promtool check metrics <"$T/m1.txt" >"$T/promtool.out" 2>&1 ||
	fail "promtool check metrics: $(cat "$T/promtool.out")"
[ ! -s "$T/promtool.out" ] || fail "promtool check metrics: $(cat "$T/promtool.out")"
curl -sf -o /dev/null -D "$T/h.txt" "$URL" || fail "GET /metrics failed"
grep -qi '^Content-Type: text/plain; version=0.0.4' "$T/h.txt" || fail "content type: $(cat "$T/h.txt")"

pings=$(json_get "$T/st.json" "d['counters']['methods']['Ping']['calls']")
[ "$pings" -ge 26 ] || fail "status counts $pings pings"
[ "$(value "$T/m1.txt" 'nkid_rpc_calls_total{method="Ping"}')" = "$pings" ] ||
	fail "Ping calls differ from Status ($pings)"
[ "$(value "$T/m1.txt" 'nkid_rpc_duration_seconds_count{method="Ping"}')" = "$pings" ] ||
	fail "Ping duration count differs from the calls"
[ "$(value "$T/m1.txt" 'nkid_rpc_duration_seconds_bucket{method="Ping",le="+Inf"}')" = "$pings" ] ||
	fail "Ping +Inf bucket differs from the calls"
[ "$(value "$T/m1.txt" 'nkid_rpc_calls_total{method="Run"}')" = 1 ] || fail "Run calls"
[ "$(value "$T/m1.txt" 'nkid_job_execution_seconds_count{core="0",class="interactive"}')" = 1 ] ||
	fail "the run is not in the execution histogram"
[ "$(value "$T/m1.txt" 'nkid_job_queue_wait_seconds_count{core="0",class="interactive"}')" = 1 ] ||
	fail "the run is not in the queue-wait histogram"
for k in compiles misses hits entries bytes corrupt evictions coalesced; do
	case $k in
	entries|bytes) m=nkid_cache_$k ;;
	*) m=nkid_cache_${k}_total ;;
	esac
	[ "$(value "$T/m1.txt" "$m")" = "$(json_get "$T/st.json" "d['cache']['$k']")" ] ||
		fail "$m differs from Status"
done
[ "$(value "$T/m1.txt" nkid_cache_compiles_total)" = 1 ] || fail "compiles != 1"
[ "$(value "$T/m1.txt" nkid_leases_granted_total)" = 1 ] || fail "leases granted != 1"
[ "$(value "$T/m1.txt" 'nkid_leases{state="held"}')" = 0 ] || fail "a lease still held"
[ "$(value "$T/m1.txt" nkid_jobs_completed_total)" = 2 ] || fail "completed != 2 (run + lease)"
[ "$(value "$T/m1.txt" nkid_connections_refused_total)" = 0 ] || fail "refused != 0"
[ "$(value "$T/m1.txt" 'nkid_build_info{version="'"$(json_get "$T/st.json" "d['version']")"'"}')" = 1 ] ||
	fail "build info"
busy=$(value "$T/m1.txt" 'nkid_core_busy_seconds_total{core="0"}')
"$PY" -c "import sys; sys.exit(0 if float('$busy') > 0 else 1)" || fail "core busy $busy"
# No per-pid labels, nothing unbounded: every label is one of these.
grep -v '^#' "$T/m1.txt" | grep -o '[a-z_]*="' | sort -u | tr -d '="' | tr '\n' ' ' >"$T/labels"
[ "$(cat "$T/labels")" = "backend class core le method state version " ] ||
	fail "unexpected labels: $(cat "$T/labels")"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/")
[ "$code" = 404 ] || fail "GET / answered $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$URL")
[ "$code" = 405 ] || fail "POST /metrics answered $code"

# --- A real Prometheus scrapes nkid every second; its API has our numbers.
PPORT=$(free_port)
cat >"$T/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: nkid
    static_configs:
      - targets: ['127.0.0.1:$PORT']
EOF
promtool check config "$T/prometheus.yml" >/dev/null 2>&1 || fail "prometheus.yml"
prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/prom" \
	--web.listen-address="127.0.0.1:$PPORT" --log.level=warn >"$T/prom.log" 2>&1 &
PROM_PID=$!
"$NKICTL" ping -n 10 >/dev/null || fail "ping failed"
"$NKICTL" --json status >"$T/st.json" || fail "status failed"
pings=$(json_get "$T/st.json" "d['counters']['methods']['Ping']['calls']")
API="http://127.0.0.1:$PPORT/api/v1/query"
# query EXPR: the first value of the instant query EXPR, or "" if none.
query() {
	curl -sf --max-time 5 -G "$API" --data-urlencode "query=$1" >"$T/q.json" 2>/dev/null || { echo; return 0; }
	"$PY" -c 'import json, sys
r = json.load(open(sys.argv[1]))["data"]["result"]
print(r[0]["value"][1] if r else "")' "$T/q.json"
}
i=0
while [ "$(query 'nkid_rpc_calls_total{job="nkid",method="Ping"}')" != "$pings" ]; do
	i=$((i + 1))
	[ $i -lt 300 ] || fail "Prometheus never saw $pings pings: $(cat "$T/q.json" 2>/dev/null) $(tail -n 5 "$T/prom.log")"
	kill -0 "$PROM_PID" 2>/dev/null || fail "prometheus exited: $(tail -n 5 "$T/prom.log")"
	sleep 0.1
done
[ "$(query 'up{job="nkid"}')" = 1 ] || fail "up{job=nkid} is not 1"
[ "$(query 'nkid_cache_compiles_total{job="nkid"}')" = 1 ] || fail "Prometheus: compiles != 1"
p50=$(query 'histogram_quantile(0.5, nkid_rpc_duration_seconds_bucket{job="nkid",method="Ping"})')
"$PY" -c "import sys; sys.exit(0 if 0 < float('$p50') <= 300 else 1)" ||
	fail "Prometheus: median Ping duration '$p50'"
kill -TERM "$PROM_PID"; wait "$PROM_PID" || true; PROM_PID=
stop_nkid || fail "nkid did not stop"

# --- The port is taken: nkid does not start, and says why.
printf '{ "metrics": { "listen": "127.0.0.1:%s" } }\n' "$PPORT" >"$T/busy.json"
"$PY" -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1); time.sleep(10)' "$PPORT" &
HOLDER=$!
sleep 0.3
rc=0; "$NKID" -c "$T/busy.json" -s "$SOCK" --state-dir "$T/state" >"$T/busy.out" 2>&1 || rc=$?
kill $HOLDER 2>/dev/null || true
[ $rc -eq 1 ] || fail "nkid started on a taken metrics port (rc $rc)"
grep -q "cannot listen on metrics.listen '127.0.0.1:$PPORT': Address already in use" "$T/busy.out" ||
	fail "taken port: $(cat "$T/busy.out")"
[ ! -S "$SOCK" ] || fail "nkid left its socket behind"

# --- systemd passes a second socket named "metrics", first or second.
for order in nkid-first metrics-first; do
	PORT=$(free_port)
	if [ $order = nkid-first ]; then
		set -- -l "$SOCK" -l "127.0.0.1:$PORT" --fdname=nkid.socket:metrics
	else
		set -- -l "127.0.0.1:$PORT" -l "$SOCK" --fdname=metrics:nkid.socket
	fi
	systemd-socket-activate "$@" "$NKID" -s "$SOCK" --state-dir "$T/state" >>"$LOG" 2>&1 &
	NKID_PID=$!
	i=0; while [ ! -S "$SOCK" ] && [ $i -lt 50 ]; do i=$((i + 1)); sleep 0.1; done
	"$NKICTL" --timeout 10 ping -n 3 >/dev/null || fail "$order: nkid's socket does not serve"
	scrape "http://127.0.0.1:$PORT/metrics" "$T/sd.txt"
	[ "$(value "$T/sd.txt" 'nkid_rpc_calls_total{method="Ping"}')" = 3 ] ||
		fail "$order: the passed metrics socket does not serve nkid's numbers"
	stop_nkid || fail "$order: nkid did not stop"
	rm -f "$SOCK"
done

# --- nkid-metrics.socket is installed beside nkid.service and verifies.
D=$T/root
make -s -C "$TOP" install DESTDIR="$D" PREFIX=/usr/local >"$T/install.log" 2>&1 ||
	{ cat "$T/install.log"; fail "make install failed"; }
U=$D/lib/systemd/system
[ -f "$U/nkid-metrics.socket" ] || fail "make install did not install nkid-metrics.socket"
grep -qx 'FileDescriptorName=metrics' "$U/nkid-metrics.socket" || fail "no FileDescriptorName=metrics"
grep -qx 'Service=nkid.service' "$U/nkid-metrics.socket" || fail "no Service=nkid.service"
mkdir -p "$D/usr/lib/systemd/system" "$D/bin"
cp /lib/systemd/system/*.target "$D/usr/lib/systemd/system/"
cp /bin/kill "$D/bin/kill"
out=$(MANPATH="$D/usr/local/share/man" systemd-analyze verify --root="$D" \
	"$U/nkid.service" "$U/nkid.socket" "$U/nkid-metrics.socket" 2>&1) ||
	fail "systemd-analyze verify failed: $out"
[ -z "$out" ] || fail "systemd-analyze verify printed: $out"
make -s -C "$TOP" uninstall DESTDIR="$D" PREFIX=/usr/local >/dev/null 2>&1
[ ! -e "$U/nkid-metrics.socket" ] || fail "uninstall left nkid-metrics.socket"
echo ok
