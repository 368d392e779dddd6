#!/bin/sh
# access.cache_visibility "owner": two unprivileged uids (daemon, 1, and
# nobody, 65534) each see only the cache entries they stored, or that an
# administrator pinned: CacheList, CacheExport (all, and a named key),
# CacheVerify (all, and a named key), CachePin, and Compile by key alone
# with the NEFF returned answer another's entry exactly as a key nkid
# does not have. A kernel a uid traces itself is still served from the
# shared cache, compiled once (Compile by IR, Lookup by its digest, then
# calls by key alone, over the fast path from nki.jit). Root (an
# administrator) sees everything, and what it pins everyone sees (by key
# too, until it unpins); a reload back to "shared" shows all. Jobs lists
# another user's jobs without their kernels' names.
# Before, every allowed uid listed and fetched every other's kernels.
. "$(dirname "$0")/lib.sh"

command -v setpriv >/dev/null || fail "setpriv (util-linux) is missing"
[ "$(id -u)" -eq 0 ] || skip "needs root to switch uid"

chmod 0755 "$T"
mkdir "$T/home"
chmod 0777 "$T/home"
"$PY" - "$T" <<'P' || fail "cannot make kernels"
import os, sys
from nkid._proto import nkid_pb2
sys.path.insert(0, os.path.join(os.environ["TOP"], "tests", "func"))
from scale_ir import scaled_irs
scaled = scaled_irs()
for i in range(3):
    ref = nkid_pb2.KernelRef()
    ref.kernel.name = "scale%d" % i
    ref.kernel.format = "nkir/1"
    ref.kernel.ir = scaled(i + 2)
    open("%s/k%d.nkir" % (sys.argv[1], i), "wb").write(b"NKIDKRF1" + ref.SerializeToString())
P
chmod 0644 "$T"/k*.nkir
config() {
	cat >"$T/c.json" <<J
{"socket_mode": "0666", "access": {"allow_uids": [1, 65534],
 "cache_visibility": "$1"}, "metrics": {"listen": "$T/metrics.sock"}}
J
}
config owner
start_nkid -c "$T/c.json"

as() {
	u=$1
	shift
	setpriv --reuid "$u" --regid "$u" --clear-groups env HOME="$T/home" "$@"
}
ctl() {
	u=$1
	shift
	as "$u" "$NKICTL" -s "$SOCK" --timeout 20 "$@"
}
keys_of() {	# UID: the keys of `cache ls` as UID, sorted, one line
	ctl "$1" --json cache ls >"$T/ls.json" || fail "cache ls as uid $1"
	json_get "$T/ls.json" '" ".join(sorted(e["key"] for e in d["entries"]))'
}
fastcalls() {
	curl -s --unix-socket "$T/metrics.sock" http://nkid/metrics |
	    awk '$1 == "nkid_fastpath_calls_total" { print $2 }'
}
compiles() {
	"$NKICTL" --json status >"$T/st.json" || fail "status"
	json_get "$T/st.json" 'd["cache"]["compiles"]'
}

A=1 B=65534
ctl $A --json compile "$T/k0.nkir" >"$T/a0.json" || fail "uid 1 compile k0"
ctl $B --json compile "$T/k1.nkir" >"$T/b1.json" || fail "uid 65534 compile k1"
KA=$(json_get "$T/a0.json" 'd["neff_key"]')
KB=$(json_get "$T/b1.json" 'd["neff_key"]')
ABSENT=$(printf absent | sha256sum | cut -c1-64)

# Lists: each its own; root both.
[ "$(keys_of $A)" = "$KA" ] || fail "uid 1 lists '$(keys_of $A)', not only its '$KA'"
[ "$(keys_of $B)" = "$KB" ] || fail "uid 65534 lists '$(keys_of $B)', not only its '$KB'"
[ "$(keys_of 0 | wc -w)" = 2 ] || fail "root lists '$(keys_of 0)'"

# Export of another's key: the words of a key nkid does not have.
ctl $B cache export - "$KA" >/dev/null 2>"$T/e1" && fail "uid 65534 exported uid 1's entry"
ctl $B cache export - "$ABSENT" >/dev/null 2>"$T/e2" && fail "export of an absent key"
grep -q NOT_FOUND "$T/e1" || fail "export of another's key: $(cat "$T/e1")"
[ "$(sed "s/$KA/KEY/g" "$T/e1")" = "$(sed "s/$ABSENT/KEY/g" "$T/e2")" ] ||
    fail "another's key and an absent key answer differently: '$(cat "$T/e1")' vs '$(cat "$T/e2")'"
# Export of everything: only its own.
ctl $B cache export "$T/home/all.nkb" >"$T/e3" 2>&1 || fail "export all: $(cat "$T/e3")"
mkdir -m 0750 "$T/imp"
"$NKICTL" cache import --offline --cache-dir "$T/imp" "$T/home/all.nkb" >"$T/e3" 2>&1 ||
    fail "offline import of uid 65534's bundle: $(cat "$T/e3")"
"$NKICTL" --json cache ls --cache-dir "$T/imp" >"$T/ls.json"
[ "$(json_get "$T/ls.json" '" ".join(e["key"] for e in d["entries"])')" = "$KB" ] ||
    fail "uid 65534's export of all carried '$(json_get "$T/ls.json" '[e["key"] for e in d["entries"]]')'"

# Verify: all means its own; another's key is missing like an absent one.
ctl $B --json cache verify >"$T/v.json" || fail "verify as uid 65534"
[ "$(json_get "$T/v.json" '" ".join(r["key"] for r in d["entries"])')" = "$KB" ] ||
    fail "uid 65534 verified '$(cat "$T/v.json")'"
ctl $B --json cache verify -k "$KA" -k "$ABSENT" >"$T/v.json" 2>"$T/e4" || true
json_get "$T/v.json" '[(r["state"], r.get("message", ""), r.get("kernel", "")) for r in d["entries"]]' >"$T/v.txt"
"$PY" - "$T/v.txt" <<'P' || fail "verify of another's key: $(cat "$T/v.txt")"
import ast, sys
a, b = ast.literal_eval(open(sys.argv[1]).read())
assert a == b and a[0] == "missing", (a, b)
P

# Pin of another's key: missing, nothing pinned.
ctl $B --json cache pin "$KA" >"$T/p.json" 2>&1 || true
"$NKICTL" --json cache ls >"$T/ls.json"
[ "$(json_get "$T/ls.json" 'sum(1 for e in d["entries"] if e["pinned"])')" = 0 ] ||
    fail "uid 65534 pinned uid 1's entry: $(cat "$T/p.json")"

# Compile by key alone with the NEFF: another's is NOT_FOUND in a miss's
# words; its own is served.
cat >"$T/bykey.py" <<'P'
import sys
from nkid._proto import nkid_pb2 as pb
from nkid.client import Client
from nkid.errors import NkidError
c = Client(sys.argv[1])
try:
    r = c.compile(pb.KernelRef(neff_key=sys.argv[2]), return_neff=True)
    print("served %d" % len(r.neff))
except NkidError as e:
    print("%s %s" % (e.code, str(e).replace(sys.argv[2], "KEY")))
P
o1=$(as $B "$PY" "$T/bykey.py" "$SOCK" "$KA")
o2=$(as $B "$PY" "$T/bykey.py" "$SOCK" "$ABSENT")
case $o1 in NOT_FOUND*) ;; *) fail "uid 65534 fetched uid 1's NEFF by key: $o1" ;; esac
[ "$o1" = "$o2" ] || fail "another's key and an absent key answer differently: '$o1' vs '$o2'"
case $(as $A "$PY" "$T/bykey.py" "$SOCK" "$KA") in served*) ;; *) fail "uid 1 cannot fetch its own by key" ;; esac

# Its own trace of another's kernel: a hit of the shared cache (no
# compile), the NEFF returned, and then its key alone serves it.
n0=$(compiles)
ctl $B --json compile --neff "$T/home/kb0.neff" "$T/k0.nkir" >"$T/b0.json" || fail "uid 65534 compile k0"
[ "$(json_get "$T/b0.json" 'd["neff_key"]')" = "$KA" ] || fail "uid 65534's k0 has another key"
[ "$(json_get "$T/b0.json" 'd["cache_hit"]')" = True ] || fail "uid 65534's k0 was not a cache hit: $(cat "$T/b0.json")"
[ "$(compiles)" = "$n0" ] || fail "uid 65534's k0 was compiled again"
case $(as $B "$PY" "$T/bykey.py" "$SOCK" "$KA") in served*) ;; *) fail "uid 65534 proved k0's IR, yet its key alone is refused" ;; esac

# nki.jit as uid 65534 of a kernel uid 1 ran first: Lookup by digest and
# calls by key alone (the fast path), compiled once, right results.
cat >"$T/jit.py" <<'P'
import sys
import numpy as np
from nkid import nki
import nkid.nki.language as nl
@nki.jit
def add_two(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(a) + 2.0)
    return out
a = np.arange(128 * 8, dtype=np.float32).reshape(128, 8)
for _ in range(int(sys.argv[1])):
    assert np.array_equal(add_two(a), a + 2.0)
print("ok")
P
as $A env NKID_SOCKET="$SOCK" "$PY" "$T/jit.py" 1 >/dev/null || fail "uid 1's jit"
n0=$(compiles)
f0=$(fastcalls)
as $B env NKID_SOCKET="$SOCK" "$PY" "$T/jit.py" 5 >"$T/jit.out" 2>&1 || fail "uid 65534's jit: $(cat "$T/jit.out")"
[ "$(compiles)" = "$n0" ] || fail "uid 65534's jit compiled uid 1's kernel again"
[ "$(($(fastcalls) - f0))" -ge 4 ] || fail "uid 65534's warm calls did not travel the fast path ($f0 -> $(fastcalls))"
[ "$(keys_of $B | wc -w)" = 1 ] || fail "uid 65534 lists uid 1's jit kernel"
# Jobs: another user's jobs are listed (the queue is everyone's), their
# kernels unnamed; its own, and root's view, name them.
ctl $B --json jobs --all >"$T/jobs.json" || fail "jobs as uid 65534"
[ "$(json_get "$T/jobs.json" 'sorted(set((j["uid"], j["kernel"]) for j in d["jobs"] if j["kind"] == "run"))')" = "[(1, ''), (65534, 'add_two')]" ] ||
    fail "uid 65534's jobs --all: $(cat "$T/jobs.json")"
"$NKICTL" --json jobs --all >"$T/jobs.json" || fail "jobs as root"
[ "$(json_get "$T/jobs.json" 'sorted(set((j["uid"], j["kernel"]) for j in d["jobs"] if j["kind"] == "run"))')" = "[(1, 'add_two'), (65534, 'add_two')]" ] ||
    fail "root's jobs --all: $(cat "$T/jobs.json")"

# An administrator's pin shows an entry to everyone.
"$NKICTL" cache pin "$KA" >/dev/null || fail "root pin"
case " $(keys_of $B) " in *" $KA "*) ;; *) fail "uid 65534 does not see the entry root pinned" ;; esac
"$NKICTL" cache unpin "$KA" >/dev/null || fail "root unpin"
case " $(keys_of $B) " in *" $KA "*) fail "uid 65534 still sees the entry root unpinned" ;; esac
# ... and by key alone while pinned (checked on disk), not after.
ctl $A --json compile "$T/k2.nkir" >"$T/a2.json" || fail "uid 1 compile k2"
K2=$(json_get "$T/a2.json" 'd["neff_key"]')
"$NKICTL" cache pin "$K2" >/dev/null || fail "root pin k2"
case $(as $B "$PY" "$T/bykey.py" "$SOCK" "$K2") in served*) ;; *) fail "uid 65534 cannot fetch by key the entry root pinned" ;; esac
"$NKICTL" cache unpin "$K2" >/dev/null || fail "root unpin k2"
case $(as $B "$PY" "$T/bykey.py" "$SOCK" "$K2") in NOT_FOUND*) ;; *) fail "uid 65534 fetched by key the entry root unpinned" ;; esac

# A Lookup by the digest of its own copy of the IR: found, and the key
# alone is then its to use.
cat >"$T/lookup.py" <<'P'
import hashlib, sys
from nkid._proto import nkid_pb2 as pb
from nkid.client import Client
ref = pb.KernelRef()
ref.ParseFromString(open(sys.argv[2], "rb").read()[8:])
r = Client(sys.argv[1]).lookup(hashlib.sha256(ref.kernel.ir).hexdigest(),
                               ref.kernel.format, ref.target, ref.options)
print(r.neff_key if r.found else "not found")
P
[ "$(as $B "$PY" "$T/lookup.py" "$SOCK" "$T/k2.nkir")" = "$K2" ] || fail "uid 65534's Lookup of k2's digest"
case $(as $B "$PY" "$T/bykey.py" "$SOCK" "$K2") in served*) ;; *) fail "uid 65534 looked k2 up by digest, yet its key alone is refused" ;; esac

# Reload to shared: everyone sees everything again.
config shared
kill -HUP "$NKID_PID"
i=0
while [ "$(keys_of $B | wc -w)" != 4 ]; do
	i=$((i + 1))
	[ $i -lt 50 ] || fail "after a reload to shared, uid 65534 lists '$(keys_of $B)'"
	sleep 0.1
done
stop_nkid || fail "nkid exited non-zero"
echo ok
