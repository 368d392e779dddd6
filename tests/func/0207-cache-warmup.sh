#!/bin/sh
# Warm-up before a deployment: `nkictl warmup MANIFEST` compiles every
# kernel once (a second run finds them cached, a broken one fails), and
# `nkictl cache verify MANIFEST` is the gate: exit 0 only when every listed
# kernel is present and verifies.
. "$(dirname "$0")/lib.sh"

trace_va 256,1024
trace_mm
cat >"$T/m.json" <<JSON
{"target": "", "kernels": ["va.nkir", "mm.nkir", {"path": "mm.nkir", "options": "-O3"}]}
JSON
start_nkid
rc=0; "$NKICTL" cache verify "$T/m.json" --state-dir "$T/state" >"$T/v0" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "verify of a cold cache passed: $(cat "$T/v0")"
"$NKICTL" warmup "$T/m.json" >"$T/w1" 2>"$T/w1.err" || fail "warmup failed: $(cat "$T/w1" "$T/w1.err")"
grep -q "3 compiled, 0 already cached, 0 failed" "$T/w1" || fail "first warmup: $(cat "$T/w1")"
[ ! -s "$T/w1.err" ] || fail "warmup is not silent off a terminal: $(cat "$T/w1.err")"
"$NKICTL" --json warmup "$T/m.json" >"$T/w2.json" || fail "second warmup failed"
[ "$(json_get "$T/w2.json" "d['cached']")" = 3 ] || fail "second warmup compiled again"
"$NKICTL" cache verify "$T/m.json" --state-dir "$T/state" >/dev/null || fail "verify after warmup failed"
"$NKICTL" cache verify --state-dir "$T/state" >/dev/null || fail "whole-cache verify failed"

# A broken kernel in the manifest: warmup and verify both fail.
"$PY" - "$T/bad.nkir" <<'PYEOF'
import sys
from nkid._proto import nkid_pb2
r = nkid_pb2.KernelRef(); r.kernel.name = "broken"; r.kernel.format = "nkir/1"; r.kernel.ir = b"\xff\xff"
open(sys.argv[1], "wb").write(b"NKIDKRF1" + r.SerializeToString())
PYEOF
echo '{"kernels": ["va.nkir", "bad.nkir"]}' >"$T/bad.json"
rc=0; "$NKICTL" warmup "$T/bad.json" >"$T/w3" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "warmup with a broken kernel: exit $rc"
grep -q "1 already cached, 1 failed" "$T/w3" || fail "broken warmup summary: $(cat "$T/w3")"
rc=0; "$NKICTL" cache verify "$T/bad.json" --state-dir "$T/state" >/dev/null 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "verify passed with a broken kernel listed"
stop_nkid || fail "nkid exited non-zero"
echo ok
