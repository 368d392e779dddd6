#!/bin/sh
# Keys nkid derives itself: a kernel whose trace depends on a module global,
# a closure, a default argument or a helper module gets its own result in
# every process, in either order, across restarts; within one process too;
# another uid cannot plant a kernel under anyone's key, nor remove or unpin
# entries; names that are not UTF-8 are refused at compile.
. "$(dirname "$0")/lib.sh"

mkdir -p "$T/k"
cat >"$T/k/keyk.py" <<'PYEOF'
import os
import sys

import numpy as np

import helper
from nkid import nki
import nkid.nki.language as nl

SCALE = float(os.environ.get("SCALE", "3"))


@nki.jit
def by_global(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(a), SCALE))
    return out


def make(c):
    @nki.jit
    def by_closure(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.multiply(nl.load(a), c))
        return out
    return by_closure


DEFAULT = float(os.environ.get("DEFAULT", "2"))


@nki.jit
def by_default(a, k=DEFAULT):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(a), k))
    return out


@nki.jit
def by_helper(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=helper.f(nl.load(a)))
    return out


if __name__ == "__main__":
    a = np.ones((128, 64), dtype=np.float32)
    which, want = sys.argv[1], float(sys.argv[2])
    if which == "global":
        got = by_global(a)
    elif which == "closure":
        got = make(float(sys.argv[3]))(a)
    elif which == "default":
        got = by_default(a)
    else:
        got = by_helper(a)
    if not np.all(got == want):
        sys.exit("%s: got %r, want %r" % (which, float(got.flat[0]), want))
    # Within one process: a changed global gives a new trace too.
    if which == "global":
        SCALE = want + 1
        got = by_global(a)
        if not np.all(got == want + 1):
            sys.exit("global changed in process: got %r, want %r"
                     % (float(got.flat[0]), want + 1))
PYEOF
helper() {
	printf 'import nkid.nki.language as nl\n\n\ndef f(x):\n    return nl.multiply(x, %s)\n' "$1" >"$T/k/helper.py"
}
run() {	# run WHICH WANT [ARG] [ENV=...]
	(cd "$T/k" && env PYTHONDONTWRITEBYTECODE=1 "$@") || fail "wrong result: $*"
}

start_nkid
for order in 1 2; do
	for step in a b; do
		if [ "$order$step" = 1a ] || [ "$order$step" = 2b ]; then
			s=3 c=7 d=2 h=2
		else
			s=5 c=9 d=4 h=3
		fi
		helper "$h"
		run env SCALE=$s "$PY" keyk.py global $s
		run "$PY" keyk.py closure $c $c
		run env DEFAULT=$d "$PY" keyk.py default $d
		run "$PY" keyk.py helper $h
		stop_nkid || fail "nkid exited non-zero"
		start_nkid
	done
done

# Names that cannot travel in a reply are refused at compile, naming the
# tensor; the kernel's own name likewise.
cat >"$T/k/nm.py" <<'PYEOF'
import nkid.nki.language as nl


def k(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(a))
    return out
PYEOF
(cd "$T/k" && "$PY" - "$SOCK") <<'PYEOF' || fail "a non-UTF-8 name was not refused"
import sys, grpc
import numpy as np
from nkid._proto import nkid_pb2
from nkid import tracer
from nm import k

t = tracer.trace(k, (np.zeros((128, 8), np.float32),))
ch = grpc.insecure_channel("unix:" + sys.argv[1])
def refused(ir, name, want):
    """Compile raw bytes: the name is put in by byte surgery (protobuf
    will not set a str field that is not UTF-8), at the same length."""
    req = nkid_pb2.CompileRequest()
    req.ref.kernel.format = "nkir/1"
    req.ref.kernel.ir = ir
    req.ref.kernel.name = "A" * len(name)
    raw = req.SerializeToString().replace(b"A" * len(name), name)
    call = ch.unary_unary("/nkid.v1.Nkid/Compile", request_serializer=lambda b: b,
                          response_deserializer=nkid_pb2.CompileReply.FromString)
    try:
        call(raw, timeout=10)
    except grpc.RpcError as e:
        assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, e
        assert want in e.details(), e.details()
        return
    raise SystemExit("compiled: " + want)
# The output tensor's name 'out' becomes 'ou' + 0xff: not UTF-8.
raw = t.kernel.SerializeToString()
assert raw.count(b"\x03out") == 1, raw
refused(raw.replace(b"\x03out", b"\x03ou\xff"), b"k", "name of output tensor 0 is not valid UTF-8")
# Refused on the wire, before the handler (proto/wire_strings.c).
refused(t.ir, b"k\xc3\x28", "field 'Kernel.name' is not valid UTF-8")
PYEOF

[ "$(id -u)" -eq 0 ] || skip "the cross-uid part needs root (the rest passed)"
command -v setpriv >/dev/null || fail "setpriv (util-linux) is missing"
stop_nkid || fail "nkid exited non-zero"

# Another uid: plants its own IR under the victim's old-style key and NEFF
# key, then tries to remove and unpin the victim's entry.
chmod 0755 "$T" "$T/k"
chmod -R a+rX "$T/k"
echo '{ "socket_mode": "0666", "access": { "allow_uids": [2001] } }' >"$T/open.json"
start_nkid -c "$T/open.json"
helper 2
run env SCALE=3 "$PY" keyk.py global 3
key=$("$NKICTL" --json cache ls | "$PY" -c 'import json,sys; print([e["key"] for e in json.load(sys.stdin)["entries"] if e["kernel"] == "by_global"][0])')
"$NKICTL" cache pin "$key" >/dev/null || fail "root cannot pin"
setpriv --reuid 2001 --regid 2001 --clear-groups env HOME="$T" PYTHONDONTWRITEBYTECODE=1 \
    "$PY" - "$SOCK" "$key" <<'PYEOF' || fail "the attacker's part failed"
import hashlib, sys, grpc
import numpy as np
from nkid._proto import nkid_pb2
from nkid import tracer
import nkid.nki.language as nl

def by_global(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(a), 1000.0))
    return out

t = tracer.trace(by_global, (np.ones((128, 64), np.float32),))
ch = grpc.insecure_channel("unix:" + sys.argv[1])
def rpc(name, req, rep):
    return ch.unary_unary("/nkid.v1.Nkid/" + name, request_serializer=req.SerializeToString,
                          response_deserializer=rep.FromString)
comp = rpc("Compile", nkid_pb2.CompileRequest, nkid_pb2.CompileReply)
req = nkid_pb2.CompileRequest()
req.ref.kernel.name = "by_global"
req.ref.kernel.format = "nkir/1"
req.ref.kernel.ir = t.ir
req.ref.spec_key = sys.argv[2]
req.ref.neff_key = sys.argv[2]
r = comp(req, timeout=10)
# With the victim's key and its IR, nkid serves by the key (the victim's
# kernel, correct for the victim); the attacker's IR is keyed apart.
req.ref.neff_key = ""
r2 = comp(req, timeout=10)
assert r2.neff_key != sys.argv[2], "the attacker's IR got the victim's key"
for name, req in (("CacheRemove", nkid_pb2.CacheRemoveRequest(keys=[sys.argv[2]])),
                  ("CachePin", nkid_pb2.CachePinRequest(keys=[sys.argv[2]], unpin=True))):
    try:
        rpc(name, type(req), nkid_pb2.CacheRemoveReply if name == "CacheRemove"
            else nkid_pb2.CachePinReply)(req, timeout=10)
        raise SystemExit(name + " by uid 2001 was allowed")
    except grpc.RpcError as e:
        assert e.code() == grpc.StatusCode.PERMISSION_DENIED, (name, e)
        assert "access.admin_gids" in e.details(), e.details()
PYEOF
run env SCALE=3 "$PY" keyk.py global 3
"$NKICTL" --json cache show "$key" >"$T/sh.json" || fail "the victim's entry is gone"
[ "$(json_get "$T/sh.json" "d['pinned']")" = True ] || fail "the victim's entry was unpinned"
stop_nkid || fail "nkid exited non-zero"
echo ok
