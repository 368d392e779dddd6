#!/bin/sh
# Config checking (nkid -n), the single-instance lock, and SIGHUP reload.
. "$(dirname "$0")/lib.sh"

# The shipped config lists every key at its built-in default.
"$NKID" -n -v >"$T/defaults" 2>&1 || fail "nkid -n -v failed"
"$NKID" -n -v -c "$TOP/config/nkid.json" >"$T/shipped" 2>&1 || fail "config/nkid.json rejected"
grep -v "is valid" "$T/defaults" >"$T/d"; grep -v "is valid" "$T/shipped" >"$T/s"
cmp -s "$T/d" "$T/s" || fail "config/nkid.json differs from the defaults: $(diff "$T/d" "$T/s")"
"$PY" - "$T/d" "$TOP/config/nkid.json" <<'P' || fail "config/nkid.json does not list every key"
import json, sys
cfg = json.load(open(sys.argv[2]))
for line in open(sys.argv[1]):
    node = cfg
    for part in line.split(" = ")[0].split("."):
        assert part in node, "missing key " + line.split(" = ")[0]
        node = node[part]
P

# A valid config passes -n.
cp "$TOP/config/test.json" "$T/good.json"
"$NKID" -n -c "$T/good.json" >"$T/out" 2>&1 || fail "valid config rejected: $(cat "$T/out")"

# An unknown key is named, with its path.
cat >"$T/bad.json" <<'J'
{ "log_level": "info", "cpu": { "coers": 2 } }
J
rc=0; "$NKID" -n -c "$T/bad.json" >"$T/out" 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "unknown key accepted"
grep -q "coers" "$T/out" || fail "unknown key not named: $(cat "$T/out")"

# A bad value is named.
echo '{ "cpu": { "cores": 100000 } }' >"$T/bad2.json"
rc=0; "$NKID" -n -c "$T/bad2.json" >"$T/out" 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "out-of-bounds value accepted"
grep -q "cores" "$T/out" || fail "bad value not named: $(cat "$T/out")"

# Broken JSON.
echo '{ "cpu": ' >"$T/bad3.json"
rc=0; "$NKID" -n -c "$T/bad3.json" >"$T/out" 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "broken JSON accepted"

# One nkid per socket: the second names the first's pid and steals nothing.
start_nkid -c "$T/good.json"
rc=0; "$NKID" -s "$SOCK" --state-dir "$T/state2" >"$T/out" 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "second nkid started on the same socket"
grep -q "$NKID_PID" "$T/out" || fail "second nkid does not name the holder pid: $(cat "$T/out")"
"$NKICTL" ping -n 1 >/dev/null || fail "first nkid lost its socket"

# SIGHUP with a broken config keeps the old one and keeps serving.
cp "$T/bad.json" "$T/good.json"
kill -HUP "$NKID_PID"
sleep 0.3
"$NKICTL" ping -n 1 >/dev/null || fail "nkid stopped serving after a bad reload"
grep -qi "coers" "$LOG" || fail "bad reload not logged with the key"

# SIGHUP with a good config is applied.
echo '{ "log_level": "debug" }' >"$T/good.json"
kill -HUP "$NKID_PID"
sleep 0.3
grep -qi "reload" "$LOG" || fail "reload not logged"
"$NKICTL" ping -n 1 >/dev/null || fail "nkid stopped serving after reload"

stop_nkid || fail "nkid exited non-zero"
echo ok
