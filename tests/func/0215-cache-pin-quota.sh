#!/bin/sh
# Pins count against a quota per uid (cache.max_pinned_bytes_per_uid): an
# allowed uid pins until its next pin would pass the quota, which is then
# refused (RESOURCE_EXHAUSTED, naming the key, the bytes and the key) and
# changes nothing; pinning an entry pinned already costs nothing; root (an
# administrator) pins beyond it. Before, any allowed uid could pin the
# whole of cache.max_bytes and every other user's kernels went uncached.
. "$(dirname "$0")/lib.sh"

command -v setpriv >/dev/null || fail "setpriv (util-linux) is missing"
[ "$(id -u)" -eq 0 ] || { echo "skip: needs root to switch uid"; exit 77; }

chmod 0755 "$T"
"$PY" - "$T" <<'P' || fail "cannot make kernels"
import os, sys
from nkid._proto import nkid_pb2
sys.path.insert(0, os.path.join(os.environ["TOP"], "tests", "func"))
from scale_ir import scaled_irs
scaled = scaled_irs()
for i in range(8):
    ref = nkid_pb2.KernelRef()
    ref.kernel.name = "scale"
    ref.kernel.format = "nkir/1"
    ref.kernel.ir = scaled(i + 2)
    open("%s/k%d.nkir" % (sys.argv[1], i), "wb").write(b"NKIDKRF1" + ref.SerializeToString())
P
start_nkid
for i in 0 1 2 3 4 5 6 7; do
	"$NKICTL" compile "$T/k$i.nkir" >/dev/null || fail "compile $i"
done
"$NKICTL" --json cache ls >"$T/ls.json" || fail "cache ls"
size=$(json_get "$T/ls.json" 'd["entries"][0]["size"]')
stop_nkid || fail "nkid exited non-zero"
# A quota of three entries and a half.
quota=$((size * 7 / 2))
cat >"$T/c.json" <<J
{"socket_mode": "0666", "access": {"allow_uids": [65534]},
 "cache": {"max_pinned_bytes_per_uid": $quota}}
J
start_nkid -c "$T/c.json"
"$NKICTL" --json cache ls >"$T/ls.json" || fail "cache ls"
keys=$(json_get "$T/ls.json" '" ".join(e["key"] for e in d["entries"])')
nobody() {
	setpriv --reuid 65534 --regid 65534 --clear-groups "$NKICTL" -s "$SOCK" --timeout 10 "$@"
}
n=0 refused=
for k in $keys; do
	if nobody cache pin "$k" >"$T/o" 2>&1; then
		n=$((n + 1))
	else
		refused=$k
		break
	fi
done
[ $n = 3 ] || fail "uid 65534 pinned $n entries within a quota of 3.5: $(cat "$T/o")"
grep -q "RESOURCE_EXHAUSTED" "$T/o" && grep -q "cache.max_pinned_bytes_per_uid" "$T/o" &&
    grep -q "$refused" "$T/o" || fail "refusal: $(cat "$T/o")"
"$NKICTL" --json cache ls >"$T/ls.json"
[ "$(json_get "$T/ls.json" 'sum(1 for e in d["entries"] if e["pinned"])')" = 3 ] ||
    fail "the refused pin changed something"
# Pinned again: no cost. Root: no quota.
first=$(echo "$keys" | cut -d' ' -f1)
nobody cache pin "$first" >/dev/null 2>&1 || fail "pinning a pinned entry again was refused"
"$NKICTL" cache pin $keys >/dev/null || fail "root could not pin beyond the quota"
"$NKICTL" --json cache ls >"$T/ls.json"
[ "$(json_get "$T/ls.json" 'sum(1 for e in d["entries"] if e["pinned"])')" = 8 ] || fail "root's pins"
stop_nkid || fail "nkid exited non-zero"
echo ok
