#!/bin/sh
# The cache: two processes compile one kernel -> one compile, the second
# a hit; after a restart the kernel is served from disk; a compile failure
# is cached with its log and retried on request; Lookup answers for the
# digest of IR nkid compiled, and never for a client's specialization key.
. "$(dirname "$0")/lib.sh"

trace_va 256,1024
start_nkid

"$NKICTL" --json compile "$T/va.nkir" >"$T/c1.json" || fail "first compile failed"
"$NKICTL" --json compile "$T/va.nkir" >"$T/c2.json" || fail "second compile failed"
[ "$(json_get "$T/c1.json" "d['cache_hit']")" = False ] || fail "first compile was a hit"
[ "$(json_get "$T/c2.json" "d['cache_hit']")" = True ] || fail "second compile was not a hit"
key=$(json_get "$T/c1.json" "d['neff_key']")
"$NKICTL" --json status >"$T/st.json"
[ "$(json_get "$T/st.json" "d['cache']['compiles']")" = 1 ] || fail "compiles != 1: $(cat "$T/st.json")"
[ "$(json_get "$T/st.json" "d['cache']['hits']")" = 1 ] || fail "hits != 1"
[ "$(json_get "$T/st.json" "d['cache']['entries']")" = 1 ] || fail "entries != 1"
for k in entries bytes max_bytes hits misses compiles coalesced failures evictions corrupt; do
	[ "$(json_get "$T/st.json" "'$k' in d['cache']")" = True ] || fail "status cache lacks '$k'"
done

# cache ls / show / stat through nkid, and offline.
"$NKICTL" --json cache ls >"$T/ls.json" || fail "cache ls failed"
[ "$(json_get "$T/ls.json" "d['entries'][0]['key']")" = "$key" ] || fail "cache ls lacks the key"
"$NKICTL" cache show "$(echo "$key" | cut -c1-12)" | grep -q vector_add || fail "cache show"
"$NKICTL" --json cache stat >"$T/cs.json" || fail "cache stat failed"
[ "$(json_get "$T/cs.json" "d['entries']")" = 1 ] || fail "cache stat entries"

stop_nkid || fail "nkid did not stop"
start_nkid
"$NKICTL" --json compile "$T/va.nkir" >"$T/c3.json" || fail "compile after restart failed"
[ "$(json_get "$T/c3.json" "d['cache_hit']")" = True ] || fail "not a disk hit after restart"
"$NKICTL" --json status >"$T/st.json"
[ "$(json_get "$T/st.json" "d['cache']['compiles']")" = 0 ] || fail "recompiled after restart"


# A kernel that cannot compile: the failure is cached with its log.
"$PY" - "$T/bad.nkir" <<'PYEOF' || fail "cannot write the bad kernel"
import sys
from nkid._proto import nkid_pb2
r = nkid_pb2.KernelRef()
r.kernel.name = "broken"; r.kernel.format = "nkir/1"; r.kernel.ir = b"\xff\xff\xff\xff"
open(sys.argv[1], "wb").write(b"NKIDKRF1" + r.SerializeToString())
PYEOF
rc=0; "$NKICTL" compile "$T/bad.nkir" >"$T/b1" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "bad kernel compiled (rc $rc)"
rc=0; "$NKICTL" compile "$T/bad.nkir" >"$T/b2" 2>&1 || rc=$?
grep -q FAILED_PRECONDITION "$T/b2" || fail "second failure not served from the cache: $(cat "$T/b2")"
"$NKICTL" --json status >"$T/st.json"
[ "$(json_get "$T/st.json" "d['cache']['compiles']")" = 0 ] || fail "failed compile counted as compile"
rc=0; "$NKICTL" compile --retry-failed "$T/bad.nkir" >"$T/b3" 2>&1 || rc=$?
grep -q FAILED_PRECONDITION "$T/b3" && fail "--retry-failed served the cached failure"
"$NKICTL" --json cache ls >"$T/ls.json"
[ "$(json_get "$T/ls.json" "sorted(e['status'] for e in d['entries'])")" = "['failed', 'ok']" ] ||
	fail "failed entry not listed: $(cat "$T/ls.json")"

# Lookup: the digest of the IR nkid compiled maps to the NEFF key; a
# digest of other IR, a client's old-style spec key and a bad digest do not.
"$PY" - "$SOCK" "$T/va.nkir" "$key" <<'PYEOF' || fail "Lookup did not map the IR digest"
import hashlib, sys, grpc
from nkid._proto import nkid_pb2
r = nkid_pb2.KernelRef(); r.ParseFromString(open(sys.argv[2], "rb").read()[8:])
ch = grpc.insecure_channel("unix:" + sys.argv[1])
call = ch.unary_unary("/nkid.v1.Nkid/Lookup", request_serializer=nkid_pb2.LookupRequest.SerializeToString,
                      response_deserializer=nkid_pb2.LookupReply.FromString)
digest = hashlib.sha256(r.kernel.ir).hexdigest()
rep = call(nkid_pb2.LookupRequest(ir_digest=digest, format="nkir/1"), timeout=5)
assert rep.found and rep.neff_key == sys.argv[3] and rep.kernel_name == "vector_add", rep
rep = call(nkid_pb2.LookupRequest(ir_digest=digest, format="nkir/1", options="-O3"), timeout=5)
assert not rep.found, "other options, same key"
other = hashlib.sha256(r.kernel.ir + b"x").hexdigest()
assert not call(nkid_pb2.LookupRequest(ir_digest=other, format="nkir/1"), timeout=5).found
assert not call(nkid_pb2.LookupRequest(spec_key=digest), timeout=5).found
try:
    call(nkid_pb2.LookupRequest(ir_digest="nope", format="nkir/1"), timeout=5)
    raise SystemExit("a bad digest was accepted")
except grpc.RpcError as e:
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, e
PYEOF

# rm and pin through nkid.
"$NKICTL" cache pin "$key" | grep -q "pinned 1" || fail "cache pin"
"$NKICTL" --json cache show "$key" >"$T/sh.json"
[ "$(json_get "$T/sh.json" "d['pinned']")" = True ] || fail "entry not pinned"
"$NKICTL" cache unpin "$key" >/dev/null || fail "cache unpin"
"$NKICTL" cache rm "$key" | grep -q "removed 1" || fail "cache rm"
rc=0; "$NKICTL" cache rm "$key" >/dev/null 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "removing a missing key: exit $rc"
"$NKICTL" --json compile "$T/va.nkir" >"$T/c4.json" || fail "compile after rm"
[ "$(json_get "$T/c4.json" "d['cache_hit']")" = False ] || fail "removed entry still served"

stop_nkid || fail "nkid exited non-zero"
echo ok
