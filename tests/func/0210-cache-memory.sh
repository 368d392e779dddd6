#!/bin/sh
# Bounded memory: 20,000 distinct small kernels compiled (and loaded)
# through one nkid keep its RSS under cache.max_memory_bytes plus a
# documented constant (docs/config.md), and `cache stat` counts them all.
. "$(dirname "$0")/lib.sh"

N=${NKID_TEST_KERNELS:-20000}
BUDGET_MIB=16
# nkid without kernels (~25 MiB: gRPC, libcrypto, SQLite's page cache)
# plus allocator slack: docs/config.md, cache.max_memory_bytes.
CONST_MIB=64
echo "{ \"cache\": { \"max_memory_bytes\": \"${BUDGET_MIB}MiB\" } }" >"$T/mem.json"
start_nkid -c "$T/mem.json"

"$PY" - "$SOCK" "$N" "$NKID_PID" "$BUDGET_MIB" "$CONST_MIB" <<'PYEOF' || fail "memory not bounded"
import os, sys, time
import grpc
from nkid._proto import nkid_pb2
sys.path.insert(0, os.path.join(os.environ["TOP"], "tests", "func"))
from scale_ir import scaled_irs

sock, n, pid, budget, const = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
scaled = scaled_irs()

ch = grpc.insecure_channel("unix:" + sock, options=[("grpc.max_send_message_length", 1 << 30)])
warm = ch.unary_unary("/nkid.v1.Nkid/Warmup", request_serializer=nkid_pb2.WarmupRequest.SerializeToString,
                      response_deserializer=nkid_pb2.WarmupReply.FromString)

def rss_mib():
    for line in open("/proc/%s/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0

t0 = time.monotonic()
peak = 0.0
i = 0
while i < n:
    req = nkid_pb2.WarmupRequest()
    for j in range(i, min(n, i + 2000)):
        it = req.items.add()
        it.ref.kernel.name = "scale"
        it.ref.kernel.format = "nkir/1"
        it.ref.kernel.ir = scaled(j)
    rep = warm(req, timeout=600)
    assert rep.failed == 0, [r.message for r in rep.results if r.state == "failed"][:3]
    assert rep.compiled == len(req.items), (rep.compiled, rep.cached)
    i += len(req.items)
    peak = max(peak, rss_mib())
dt = time.monotonic() - t0
print("%d kernels in %.1f s; peak RSS %.1f MiB (budget %d MiB + %d MiB)" % (n, dt, peak, budget, const))
assert peak < budget + const, "RSS %.1f MiB over %d + %d MiB" % (peak, budget, const)
PYEOF

"$NKICTL" --json cache stat >"$T/cs.json" || fail "cache stat failed"
[ "$(json_get "$T/cs.json" "d['entries']")" = "$N" ] || fail "cache stat entries: $(cat "$T/cs.json")"
"$NKICTL" --json status >"$T/st.json" || fail "status failed"
stop_nkid || fail "nkid exited non-zero"
echo ok
