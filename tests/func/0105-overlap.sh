#!/bin/sh
# Six concurrent Python processes running kernels on two cores: the job
# history shows no two jobs overlapping on a core, every job done, both
# cores used (a job that names no core takes the least loaded), and the
# jobs section of status adds up. Then one client's serial jobs alternate.
. "$(dirname "$0")/lib.sh"

trace_va 128,512
echo '{ "cpu": { "cores": 2 } }' >"$T/c.json"
start_nkid -c "$T/c.json"

cat >"$T/client.py" <<'PYEOF'
import sys
import numpy as np
from nkid import client, trace
from nkid._proto import nkid_pb2 as pb
c = client.Client(sys.argv[1])
ref, _ = trace.load(sys.argv[2])
x = np.ones((128, 512), np.float32)
req = pb.RunRequest(ref=ref, inputs=[client.to_wire("x", x), client.to_wire("y", x)], core=-1)
for _ in range(8):
    r = c.call("Run", req, timeout=60)
    assert np.array_equal(client.from_wire(r.outputs[0]), x + x)
PYEOF
pids=
for i in 1 2 3 4 5 6; do
	"$PY" "$T/client.py" "$SOCK" "$T/va.nkir" >"$T/c$i.out" 2>&1 &
	pids="$pids $!"
done
for p in $pids; do wait $p || fail "a client failed: $(cat "$T"/c*.out)"; done

"$NKICTL" --json jobs --all >"$T/all.json"
"$NKICTL" --json status >"$T/st.json"
"$PY" - "$T/all.json" "$T/st.json" <<'PYEOF' || fail "history: $(cat "$T/all.json")"
import json, sys
jobs = [j for j in json.load(open(sys.argv[1]))["jobs"] if j["kind"] == "run"]
st = json.load(open(sys.argv[2]))
assert len(jobs) == 48, len(jobs)
assert all(j["state"] == "done" and j["status"] == "OK" for j in jobs)
assert len({j["pid"] for j in jobs}) == 6
for core in (0, 1):
    on = sorted((j["started_at"], j["finished_at"]) for j in jobs if j["core"] == core)
    assert on, "core %d never used" % core
    for (s0, f0), (s1, f1) in zip(on, on[1:]):
        assert s1 >= f0, ("overlap on core %d" % core, (s0, f0), (s1, f1))
assert st["jobs"]["completed"] == 48 and st["jobs"]["queued"] == 0, st["jobs"]
assert len(st["jobs"]["core_busy_s"]) == 2
assert all(c["state"] == "idle" for c in st["cores"]), st["cores"]
PYEOF

# One client, one job at a time: every submission finds both cores idle,
# and equally loaded cores take turns (core 0 used to take them all).
"$PY" "$T/client.py" "$SOCK" "$T/va.nkir" || fail "the serial client failed"
"$NKICTL" --json jobs --all >"$T/all.json"
"$PY" - "$T/all.json" <<'PYEOF' || fail "serial jobs: $(cat "$T/all.json")"
import json, sys
jobs = [j for j in json.load(open(sys.argv[1]))["jobs"] if j["kind"] == "run"]
last = jobs[-8:]
assert len(jobs) == 56, len(jobs)
assert sorted(j["core"] for j in last) == [0] * 4 + [1] * 4, [j["core"] for j in last]
PYEOF

stop_nkid || fail "nkid exited non-zero"
echo ok
