#!/bin/sh
# Corruption: a flipped byte in a stored blob (inline and in a file) is
# detected, not served, counted and recompiled; a damaged database at
# start is set aside and nkid starts empty, saying why.
. "$(dirname "$0")/lib.sh"

trace_va 256,1024
trace_mm
# vector_add's image (607 bytes) stays inline, matmul's goes to a file.
export NKID_CACHE_INLINE_MAX=700
start_nkid
"$NKICTL" --json compile "$T/va.nkir" >"$T/va.json" || fail "compile va"
"$NKICTL" --json compile "$T/mm.nkir" >"$T/mm.json" || fail "compile mm"
stop_nkid
DB=$T/state/cache/index.db
"$PY" - "$DB" <<'PYEOF' || fail "cannot corrupt the blobs"
import sqlite3, sys, glob, os
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT key, inline, digest FROM neff").fetchall()
assert sorted(r[1] for r in rows) == [0, 1], rows
for key, inline, digest in rows:
    if inline:
        data = bytearray(db.execute("SELECT data FROM neff WHERE key=?", (key,)).fetchone()[0])
        data[len(data) // 2] ^= 0x10
        db.execute("UPDATE neff SET data=? WHERE key=?", (bytes(data), key))
    else:
        p = os.path.join(os.path.dirname(sys.argv[1]), "blobs", digest[:2], digest)
        b = bytearray(open(p, "rb").read()); b[len(b) // 2] ^= 0x10
        open(p, "wb").write(b)
db.commit()
PYEOF
start_nkid
for k in va mm; do
	"$NKICTL" --json compile "$T/$k.nkir" >"$T/c.json" || fail "compile $k after corruption"
	[ "$(json_get "$T/c.json" "d['cache_hit']")" = False ] || fail "corrupt $k was served"
	[ "$(json_get "$T/c.json" "d['neff_key']")" = "$(json_get "$T/$k.json" "d['neff_key']")" ] || fail "key changed"
done
"$NKICTL" --json status >"$T/st.json"
[ "$(json_get "$T/st.json" "d['cache']['corrupt']")" = 2 ] || fail "corrupt != 2: $(json_get "$T/st.json" "d['cache']")"
[ "$(json_get "$T/st.json" "d['cache']['compiles']")" = 2 ] || fail "not recompiled"
grep -q "is corrupt" "$LOG" || fail "corruption not logged"
ls "$T"/state/cache/quarantine/* >/dev/null 2>&1 || fail "bad file not quarantined"
stop_nkid
"$NKICTL" cache verify --state-dir "$T/state" >/dev/null || fail "recompiled entries do not verify"
start_nkid
"$NKICTL" --json compile "$T/mm.nkir" >"$T/c.json" || fail "compile"
[ "$(json_get "$T/c.json" "d['cache_hit']")" = True ] || fail "recompiled entry not served"
stop_nkid

# A damaged database: garbage over its pages.
"$PY" - "$DB" <<'PYEOF'
import sys
f = open(sys.argv[1], "r+b"); f.seek(0); f.write(b"\xde\xad" * 2048); f.close()
PYEOF
start_nkid
grep -q "DATABASE .* IS DAMAGED" "$LOG" || fail "damaged database not reported"
ls "$DB".corrupt-* >/dev/null 2>&1 || fail "damaged database not set aside"
"$NKICTL" --json status >"$T/st.json"
[ "$(json_get "$T/st.json" "d['cache']['entries']")" = 0 ] || fail "not started empty"
[ "$(json_get "$T/st.json" "d['cache']['corrupt']")" -ge 1 ] || fail "recovery not counted"
"$NKICTL" --json compile "$T/va.nkir" >"$T/c.json" || fail "compile after recovery"
stop_nkid || fail "nkid exited non-zero"
echo ok
