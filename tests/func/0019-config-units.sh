#!/bin/sh
# Config in a person's units (issue 31, items 13 and 21): nkid -n names the
# key meant for a misspelt one and takes "16GB"; a reload logs a changed
# size in units ("from 16 GiB to 2 MiB"), not in bytes.
. "$(dirname "$0")/lib.sh"

echo '{ "cache": { "max_byte": "16GiB" } }' >"$T/typo.json"
rc=0; "$NKID" -n -c "$T/typo.json" >"$T/typo.out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "a misspelt key: exit $rc"
grep -q "unknown key 'cache.max_byte' (did you mean 'cache.max_bytes'?)" "$T/typo.out" ||
	fail "no suggestion: $(cat "$T/typo.out")"
echo '{ "cache": { "max_bytes": "16GB" } }' >"$T/gb.json"
"$NKID" -n -v -c "$T/gb.json" >"$T/gb.out" 2>&1 || fail "16GB refused: $(cat "$T/gb.out")"
grep -q "^cache.max_bytes = 16000000000$" "$T/gb.out" || fail "16GB: $(cat "$T/gb.out")"

echo '{ "cache": { "max_bytes": "16GiB" } }' >"$T/c.json"
start_nkid -c "$T/c.json"
echo '{ "cache": { "max_bytes": "2MiB" } }' >"$T/c.json"
kill -HUP "$NKID_PID"
i=0
while ! grep -q "config: 'cache.max_bytes' changed" "$LOG"; do
	i=$((i + 1)); [ $i -lt 50 ] || fail "no reload in the log"; sleep 0.1
done
grep -q "config: 'cache.max_bytes' changed from 16 GiB to 2 MiB$" "$LOG" ||
	fail "the reload log: $(grep "changed" "$LOG")"
stop_nkid || fail "nkid exited non-zero"
echo ok
