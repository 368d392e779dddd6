#!/bin/sh
# The neuron backend end to end through the test doubles of neuronx-cc,
# neuron-profile and libnrt.so.1 (tests/neuron/): selection, Status,
# compile and run through nkictl, a failing compile, a busy core, and
# refusing to start without the runtime or the devices.
. "$(dirname "$0")/lib.sh"

FAKELIB=$(cd "$(dirname "$NKID")/.." && pwd)/tests/libfake_nrt.so
[ -f "$FAKELIB" ] || fail "no $FAKELIB: build it with make unit"
mkdir -p "$T/dev" "$T/state"
: >"$T/dev/neuron0"
: >"$T/dev/neuron1"

# neuron_config FILE RUNTIME_LIBRARY DEVICE_GLOB
neuron_config() {
	cat >"$1" <<J
{
	"backend": "neuron",
	"log_level": "debug",
	"neuron": {
		"compiler": "$TOP/tests/neuron/fake-neuronx-cc",
		"profiler": "$TOP/tests/neuron/fake-neuron-profile",
		"runtime_library": "$2",
		"device_glob": "$3",
		"compile_timeout_ms": 20000
	}
}
J
}

# kernel_file OUT NAME SOURCE: a saved kernel of format "penguin".
kernel_file() {
	"$PY" - "$1" "$2" "$3" <<'P'
import sys
from nkid._proto import nkid_pb2
ref = nkid_pb2.KernelRef()
ref.kernel.name = sys.argv[2]
ref.kernel.format = "penguin"
ref.kernel.ir = sys.argv[3].encode()
open(sys.argv[1], "wb").write(b"NKIDKRF1" + ref.SerializeToString())
P
}

unset NEURON_RT_VISIBLE_CORES || true
export FAKE_NEURONX_CC_ARGV="$T/cc-argv" FAKE_NRT_BUSY_FILE="$T/busy"

# Without the runtime library nkid refuses to start and names it.
neuron_config "$T/nolib.json" /nonexistent/libnrt.so.1 "$T/dev/neuron*"
rc=0; "$NKID" -c "$T/nolib.json" -s "$SOCK" --state-dir "$T/state" >"$T/out" 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "nkid started without the Neuron runtime"
grep -q "/nonexistent/libnrt.so.1" "$T/out" || fail "missing runtime not named: $(cat "$T/out")"
[ ! -S "$SOCK" ] || fail "a socket was left behind"

# Without devices, the same, naming the devices.
neuron_config "$T/nodev.json" "$FAKELIB" "$T/none/neuron*"
rc=0; "$NKID" -c "$T/nodev.json" -s "$SOCK" --state-dir "$T/state" >"$T/out" 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "nkid started without Neuron devices"
grep -q "no Neuron devices match" "$T/out" || fail "missing devices not named: $(cat "$T/out")"

# With the doubles it serves; Status shows the backend, versions, cores.
neuron_config "$T/nkid.json" "$FAKELIB" "$T/dev/neuron*"
start_nkid -c "$T/nkid.json"
"$NKICTL" --json status >"$T/status.json" || fail "status failed"
[ "$(json_get "$T/status.json" 'd["backend"]')" = neuron ] || fail "backend is not neuron: $(cat "$T/status.json")"
[ "$(json_get "$T/status.json" 'd["backend_versions"]["neuronx-cc"]')" = "2.24.5133.0+58f8de22" ] ||
	fail "compiler version missing: $(cat "$T/status.json")"
json_get "$T/status.json" 'd["backend_versions"]["runtime"]' | grep -q "^2.99.7.0" ||
	fail "runtime version missing: $(cat "$T/status.json")"
[ "$(json_get "$T/status.json" 'len(d["cores"])')" = 4 ] || fail "expected 4 cores (2 devices x 2)"

# Compile through neuronx-cc with NKI's exact command line.
kernel_file "$T/copy.nkk" copy '# fake-neff: input a float32 4 2
# fake-neff: input b int32 3
# fake-neff: output out float32 4 2
# fake-neff: output out2 int32 3
'
"$NKICTL" --json compile "$T/copy.nkk" >"$T/compile.json" || fail "compile failed: $(cat "$T/compile.json")"
key=$(json_get "$T/compile.json" 'd["neff_key"]')
[ ${#key} -eq 64 ] || fail "no neff key: $(cat "$T/compile.json")"
printf '%s\n' "$TOP/tests/neuron/fake-neuronx-cc" compile --framework XLA penguin.py \
	--internal-tensorizer-opt-level=nki --pipeline compile SaveTemps --target trn1 >"$T/want-argv"
cmp -s "$T/want-argv" "$T/cc-argv" || fail "compiler argv: $(cat "$T/cc-argv")"
# The private compile directory is gone.
cwd=$(cat "$T/cc-argv.cwd")
case "$cwd" in "$T/state/neuron/compile."*) ;; *) fail "compiled in '$cwd'" ;; esac
[ ! -e "$cwd" ] || fail "compile directory '$cwd' left behind"
# Cached: the same kernel does not run the compiler again.
rm -f "$T/cc-argv"
"$NKICTL" --json compile "$T/copy.nkk" >"$T/compile2.json" || fail "second compile failed"
[ "$(json_get "$T/compile2.json" 'd["cache_hit"]')" = True ] || fail "second compile missed the cache"
[ ! -e "$T/cc-argv" ] || fail "the compiler ran for a cached kernel"

# Run on a core through libnrt: the double copies input k to output k.
"$PY" -c "
import numpy as np
np.save('$T/a.npy', np.arange(8, dtype=np.float32).reshape(4, 2) * 1.5)
np.save('$T/b.npy', np.array([7, -8, 9], dtype=np.int32))
"
mkdir -p "$T/outs"
"$NKICTL" run "$T/copy.nkk" -i "$T/a.npy" -i "$T/b.npy" -o "$T/outs" -c 2 >"$T/run.txt" 2>&1 ||
	fail "run failed: $(cat "$T/run.txt")"
"$PY" -c "
import numpy as np, glob, sys
outs = sorted(glob.glob('$T/outs/*.npy'))
assert len(outs) == 2, outs
o = {p.rsplit('/', 1)[1]: np.load(p) for p in outs}
assert np.array_equal(o['out.npy'], np.load('$T/a.npy')), o
assert np.array_equal(o['out2.npy'], np.load('$T/b.npy')), o
" || fail "outputs do not match the inputs: $(ls "$T/outs")"

# A kernel the compiler rejects: its log comes back, nothing is cached.
kernel_file "$T/bad.nkk" bad 'FAKE_CC_FAIL'
rc=0; "$NKICTL" compile "$T/bad.nkk" >"$T/bad.txt" 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "a failing compile succeeded"
grep -q "NCC_FAKE002" "$T/bad.txt" || fail "compiler log not returned: $(cat "$T/bad.txt")"
grep -q "INVALID_ARGUMENT\|invalid" "$T/bad.txt" || fail "failing compile status: $(cat "$T/bad.txt")"

# A compiler that exits 0 but writes garbage: nothing is cached, the run
# fails with a clear status, and the next attempt compiles again.
kernel_file "$T/junk.nkk" junk 'FAKE_CC_GARBAGE'
rc=0; "$NKICTL" run "$T/junk.nkk" -o "$T/outs" >"$T/junk.txt" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "a garbage NEFF ran (exit $rc): $(cat "$T/junk.txt")"
grep -q "FAILED_PRECONDITION\|INVALID_ARGUMENT" "$T/junk.txt" ||
	fail "garbage NEFF status: $(cat "$T/junk.txt")"
rm -f "$T/cc-argv"
"$NKICTL" compile "$T/junk.nkk" >/dev/null 2>&1 || true
[ -e "$T/cc-argv" ] || fail "a garbage NEFF was cached"

# Another process takes NeuronCore 1 (nkid core 1): the run names it.
echo 1 >"$T/busy"
rc=0; "$NKICTL" run "$T/copy.nkk" -i "$T/a.npy" -i "$T/b.npy" -o "$T/outs" -c 1 >"$T/busy.txt" 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "run on a busy core succeeded"
grep -q "NeuronCore 1 (nkid core 1) is not available" "$T/busy.txt" || fail "busy core not named: $(cat "$T/busy.txt")"
grep -q "UNAVAILABLE" "$T/busy.txt" || fail "busy core is not UNAVAILABLE: $(cat "$T/busy.txt")"
: >"$T/busy"
"$NKICTL" run "$T/copy.nkk" -i "$T/a.npy" -i "$T/b.npy" -o "$T/outs" -c 1 >/dev/null 2>&1 ||
	fail "core 1 did not recover once released"

stop_nkid || fail "nkid exited non-zero"
# Nothing left in the work directory.
[ -z "$(ls "$T/state/neuron")" ] || fail "left in the work directory: $(ls "$T/state/neuron")"

# nkid given NeuronCores 2-3: a lease of nkid core 0 hands out NeuronCore 2.
NEURON_RT_VISIBLE_CORES=2-3 start_nkid -c "$T/nkid.json"
[ "$("$NKICTL" --json status | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["cores"]))')" = 2 ] ||
	fail "NEURON_RT_VISIBLE_CORES=2-3 did not give 2 cores"
"$NKICTL" lock -c 0 -- sh -c 'echo "cores=$NEURON_RT_VISIBLE_CORES"' >"$T/lease.txt" 2>&1 ||
	fail "lease failed: $(cat "$T/lease.txt")"
grep -q "cores=2" "$T/lease.txt" || fail "lease of core 0 did not name NeuronCore 2: $(cat "$T/lease.txt")"
stop_nkid || fail "nkid exited non-zero"
echo ok
