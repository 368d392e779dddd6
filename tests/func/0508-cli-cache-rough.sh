#!/bin/sh
# The cache commands' rough edges (issue 31): `cache push` takes the key
# prefixes `cache ls` prints, in any case, as `cache ls -k` does (item 3);
# offline `cache gc` and `cache export --offline` work on the cache of the
# nkid -s names, not /var/cache/nkid (item 4); offline `cache import
# --cache-dir NEWDIR` makes the directory (item 12); push, compile on a
# hit and status speak in units (item 13); cache ls has a TARGET column
# (item 6); pinning a pinned entry says so (item 11).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/remote-lib.sh"

trace_va 64,64
start_redis
fleet_config "$T/fleet.json"
start_nkid -c "$T/fleet.json"
unset NKID_SOCKET
C="$NKICTL -s $SOCK"
$C compile "$T/va.nkir" >/dev/null || fail "compile"

# item 3: the KEY column of cache ls, and its upper case
short=$($C cache ls --no-signature | awk 'NR == 2 { print $1 }')
[ ${#short} -eq 16 ] || fail "cache ls KEY column: '$short'"
$C cache push "$short" >"$T/push.out" 2>&1 || fail "cache push of the ls prefix: $(cat "$T/push.out")"
grep -q "pushed 1 entry" "$T/push.out" || fail "cache push: $(cat "$T/push.out")"
# item 13: units a person reads
grep -Eq "pushed 1 entry \([0-9.]+ (B|KiB|MiB)\), 0 failed" "$T/push.out" || fail "cache push bytes: $(cat "$T/push.out")"
$C compile "$T/va.nkir" >"$T/hit.out" || fail "compile hit"
grep -Eq "^compile +none \(served from the cache\)$" "$T/hit.out" || fail "compile on a hit: $(cat "$T/hit.out")"
$C status >"$T/st.out" || fail "status"
grep -q "(1 hit, 1 miss)" "$T/st.out" || fail "status hit rate: $(cat "$T/st.out")"
up=$(echo "$short" | tr a-f A-F)
$C cache push "$up" >"$T/push2.out" 2>&1 || fail "cache push of an upper-case prefix: $(cat "$T/push2.out")"
$C cache ls -k "$up" --no-signature >"$T/ls.k" 2>&1 || fail "cache ls -k in upper case: $(cat "$T/ls.k")"
grep -q "^$short" "$T/ls.k" || fail "cache ls -k upper case found nothing: $(cat "$T/ls.k")"
rc=0; $C cache push 0123xyz >"$T/push3.out" 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "cache push of a non-hex key: exit $rc, $(cat "$T/push3.out")"

# item 6: entries of different targets are told apart
$C compile --target trn2 "$T/va.nkir" >/dev/null || fail "compile for trn2"
$C cache ls --no-signature >"$T/ls.t" || fail "cache ls"
head -1 "$T/ls.t" | grep -q "KERNEL  *TARGET" || fail "no TARGET column: $(cat "$T/ls.t")"
grep -q "vector_add  *trn2 " "$T/ls.t" && grep -q "vector_add  *default (trn1) " "$T/ls.t" ||
	fail "cache ls targets: $(cat "$T/ls.t")"

# item 11: pinning a pinned entry says so
$C cache pin "$short" >"$T/pin1.out" || fail "pin"
grep -q "^pinned 1 entry$" "$T/pin1.out" || fail "pin: $(cat "$T/pin1.out")"
$C cache pin "$short" >"$T/pin2.out" || fail "pin again"
grep -q "^1 entry was pinned already$" "$T/pin2.out" || fail "pin of a pinned entry: $(cat "$T/pin2.out")"
$C --json cache pin "$short" >"$T/pin3.json" || fail "pin --json"
[ "$(json_get "$T/pin3.json" "d['unchanged']")" = 1 ] || fail "pin --json: $(cat "$T/pin3.json")"
$C cache unpin "$short" >"$T/unpin.out" || fail "unpin"
grep -q "^unpinned 1 entry$" "$T/unpin.out" || fail "unpin: $(cat "$T/unpin.out")"

# item 4: offline commands follow -s to that nkid's cache directory
$C cache gc --json >"$T/gc.json" 2>"$T/gc.err" || fail "cache gc through -s: $(cat "$T/gc.err")"
$C cache export --offline "$T/b.nkb" >"$T/exp.out" 2>&1 || fail "cache export --offline through -s: $(cat "$T/exp.out")"
[ -s "$T/b.nkb" ] || fail "no bundle"
# a socket nothing serves: say what to give instead of guessing
rc=0; "$NKICTL" -s "$T/none.sock" cache gc >"$T/gc2.out" 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -q -- "--cache-dir" "$T/gc2.out" ||
	fail "cache gc with a dead -s: exit $rc, $(cat "$T/gc2.out")"

# item 12: import into a directory that does not exist yet
$C cache import --cache-dir "$T/new/cache" "$T/b.nkb" >"$T/imp.out" 2>&1 ||
	fail "offline import into a new directory: $(cat "$T/imp.out")"
grep -q "imported 2 entries" "$T/imp.out" || fail "import: $(cat "$T/imp.out")"
stop_nkid || fail "nkid exited non-zero"
echo ok
