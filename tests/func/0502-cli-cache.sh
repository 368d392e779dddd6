#!/bin/sh
# The cache commands as a person uses them: the key prefix `cache ls`
# prints works for show, pin, unpin, rm, export and verify; an ambiguous
# prefix is named as such and changes nothing; `cache ls NAME` filters by
# kernel name and shows each entry's signature; `cache verify` acts through
# the nkid of -s (never /var/cache/nkid) and its counts add up; `cache stat`
# has a hit rate and --zero.
. "$(dirname "$0")/lib.sh"

trace_va 256,1024
trace_mm
"$PY" - "$T/bad.nkir" <<'PYEOF' || fail "cannot write the bad kernel"
import sys
from nkid._proto import nkid_pb2
r = nkid_pb2.KernelRef()
r.kernel.name = "broken"; r.kernel.format = "nkir/1"; r.kernel.ir = b"\xff\xff\xff\xff"
open(sys.argv[1], "wb").write(b"NKIDKRF1" + r.SerializeToString())
PYEOF
export NKID_CACHE_INLINE_MAX=700
chmod 0755 "$T"
echo '{ "socket_mode": "0666", "access": { "allow_uids": [65534] } }' >"$T/c.json"
start_nkid -c "$T/c.json"
unset NKID_SOCKET		# every call names its nkid with -s
C="$NKICTL -s $SOCK"

# 17 entries of vector_add (options are part of the key), one of matmul,
# one cached failure: two of the 17 keys share their first digit.
i=0
while [ $i -lt 17 ]; do
	$C compile --options "-k$i" "$T/va.nkir" >/dev/null || fail "compile va $i"
	i=$((i + 1))
done
$C compile "$T/mm.nkir" >/dev/null || fail "compile mm"
$C compile "$T/bad.nkir" >/dev/null 2>&1 && fail "the bad kernel compiled"

# ls NAME: by kernel name (a shell pattern), with signatures
$C cache ls matmul >"$T/ls.mm" || fail "ls matmul"
[ "$(grep -c matmul "$T/ls.mm")" = 1 ] && ! grep -q vector_add "$T/ls.mm" ||
	fail "ls matmul: $(cat "$T/ls.mm")"
grep -q "a_t: float32\[512,256\], b: float32\[512,1024\]" "$T/ls.mm" ||
	fail "no matmul signature: $(cat "$T/ls.mm")"
$C cache ls 'vector_*' >"$T/ls.va" || fail "ls vector_*"
[ "$(grep -c "vector_add  default (trn1)  x: float32\[256,1024\], y: float32\[256,1024\]" "$T/ls.va")" = 17 ] ||
	fail "ls vector_*: $(cat "$T/ls.va")"
$C cache ls nope | grep -q "no entries of kernel 'nope'" || fail "ls of no kernel"
$C --json cache ls 'vector_*' -n 3 >"$T/ls.json" || fail "ls --json"
[ "$(json_get "$T/ls.json" "[len(d['entries']), d['entries'][0]['signature'][1]]")" = \
	"[3, {'name': 'y', 'dtype': 'float32', 'shape': [256, 1024]}]" ] || fail "ls --json: $(cat "$T/ls.json")"
$C --json cache ls broken >"$T/ls.bad" || fail "ls broken"
[ "$(json_get "$T/ls.bad" "d['entries'][0]['status'], d['entries'][0]['signature']")" = "('failed', None)" ] ||
	fail "a failed entry: $(cat "$T/ls.bad")"
$C --json cache ls matmul --no-signature >"$T/ls.ns" || fail "ls --no-signature"
[ "$(json_get "$T/ls.ns" "d['entries'][0]['signature']")" = None ] || fail "--no-signature read the image"

# The KEY column: at least 16 digits, every cache command takes it.
mm=$(awk 'NR == 2 { print $1 }' "$T/ls.mm")
[ ${#mm} -ge 16 ] || fail "ls KEY '$mm'"
$C cache show "$mm" >"$T/show" || fail "show $mm"
grep -q "^signature  *a_t: float32\[512,256\]" "$T/show" || fail "show: $(cat "$T/show")"
$C cache show "$(echo "$mm" | tr a-f A-F)" >/dev/null || fail "show of an upper-case prefix"
$C cache pin "$mm" | grep -q "pinned 1 entry" || fail "pin $mm"
$C --json cache ls matmul | grep -q '"pinned":true' || fail "not pinned"
$C cache unpin "$mm" | grep -q "unpinned 1 entry" || fail "unpin $mm"
$C cache export "$T/mm.nkb" "$mm" | grep -q "exported 1 entry" || fail "export $mm"
$C cache verify -k "$mm" | grep -q "verified 1 entry: 1 ok" || fail "verify -k $mm"

# An ambiguous prefix: named, and nothing done.
d=$("$PY" - "$T/ls.json" "$SOCK" "$NKICTL" <<'PYEOF'
import collections, json, subprocess, sys
out = subprocess.run([sys.argv[3], "-s", sys.argv[2], "--json", "cache", "ls", "vector_*"],
                     capture_output=True, check=True).stdout
keys = [e["key"] for e in json.loads(out)["entries"]]
print(collections.Counter(k[0] for k in keys).most_common(1)[0][0])
PYEOF
)
rc=0; $C cache pin "$d" >"$T/amb" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "pin of ambiguous '$d': rc $rc"
grep -q "nkictl: cache pin: key prefix '$d' is ambiguous: $d[0-9a-f]\{15\} ([a-z_]*), $d[0-9a-f]\{15\} ([a-z_]*)" "$T/amb" ||
	fail "ambiguous: $(cat "$T/amb")"
$C --json cache ls | grep -q '"pinned":true' && fail "an ambiguous pin pinned"
rc=0; $C --json cache rm "$d" >"$T/amb.json" 2>/dev/null || rc=$?
[ $rc -eq 1 ] && [ "$(json_get "$T/amb.json" "d['error']['code']")" = AMBIGUOUS ] ||
	fail "rm of an ambiguous prefix: rc $rc $(cat "$T/amb.json")"
rc=0; $C cache show ffffffffffff >"$T/none" 2>&1 || rc=$?
[ $rc -eq 1 ] && grep -q "no entry has a key starting with 'ffffffffffff'" "$T/none" ||
	fail "show of no entry: rc $rc $(cat "$T/none")"
rc=0; $C cache rm "zz$d" >"$T/bad" 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -q "bad key 'zz$d'" "$T/bad" || fail "rm of a non-hex key: rc $rc"
[ "$($C --json cache stat | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["entries"])')" = 19 ] ||
	fail "an entry went away"

# verify through the nkid of -s: its 19 entries, the counts add up
rc=0; $C cache verify >"$T/v1" 2>&1 || rc=$?
[ $rc -eq 0 ] || fail "verify of a good cache: rc $rc $(cat "$T/v1")"
grep -q "^verified 19 entries: 18 ok, 1 failed (cached compile failures)$" "$T/v1" ||
	fail "verify summary: $(cat "$T/v1")"
$C --json cache verify >"$T/v1.json" || fail "verify --json"
[ "$(json_get "$T/v1.json" "(d['offline'], d['checked'], d['ok'] + d['failed'] + d['missing'] + d['stale'] + d['corrupt'] + d['errors'])")" = "(False, 19, 19)" ] ||
	fail "verify --json: $(cat "$T/v1.json")"
# a flipped byte in an image on disk: nkid finds it, says so, quarantines it
"$PY" - "$T/state/cache/index.db" "$mm" <<'PYEOF' || fail "cannot corrupt"
import os, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
key, inline, digest = db.execute("SELECT key, inline, digest FROM neff WHERE key LIKE ?",
                                 (sys.argv[2] + "%",)).fetchone()
assert not inline, "matmul's image is in a file (NKID_CACHE_INLINE_MAX)"
p = os.path.join(os.path.dirname(sys.argv[1]), "blobs", digest[:2], digest)
b = bytearray(open(p, "rb").read()); b[len(b) // 2] ^= 0x10
open(p, "wb").write(b)
PYEOF
rc=0; $C cache verify >"$T/v2" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "verify of a corrupt cache: rc $rc $(cat "$T/v2")"
grep -q "^corrupt  $mm  matmul  its blob does not match its digest: quarantined" "$T/v2" ||
	fail "corrupt entry not named: $(cat "$T/v2")"
grep -q "^verified 19 entries: 17 ok, 1 failed (cached compile failures), 1 corrupt$" "$T/v2" ||
	fail "verify summary: $(cat "$T/v2")"
grep -q "is corrupt" "$LOG" || fail "nkid did not log the corruption"
$C cache verify | grep -q "^verified 18 entries: 17 ok, 1 failed" || fail "not quarantined"
# a manifest through nkid: keys derived by nkid; failed is not ok there
cat >"$T/m.json" <<JSON
{"kernels": [{"path": "va.nkir", "options": "-k3"}, "mm.nkir", "bad.nkir"]}
JSON
rc=0; $C cache verify "$T/m.json" >"$T/v3" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "verify of a manifest with a missing kernel: rc $rc"
grep -q "^verified 3 kernels: 1 ok, 1 failed (cached compile failures), 1 missing$" "$T/v3" ||
	fail "manifest verify: $(cat "$T/v3")"
grep -q "^missing .*/mm.nkir" "$T/v3" || fail "missing kernel not named: $(cat "$T/v3")"
# offline only when asked, read-only
$C cache verify --state-dir "$T/state" | grep -q "^verified 18 entries: 17 ok, 1 failed" ||
	fail "offline verify"

# stat: hit rate and --zero (Status keeps counting)
$C cache stat >"$T/s1" || fail "stat"
grep -Eq "^hit rate  +[0-9.]+% \([0-9]+ hits?, [0-9]+ miss(es)?\)$" "$T/s1" || fail "stat: $(cat "$T/s1")"
grep -Eq "^size  +[0-9.]+ KiB of 16.0 GiB \([0-9.]+%\)$" "$T/s1" || fail "stat size: $(cat "$T/s1")"
$C --json cache stat --zero >"$T/z.json" || fail "stat --zero"
[ "$(json_get "$T/z.json" "(d['hits'], d['misses'], d['compiles'], d['hit_rate'], d['zeroed_at'] > 0)")" = \
	"(0, 0, 0, None, True)" ] || fail "after --zero: $(cat "$T/z.json")"
$C compile --options "-k1" "$T/va.nkir" >/dev/null || fail "compile (a hit)"
$C cache stat >"$T/s2" || fail "stat"
grep -q "^hit rate  *100.0% (1 hit, 0 misses)$" "$T/s2" || fail "after a hit: $(cat "$T/s2")"
grep -q "^counting since .*(zeroed " "$T/s2" || fail "no since: $(cat "$T/s2")"
$C --json status >"$T/st.json"
[ "$(json_get "$T/st.json" "d['cache']['compiles']")" = 18 ] || fail "status was zeroed"
command -v setpriv >/dev/null || fail "setpriv (util-linux) is missing"
uid_part=skipped
if [ "$(id -u)" -eq 0 ]; then
	uid_part=ran
	rc=0; setpriv --reuid 65534 --regid 65534 --clear-groups $C cache stat --zero >"$T/p" 2>&1 ||
		rc=$?
	[ $rc -eq 1 ] && grep -q "PERMISSION_DENIED: cannot zero the cache counters" "$T/p" ||
		fail "--zero by nobody: rc $rc $(cat "$T/p")"
fi
rc=0; $C cache stat --zero --state-dir "$T/state" >/dev/null 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "--zero offline: rc $rc"
stop_nkid || fail "nkid exited non-zero"
[ "$uid_part" = ran ] || skip "--zero by another uid needs root (the rest passed)"
echo ok
