#!/bin/sh
# Disk full during a store: the request still succeeds, uncached, with a
# warning; caching resumes when space returns. The cache lives on a 1 MiB
# tmpfs (root only; skipped otherwise).
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" -eq 0 ] || skip "needs root for tmpfs"
mkdir -p "$T/state/cache"
# mode=0750: a cache directory writable by others is refused (docs/config.md).
mount -t tmpfs -o size=1m,mode=0750 tmpfs "$T/state/cache" || skip "cannot mount tmpfs"
trap 'umount "$T/state/cache" 2>/dev/null; cleanup' EXIT

trace_mm
export NKID_CACHE_INLINE_MAX=100
start_nkid
"$NKICTL" compile --options "-a" "$T/mm.nkir" >/dev/null || fail "first compile"
# Fill the disk.
dd if=/dev/zero of="$T/state/cache/filler" bs=4k 2>/dev/null || true
"$NKICTL" --json compile --options "-b" "$T/mm.nkir" >"$T/c.json" || fail "compile on a full disk failed"
[ "$(json_get "$T/c.json" "d['cache_hit']")" = False ] || fail "hit on a full disk"
grep -q "served uncached" "$LOG" || fail "no warning about the uncached store"
n=$("$NKICTL" --json cache stat | "$PY" -c 'import sys,json; print(json.load(sys.stdin)["entries"])')
[ "$n" = 1 ] || fail "entries $n on a full disk, want 1"
# Space returns: caching resumes.
rm -f "$T/state/cache/filler"
"$NKICTL" --json compile --options "-c" "$T/mm.nkir" >/dev/null || fail "compile after space returned"
"$NKICTL" --json compile --options "-c" "$T/mm.nkir" >"$T/c.json" || fail "compile"
[ "$(json_get "$T/c.json" "d['cache_hit']")" = True ] || fail "caching did not resume"
n=$("$NKICTL" --json cache stat | "$PY" -c 'import sys,json; print(json.load(sys.stdin)["entries"])')
[ "$n" = 2 ] || fail "entries $n after space returned, want 2"
stop_nkid || fail "nkid exited non-zero"
"$NKICTL" cache verify --state-dir "$T/state" >/dev/null || fail "cache does not verify"
# No empty fan-out directories were left by the failed stores.
for d in "$T/state/cache/blobs"/*; do
	[ -d "$d" ] || continue
	[ -n "$(ls -A "$d")" ] || fail "empty blob directory $d left behind"
done

# Full at start: nkid serves without a cache, tries again with a backoff,
# and opens it once space returns.
umount "$T/state/cache"
mount -t tmpfs -o size=1m,mode=0750 tmpfs "$T/state/cache" || fail "cannot remount"
dd if=/dev/zero of="$T/state/cache/filler" bs=4k 2>/dev/null || true
start_nkid
grep -q "running without a persistent cache, trying again" "$LOG" ||
	fail "no retry announced"
"$NKICTL" --json compile "$T/mm.nkir" >/dev/null || fail "compile without a cache"
rm -f "$T/state/cache/filler"
i=0
until grep -q "opened at last" "$LOG"; do
	i=$((i + 1)); [ $i -lt 80 ] || fail "the cache was never opened again"
	sleep 0.1
done
"$NKICTL" --json compile --options "-d" "$T/mm.nkir" >/dev/null || fail "compile"
"$NKICTL" --json compile --options "-d" "$T/mm.nkir" >"$T/c.json" || fail "compile"
[ "$(json_get "$T/c.json" "d['cache_hit']")" = True ] || fail "caching did not start"
stop_nkid || fail "nkid exited non-zero"
echo ok
