#!/bin/sh
# Bundles: export a cache, import it into a fresh state dir, and nkid
# serves every kernel without compiling; hostile bundles are refused and
# leave the live cache unchanged. This is the offline mode (--state-dir:
# the cache directory itself, no nkid); 0208 does the same through nkid.
. "$(dirname "$0")/lib.sh"

trace_va 256,1024
trace_mm
# Small blobs go to files here so that both layouts travel.
export NKID_CACHE_INLINE_MAX=700
start_nkid
for o in "" "-O1" "-O2"; do
	"$NKICTL" compile --options "$o" "$T/va.nkir" >/dev/null || fail "compile va $o"
	"$NKICTL" compile --options "$o" "$T/mm.nkir" >/dev/null || fail "compile mm $o"
done
n=$("$NKICTL" --json cache stat | "$PY" -c 'import sys,json; print(json.load(sys.stdin)["entries"])')
[ "$n" = 6 ] || fail "6 entries expected, $n"
ls "$T"/state/cache/blobs/*/* >/dev/null 2>&1 || fail "no blob file written"
"$NKICTL" cache export "$T/all.nkb" --state-dir "$T/state" | grep -q "exported 6" || fail "export"
stop_nkid

# A fresh state dir: import, then nkid serves without compiling.
mkdir -p "$T/fresh/cache"
"$NKICTL" cache import "$T/all.nkb" --state-dir "$T/fresh" | grep -q "imported 6" || fail "import"
"$NKICTL" cache verify --state-dir "$T/fresh" >/dev/null || fail "imported cache does not verify"
"$NKID" -s "$SOCK" --state-dir "$T/fresh" >>"$LOG" 2>&1 &
NKID_PID=$!
wait_ready
expect_cache_hits
"$NKICTL" --json status >"$T/st.json"
[ "$(json_get "$T/st.json" "d['cache']['compiles']")" = 0 ] || fail "imported cache compiled"
stop_nkid

# An export of chosen keys, and of the pinned ones.
key=$("$NKICTL" --json cache ls -n 1 --state-dir "$T/fresh" | "$PY" -c 'import sys,json; print(json.load(sys.stdin)["entries"][0]["key"])')
"$NKICTL" cache export "$T/one.nkb" "$key" --state-dir "$T/fresh" | grep -q "exported 1" || fail "export KEY"
"$NKICTL" cache pin "$key" --state-dir "$T/fresh" >/dev/null || fail "offline pin"
"$NKICTL" cache export "$T/pinned.nkb" --pinned --state-dir "$T/fresh" | grep -q "exported 1" || fail "export --pinned"

# Hostile bundles, against a live cache with one entry.
mkdir -p "$T/live/cache"
"$NKICTL" cache import "$T/one.nkb" --state-dir "$T/live" >/dev/null || fail "import one"
before=$("$NKICTL" --json cache ls --state-dir "$T/live")
"$PY" - "$T/all.nkb" "$T" <<'PYEOF' || fail "cannot write the hostile bundles"
import hashlib, struct, sys
src, d = open(sys.argv[1], "rb").read(), sys.argv[2]
body = src[:-40]
def seal(b):
    return b + b"NKIDEND1" + hashlib.sha256(b).digest()
# 1: one byte of a blob flipped, trailer recomputed (a wrong digest).
b = bytearray(body); b[-3] ^= 0x40
open(d + "/h-digest.nkb", "wb").write(seal(bytes(b)))
# 2: a flipped byte without resealing (the trailer catches it).
b = bytearray(src); b[len(src) // 2] ^= 1
open(d + "/h-trailer.nkb", "wb").write(bytes(b))
# 3: an absurd blob size.
first = 16; metalen = struct.unpack_from("<I", body, first)[0]
b = bytearray(body); struct.pack_into("<Q", b, first + 4 + metalen, 1 << 60)
open(d + "/h-size.nkb", "wb").write(seal(bytes(b)))
# 4: an absurd entry count; 5: truncated; 6: not a bundle; 7: a SQLite file.
b = bytearray(body); struct.pack_into("<I", b, 12, 0xffffffff)
open(d + "/h-count.nkb", "wb").write(seal(bytes(b)))
open(d + "/h-trunc.nkb", "wb").write(src[: len(src) - 100])
open(d + "/h-magic.nkb", "wb").write(b"hello" * 40)
import sqlite3
db = sqlite3.connect(d + "/h-sqlite.nkb")
db.executescript("CREATE TABLE neff(key); CREATE TRIGGER t AFTER INSERT ON neff BEGIN SELECT 1; END;")
db.close()
PYEOF
for h in digest trailer size count trunc magic sqlite; do
	rc=0; "$NKICTL" cache import "$T/h-$h.nkb" --state-dir "$T/live" >"$T/out" 2>&1 || rc=$?
	[ $rc -eq 1 ] || fail "hostile bundle '$h' accepted (rc $rc): $(cat "$T/out")"
	grep -q "refused\|cannot" "$T/out" || fail "hostile bundle '$h': no reason given: $(cat "$T/out")"
done
after=$("$NKICTL" --json cache ls --state-dir "$T/live")
[ "$before" = "$after" ] || fail "a hostile bundle changed the live cache"
"$NKICTL" cache verify --state-dir "$T/live" >/dev/null || fail "live cache does not verify after hostile imports"
[ -z "$(ls "$T/live/cache/tmp")" ] || fail "temp files left"
echo ok
