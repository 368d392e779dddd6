#!/bin/sh
# The neuron backend end to end through the test doubles of neuronx-cc,
# neuron-profile, neuron-ls and libnrt.so.1 (tests/neuron/): selection,
# Status, compile and run through nkictl, a failing compile, a busy core,
# refusing to start without the runtime or the devices, the cores and the
# compile target from neuron-ls, and counting device files without it.
. "$(dirname "$0")/lib.sh"

FAKELIB=$(cd "$(dirname "$NKID")/.." && pwd)/tests/libfake_nrt.so
[ -f "$FAKELIB" ] || fail "no $FAKELIB: build it with make unit"
mkdir -p "$T/dev" "$T/state"
: >"$T/dev/neuron0"
: >"$T/dev/neuron1"

# neuron_config FILE RUNTIME_LIBRARY DEVICE_GLOB [NEURON_LS]
# (no NEURON_LS: one that does not exist, so the device files count)
neuron_config() {
	cat >"$1" <<J
{
	"backend": "neuron",
	"log_level": "debug",
	"neuron": {
		"compiler": "$TOP/tests/neuron/fake-neuronx-cc",
		"profiler": "$TOP/tests/neuron/fake-neuron-profile",
		"ls": "${4:-$T/no-neuron-ls}",
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
# No neuron-ls: the device files were counted, and the log says so.
[ "$(json_get "$T/status.json" 'd["backend_versions"]["cores_from"]')" = device_glob ] ||
	fail "cores not from the device files: $(cat "$T/status.json")"
grep -q "no-neuron-ls.*counting the devices that match '$T/dev/neuron\*' instead" "$LOG" ||
	fail "no log line for the fallback to the device files"
[ "$(json_get "$T/status.json" 'd["backend_versions"]["target"]')" = trn1 ] ||
	fail "default target is not trn1: $(cat "$T/status.json")"

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
unset NEURON_RT_VISIBLE_CORES || true

# With neuron-ls (the double): its 3 devices of 2 NeuronCores are the
# cores, whatever the device files; Status shows them.
FAKELS=$TOP/tests/neuron/fake-neuron-ls
neuron_config "$T/ls.json" "$FAKELIB" "$T/dev/neuron*" "$FAKELS"
export FAKE_NEURON_LS_DEVICES=3 FAKE_NEURON_LS_ARGV="$T/ls-argv"
start_nkid -c "$T/ls.json"
"$NKICTL" --json status >"$T/status.json" || fail "status failed"
[ "$(json_get "$T/status.json" 'len(d["cores"])')" = 6 ] ||
	fail "expected the 6 cores neuron-ls lists: $(cat "$T/status.json")"
[ "$(json_get "$T/status.json" 'd["backend_versions"]["cores_from"]')" = neuron-ls ] ||
	fail "cores not from neuron-ls: $(cat "$T/status.json")"
[ "$(json_get "$T/status.json" 'd["backend_versions"]["devices"]')" = 3 ] ||
	fail "devices not from neuron-ls: $(cat "$T/status.json")"
[ "$(json_get "$T/status.json" 'd["backend_versions"]["cores"]')" = 0-5 ] ||
	fail "visible cores: $(cat "$T/status.json")"
printf '%s\n' "$FAKELS" --json-output >"$T/want-ls-argv"
cmp -s "$T/want-ls-argv" "$T/ls-argv" || fail "neuron-ls argv: $(cat "$T/ls-argv")"
stop_nkid || fail "nkid exited non-zero"

# A trn2 host (logical NeuronCores): 2 devices x 4, and trn2 is the
# compile target when neither the request nor neuron.target names one.
FAKE_NEURON_LS_DEVICES=2 FAKE_NEURON_LS_NC=4 FAKE_NEURON_LS_LNC=2
export FAKE_NEURON_LS_DEVICES FAKE_NEURON_LS_NC FAKE_NEURON_LS_LNC
rm -rf "$T/state"
start_nkid -c "$T/ls.json"
"$NKICTL" --json status >"$T/status.json" || fail "status failed"
[ "$(json_get "$T/status.json" 'len(d["cores"])')" = 8 ] ||
	fail "expected 8 trn2 cores: $(cat "$T/status.json")"
[ "$(json_get "$T/status.json" 'd["backend_versions"]["target"]')" = trn2 ] ||
	fail "target is not trn2: $(cat "$T/status.json")"
rm -f "$T/cc-argv"
"$NKICTL" --json compile "$T/copy.nkk" >"$T/compile.json" || fail "compile failed: $(cat "$T/compile.json")"
grep -qx trn2 "$T/cc-argv" || fail "not compiled for trn2: $(cat "$T/cc-argv")"
stop_nkid || fail "nkid exited non-zero"
unset FAKE_NEURON_LS_NC FAKE_NEURON_LS_LNC

# neuron-ls failing (no devices, no driver: exit 1): the device files
# count, and the log says why.
FAKE_NEURON_LS_DEVICES=0
: >"$LOG"
start_nkid -c "$T/ls.json"
[ "$("$NKICTL" --json status | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["cores"]))')" = 4 ] ||
	fail "fallback to the device files did not give 4 cores"
grep -q "fake-neuron-ls --json-output' (neuron.ls) exited with status 1.*counting the devices" "$LOG" ||
	fail "no log line for a failing neuron-ls"
stop_nkid || fail "nkid exited non-zero"

# neuron-ls printing garbage: nkid refuses to start, naming it.
export FAKE_NEURON_LS_MODE=garbage
rc=0; "$NKID" -c "$T/ls.json" -s "$SOCK" --state-dir "$T/state" >"$T/out" 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "nkid started on garbage from neuron-ls"
grep -q "fake-neuron-ls --json-output' (neuron.ls) printed something that is not JSON" "$T/out" ||
	fail "garbage from neuron-ls not named: $(cat "$T/out")"
unset FAKE_NEURON_LS_MODE FAKE_NEURON_LS_DEVICES
echo ok
