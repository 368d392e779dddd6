#!/bin/sh
# Bundles through nkid (CacheExport, CacheImport): export from one nkid,
# import into a second, fresh one, which serves every kernel without
# compiling and counts the entries; hostile bundles, an oversized upload
# and a uid that may connect but not import are refused with the live
# cache unchanged; a client killed mid-import leaves no spool behind.
. "$(dirname "$0")/lib.sh"

command -v setpriv >/dev/null || fail "setpriv (util-linux) is missing"

trace_va 256,1024
trace_mm
export NKID_CACHE_INLINE_MAX=700
# stat_of FIELD: nkid's cache counter FIELD (Status).
stat_of() {
	"$NKICTL" --json status >"$T/st.json" || fail "status"
	json_get "$T/st.json" "d['cache']['$1']"
}

# --- nkid A: compile six kernels, export them over RPC.
start_nkid
for o in "" "-O1" "-O2"; do
	"$NKICTL" compile --options "$o" "$T/va.nkir" >/dev/null || fail "compile va $o"
	"$NKICTL" compile --options "$o" "$T/mm.nkir" >/dev/null || fail "compile mm $o"
done
[ "$(stat_of entries)" = 6 ] || fail "6 entries expected in A"
bytes_a=$(stat_of bytes)
"$NKICTL" --json cache export "$T/all.nkb" >"$T/x.json" || fail "export over RPC: $(cat "$T/x.json")"
[ "$(json_get "$T/x.json" "d['entries']")" = 6 ] || fail "export: $(cat "$T/x.json")"
[ "$(json_get "$T/x.json" "d['offline']")" = False ] || fail "export went offline"
grep -q "CacheExport to uid" "$LOG" || fail "nkid did not serve the export"
key=$("$NKICTL" --json cache ls -n 1 | "$PY" -c 'import sys,json; print(json.load(sys.stdin)["entries"][0]["key"])')
"$NKICTL" cache export "$T/one.nkb" "$key" | grep -q "exported 1 entry" || fail "export KEY"
"$NKICTL" cache pin "$key" >/dev/null || fail "pin"
"$NKICTL" cache export "$T/pinned.nkb" --pinned | grep -q "exported 1 entry" || fail "export --pinned"
cmp -s "$T/one.nkb" "$T/pinned.nkb" && fail "the pinned flag did not travel"
# An unknown key is NOT_FOUND, named; nothing is written.
nokey=0000000000000000000000000000000000000000000000000000000000000000
rc=0; "$NKICTL" cache export "$T/none.nkb" "$key" "$nokey" >"$T/out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "export of a missing key: rc $rc"
grep -q "NOT_FOUND: cannot export: no entry '$nokey'" "$T/out" || fail "missing key: $(cat "$T/out")"
rc=0; "$NKICTL" cache export "$T/none.nkb" nonsense >"$T/out" 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -q "bad key 'nonsense'" "$T/out" || fail "bad key: rc $rc $(cat "$T/out")"
rc=0; "$NKICTL" cache export "$T/none.nkb" --pinned "$key" >"$T/out" 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "--pinned with KEY: rc $rc"
[ ! -e "$T/none.nkb" ] || fail "a failed export left its file"
ls "$T" | grep -q '\.nkb\.' && fail "temp files of nkictl left: $(ls "$T")"
# The offline mode stays, behind --offline/--cache-dir.
"$NKICTL" --json cache export "$T/off.nkb" --offline --cache-dir "$T/state/cache" >"$T/x.json" ||
	fail "offline export"
[ "$(json_get "$T/x.json" "d['entries']")" = 6 ] || fail "offline export: $(cat "$T/x.json")"

# Many chunks: a 32 MiB entry (of another compiler: kept, never served)
# travels in and out; a client that stops reading after one chunk and
# cancels stops the export and leaves no temp file in nkid.
big_bundle "$T/big-in.nkb" 32 || fail "cannot write the big bundle"
"$NKICTL" cache import "$T/big-in.nkb" | grep -q "imported 1 entry" || fail "import of a 32 MiB entry"
"$NKICTL" --json cache export "$T/big.nkb" >"$T/x.json" || fail "export of 7 entries: $(cat "$T/x.json")"
[ "$(json_get "$T/x.json" "d['entries']")" = 7 ] || fail "export: $(cat "$T/x.json")"
A_SPOOLS() { ls -l "/proc/$NKID_PID/fd" 2>/dev/null | grep -c "$T/state/cache/tmp/" || true; }
PYTHONPATH="$TOP/client/python" "$PY" - "$SOCK" <<'PYEOF' || fail "export cancelled by the client"
import sys, grpc
from nkid._proto import nkid_pb2 as pb, nkid_pb2_grpc as pbg
ch = grpc.insecure_channel("unix:" + sys.argv[1])
it = pbg.NkidStub(ch).CacheExport(pb.CacheExportRequest())
first = next(it)
assert len(first.data) == 1 << 20, len(first.data)
it.cancel()
ch.close()
PYEOF
i=0
until grep -q "CacheExport to uid 0 pid [0-9]*: the client went away after [0-9]* of [0-9]* bytes" "$LOG" &&
	[ "$(A_SPOOLS)" = 0 ]; do
	i=$((i + 1)); [ $i -lt 100 ] || fail "a cancelled export was not stopped and cleaned up"
	sleep 0.05
done
[ -z "$(ls "$T/state/cache/tmp")" ] || fail "temp files left by a cancelled export"
mkdir -p "$T/bigcheck/cache"
"$NKICTL" cache import "$T/big.nkb" --offline --cache-dir "$T/bigcheck/cache" | grep -q "imported 7" ||
	fail "the exported big bundle does not import"
"$NKICTL" cache rm "$(printf big | sha256sum | cut -c1-64)" >/dev/null || fail "rm big"
stop_nkid

# --- nkid B: fresh; uid 65534 may connect but not import.
chmod 0755 "$T"
mkdir -m 0777 "$T/nobody"
chmod 0644 "$T"/*.nkb
cat >"$T/b.json" <<EOF
{ "socket_mode": "0666", "access": { "allow_uids": [65534] },
  "cache": { "max_bundle_bytes": "1MiB" } }
EOF
NKID_STATE=$T/fresh
"$NKID" -s "$SOCK" -c "$T/b.json" --state-dir "$NKID_STATE" >>"$LOG" 2>&1 &
NKID_PID=$!
wait_ready
"$NKICTL" --json cache import "$T/one.nkb" >"$T/i.json" || fail "import one: $(cat "$T/i.json")"
[ "$(json_get "$T/i.json" "d['imported']")" = 1 ] || fail "import one: $(cat "$T/i.json")"
[ "$(stat_of entries)" = 1 ] || fail "an imported entry is not counted"
before=$("$NKICTL" --json cache ls)

# Hostile bundles (as in 0203), refused by nkid.
"$PY" - "$T/all.nkb" "$T" <<'PYEOF' || fail "cannot write the hostile bundles"
import hashlib, os, struct, sys
src, d = open(sys.argv[1], "rb").read(), sys.argv[2]
body = src[:-40]
def seal(b):
    return b + b"NKIDEND1" + hashlib.sha256(b).digest()
def put(name, data):
    open(d + "/h-" + name + ".nkb", "wb").write(data)
b = bytearray(body); b[-3] ^= 0x40
put("digest", seal(bytes(b)))
b = bytearray(src); b[-1] ^= 1
put("trailer", bytes(b))
first = 16; metalen = struct.unpack_from("<I", body, first)[0]
b = bytearray(body); struct.pack_into("<Q", b, first + 4 + metalen, 1 << 60)
put("size", seal(bytes(b)))
b = bytearray(body); struct.pack_into("<I", b, 12, 0xffffffff)
put("count", seal(bytes(b)))
put("trunc", src[: len(src) - 100])
put("magic", b"hello" * 40)
put("stray", seal(body + b"x"))
import sqlite3
db = sqlite3.connect(d + "/h-sqlite.nkb")
db.executescript("CREATE TABLE neff(key); CREATE TRIGGER t AFTER INSERT ON neff BEGIN SELECT 1; END;")
db.close()
# Larger than cache.max_bundle_bytes (1 MiB).
put("big", src[:-40] + os.urandom(3 << 20))
PYEOF
for h in digest trailer size count trunc magic stray sqlite; do
	rc=0; "$NKICTL" cache import "$T/h-$h.nkb" >"$T/out" 2>&1 || rc=$?
	[ $rc -eq 1 ] || fail "hostile bundle '$h' accepted (rc $rc): $(cat "$T/out")"
	grep -q "cache import: INVALID_ARGUMENT: bundle '$T/h-$h.nkb' refused: " "$T/out" ||
		fail "hostile bundle '$h': not refused by nkid with a reason: $(cat "$T/out")"
	cp "$T/out" "$T/h-$h.out"
done
grep -q "blob does not match its digest" "$T/h-digest.out" || fail "digest: $(cat "$T/h-digest.out")"
grep -q "does not match its trailer" "$T/h-trailer.out" || fail "trailer: $(cat "$T/h-trailer.out")"
grep -q "blob size [0-9]* is over the limit of" "$T/h-size.out" || fail "size: $(cat "$T/h-size.out")"
rc=0; "$NKICTL" cache import "$T/h-big.nkb" >"$T/out" 2>&1 || rc=$?
[ $rc -eq 1 ] && grep -q "RESOURCE_EXHAUSTED: .*cache.max_bundle_bytes" "$T/out" ||
	fail "oversized upload: rc $rc $(cat "$T/out")"
rc=0; "$NKICTL" cache import "$T/missing.nkb" >"$T/out" 2>&1 || rc=$?
[ $rc -eq 1 ] && grep -q "cannot read bundle" "$T/out" || fail "missing file: rc $rc"

# A uid that may connect: exports, may not import.
uid_part=ran
if [ "$(id -u)" -ne 0 ]; then
	uid_part=skipped
else
	rc=0; setpriv --reuid 65534 --regid 65534 --clear-groups \
		"$NKICTL" -s "$SOCK" cache import "$T/all.nkb" >"$T/out" 2>&1 || rc=$?
	[ $rc -eq 1 ] || fail "uid 65534 imported (rc $rc): $(cat "$T/out")"
	grep -q "PERMISSION_DENIED: CacheImport writes the cache every client is served from: only root or nkid's own uid 0 may import (you are uid 65534)" "$T/out" ||
		fail "uid 65534 not told PERMISSION_DENIED: $(cat "$T/out")"
	setpriv --reuid 65534 --regid 65534 --clear-groups \
		"$NKICTL" -s "$SOCK" cache export "$T/nobody/e.nkb" >"$T/out" 2>&1 ||
		fail "uid 65534 cannot export: $(cat "$T/out")"
fi

# Nothing changed, nothing left behind.
after=$("$NKICTL" --json cache ls)
[ "$before" = "$after" ] || fail "a refused import changed the live cache"
[ "$(stat_of entries)" = 1 ] || fail "a refused import changed the counters"
[ -z "$(ls "$NKID_STATE/cache/tmp")" ] || fail "temp files left: $(ls "$NKID_STATE/cache/tmp")"

# A client killed mid-import: the spool goes with it.
mkfifo "$T/fifo"
( head -c 2000 "$T/all.nkb"; exec sleep 30 ) >"$T/fifo" &
WRITER=$!
"$NKICTL" cache import "$T/fifo" >"$T/out" 2>&1 &
CLIENT=$!
spools() { ls -l "/proc/$NKID_PID/fd" 2>/dev/null | grep -c "$NKID_STATE/cache/tmp/" || true; }
i=0
while [ "$(spools)" = 0 ]; do
	i=$((i + 1)); [ $i -lt 100 ] || fail "the import never spooled"
	sleep 0.05
done
kill -KILL "$CLIENT"; wait "$CLIENT" 2>/dev/null || true
kill "$WRITER" 2>/dev/null; wait "$WRITER" 2>/dev/null || true
i=0
while [ "$(spools)" != 0 ]; do
	i=$((i + 1)); [ $i -lt 100 ] || fail "the spool of a killed client stayed open"
	sleep 0.05
done
[ -z "$(ls "$NKID_STATE/cache/tmp")" ] || fail "temp files left after a killed client"
[ "$(stat_of entries)" = 1 ] || fail "a killed import changed the cache"

# The whole bundle: imported, counted and served without compiling.
"$NKICTL" --json cache import "$T/all.nkb" >"$T/i.json" || fail "import all: $(cat "$T/i.json")"
[ "$(json_get "$T/i.json" "(d['imported'], d['skipped'])")" = "(5, 1)" ] ||
	fail "import all: $(cat "$T/i.json")"
[ "$(stat_of entries)" = 6 ] || fail "imported entries not counted: $(stat_of entries)"
[ "$(stat_of bytes)" = "$bytes_a" ] || fail "imported bytes $(stat_of bytes), A had $bytes_a"
compiles0=$(stat_of compiles)
expect_cache_hits
[ "$(stat_of compiles)" = "$compiles0" ] || fail "the imported cache compiled"
# Import again: everything is already there.
"$NKICTL" cache import "$T/all.nkb" | grep -q "imported 0 entries (6 already present)" ||
	fail "second import"
"$NKICTL" cache verify --cache-dir "$NKID_STATE/cache" >/dev/null || fail "B's cache does not verify"
stop_nkid || fail "nkid B exited non-zero"

# The offline mode imports into a stopped nkid's directory.
mkdir -p "$T/off/cache"
"$NKICTL" cache import "$T/all.nkb" --offline --cache-dir "$T/off/cache" | grep -q "imported 6" ||
	fail "offline import"
[ "$uid_part" = ran ] || skip "the uid checks need root to switch uid (the rest passed)"
echo ok
