#!/bin/sh
# The fleet lock, with the neuron backend's test doubles (a compiler made
# slow on host A): while A compiles, B and C wait for its result; C's
# wait ends at its compile timeout and C compiles itself; A is killed
# with SIGKILL mid-compile, its lock expires and B takes over within
# remote.lock_ms.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/remote-lib.sh"

FAKELIB=$(cd "$(dirname "$NKID")/.." && pwd)/tests/libfake_nrt.so
[ -f "$FAKELIB" ] || fail "no $FAKELIB: build it with make unit"
mkdir -p "$T/dev"
: >"$T/dev/neuron0"
unset NEURON_RT_VISIBLE_CORES || true

# A compiler that takes 60 s (a test double wrapping the test double).
cat >"$T/slow-cc" <<S
#!/bin/sh
if [ "\$1" = compile ]; then
	echo \$\$ >>"$T/slow.pids"
	exec sleep 60
fi
exec "$TOP/tests/neuron/fake-neuronx-cc" "\$@"
S
chmod +x "$T/slow-cc"
# shellcheck disable=SC2064
trap 'for p in $(cat "$T/slow.pids" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done; remote_cleanup' EXIT

# neuron_fleet FILE COMPILER COMPILE_TIMEOUT_MS
neuron_fleet() {
	REMOTE_LOCK_MS=1000 fleet_config "$1"
	"$PY" - "$1" "$2" "$3" "$FAKELIB" "$T/dev/neuron*" "$T/no-neuron-ls" <<'P'
import json, sys
f, cc, timeout, lib, glob, ls = sys.argv[1:]
c = json.load(open(f))
c["backend"] = "neuron"
c["cache"] = {"compile_workers": 2}
c["neuron"] = {"compiler": cc, "runtime_library": lib, "device_glob": glob,
               "ls": ls, "compile_timeout_ms": int(timeout)}
json.dump(c, open(f, "w"))
P
}

# kernel_file OUT NAME: a saved kernel of format "penguin".
kernel_file() {
	"$PY" - "$1" "$2" <<'P'
import sys
from nkid._proto import nkid_pb2
ref = nkid_pb2.KernelRef()
ref.kernel.name = sys.argv[2]
ref.kernel.format = "penguin"
ref.kernel.ir = ("# fake-neff: input a float32 4 2\n# fake-neff: output out float32 4 2\n# %s\n"
                 % sys.argv[2]).encode()
open(sys.argv[1], "wb").write(b"NKIDKRF1" + ref.SerializeToString())
P
}

start_redis
neuron_fleet "$T/a.json" "$T/slow-cc" 120000
neuron_fleet "$T/b.json" "$TOP/tests/neuron/fake-neuronx-cc" 120000
neuron_fleet "$T/c.json" "$TOP/tests/neuron/fake-neuronx-cc" 1000
kernel_file "$T/k1.nkk" k1
kernel_file "$T/k2.nkk" k2
start_host 1 "$T/a.json"
A_PID=$HOST_PID
start_host 2 "$T/b.json"
start_host 3 "$T/c.json"

# wait_for CMD...: until CMD succeeds, at most 10 s.
wait_for() {
	i=0
	while ! eval "$*"; do
		i=$((i + 1)); [ $i -lt 100 ] || fail "timed out waiting for: $*"; sleep 0.1
	done
}

# A takes both locks and compiles (slowly); its clients die with it, they
# do not wait for another A.
( export NKID_RECONNECT_TIMEOUT=0; hctl 1 compile "$T/k1.nkk" >/dev/null 2>&1 ) &
( export NKID_RECONNECT_TIMEOUT=0; hctl 1 compile "$T/k2.nkk" >/dev/null 2>&1 ) &
wait_for '[ "$(rcli keys "nkid:lock:*" | wc -w)" = 2 ] && [ "$(wc -l <"$T/slow.pids" 2>/dev/null)" = 2 ]'
[ "$(hstat 1 'd["cache"]["remote"]["locks_taken"]')" = 2 ] || fail "A holds no locks: $(cat "$T/st.json")"

# B waits for k1, C for k2.
hctl 2 --json compile "$T/k1.nkk" >"$T/b.out" 2>&1 &
B=$!
c0=$(date +%s%N)
hctl 3 --json compile "$T/k2.nkk" >"$T/c.out" 2>&1 &
C=$!
wait_for '[ "$(hstat 2 "d[\"cache\"][\"remote\"][\"locks_waited\"]")" = 1 ]'

# C's wait ends at its compile timeout (1 s): it compiles k2 itself.
wait "$C" || fail "C failed: $(cat "$T/c.out")"
ms=$((($(date +%s%N) - c0) / 1000000))
[ $ms -ge 900 ] && [ $ms -lt 4000 ] || fail "C waited $ms ms (compile timeout 1000 ms)"
[ "$(hstat 3 'd["cache"]["compiles"]')" = 1 ] || fail "C did not compile"
[ "$(hstat 3 'd["cache"]["remote"]["locks_waited"]')" = 1 ] || fail "C did not wait"
grep -q "waited 1000 ms for another host's compile" "$T/h3.log" || fail "C's wait not logged"

# A dies mid-compile; B takes over once A's lock expires (lock_ms 1000).
kill -0 "$B" 2>/dev/null || fail "B ended while A held the lock: $(cat "$T/b.out")"
t0=$(date +%s%N)
kill -KILL "$A_PID"
for p in $(cat "$T/slow.pids"); do kill -KILL "$p" 2>/dev/null || true; done
wait "$B" || fail "B failed: $(cat "$T/b.out")"
ms=$((($(date +%s%N) - t0) / 1000000))
[ $ms -lt 2500 ] || fail "B took over $ms ms after A died (lock_ms 1000)"
[ "$(hstat 2 'd["cache"]["compiles"]')" = 1 ] || fail "B did not compile: $(cat "$T/st.json")"
[ "$(hstat 2 'd["cache"]["remote"]["locks_taken"]')" = 1 ] || fail "B did not take the lock over"
key=$(json_get "$T/b.out" 'd["neff_key"]')
wait_for '[ "$(rcli exists "nkid:neff:$key")" = 1 ]'
wait_for '[ "$(rcli keys "nkid:lock:*" | wc -w)" = 0 ]'
echo ok
