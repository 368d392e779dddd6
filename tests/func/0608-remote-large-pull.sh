#!/bin/sh
# Large values and remote.timeout_ms: a command that moves a value gets
# 50 ms per MiB beyond the timeout, counted from when the answers ahead of
# it are in, so `cache pull` of 8 entries of 32 MiB with a 300 ms timeout
# pulls all 8 (before, every GETRANGE of the batch had 300 ms from when
# it was sent, and those behind the first transfers failed). The entries are real ones with their NEFF
# replaced by 32 MiB and signed again with the fleet key, as a host with
# that key could write them; a pull stores them verified.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/remote-lib.sh"

start_redis
make_kernels "$T/k" 8
fleet_config "$T/a.json" '"max_entry_bytes": "64MiB"'
start_host 1 "$T/a.json"
for i in 0 1 2 3 4 5 6 7; do
	hctl 1 --json compile "$T/k/k$i.nkir" >"$T/c$i.json" || fail "compile $i"
	wait_entry "$(json_get "$T/c$i.json" 'd["neff_key"]')"
done
# Each entry's blob becomes 32 MiB, its size and digest fields follow.
for i in 0 1 2 3 4 5 6 7; do
	k=$(json_get "$T/c$i.json" 'd["neff_key"]')
	rcli --raw get "nkid:neff:$k" | head -c -1 >"$T/e$i"
	"$PY" - "$T/e$i" "$T/fleet.key" <<'P' || fail "cannot re-sign entry $i"
import hashlib, hmac, os, struct, sys
path, keyfile = sys.argv[1:]
v = open(path, "rb").read()
fkey = open(keyfile, "rb").read().rstrip(b"\r\n\t ")
assert v[:8] == b"NKIDRMT1" and hmac.compare_digest(
    hmac.new(fkey, v[:-32], hashlib.sha256).digest(), v[-32:]), "not an entry"
meta = struct.unpack_from("<I", v, 8)[0]
p, f = 12, []
while p < 12 + meta:
    n = struct.unpack_from("<I", v, p)[0]
    f.append(v[p + 4:p + 4 + n])
    p += 4 + n
blob = os.urandom(32 << 20)
f[8] = str(len(blob)).encode()
f[9] = hashlib.sha256(blob).hexdigest().encode()
m = b"".join(struct.pack("<I", len(x)) + x for x in f)
body = b"NKIDRMT1" + struct.pack("<I", len(m)) + m + struct.pack("<Q", len(blob)) + blob
open(path, "wb").write(body + hmac.new(fkey, body, hashlib.sha256).digest())
P
	rcli -x set "nkid:neff:$k" <"$T/e$i" >/dev/null || fail "cannot store entry $i"
done
[ "$(rcli strlen "nkid:neff:$(json_get "$T/c0.json" 'd["neff_key"]')")" -gt 33000000 ] ||
    fail "the entry did not grow"
REMOTE_TIMEOUT_MS=300 fleet_config "$T/b.json" '"max_entry_bytes": "64MiB"'
start_host 2 "$T/b.json"
i=0
until [ "$(hstat 2 'd["cache"]["remote"]["state"]')" = up ]; do
	i=$((i + 1)); [ $i -lt 50 ] || fail "host 2's tier not up: $(cat "$T/st.json")"; sleep 0.1
done
hctl 2 --json cache pull "$T/k/all.json" >"$T/pull.json" 2>"$T/pull.err" ||
    fail "cache pull failed: $(cat "$T/pull.err") $(cat "$T/pull.json") $(grep remote "$T/h2.log" | tail -8)"
[ "$(json_get "$T/pull.json" 'd["pulled"]')" = 8 ] || fail "pulled: $(cat "$T/pull.json")"
[ "$(hstat 2 'd["cache"]["remote"]["errors"]')" = 0 ] || fail "errors: $(cat "$T/st.json")"
echo ok
