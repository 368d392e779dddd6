#!/bin/sh
# kill -9 of 5 of 10 clients with queued work: their jobs leave the queue
# within 1 s and never run; the other five complete in submission order.
. "$(dirname "$0")/lib.sh"

trace_va 128,512
ones_npy "$T/x.npy" 128,512
start_nkid
"$NKICTL" compile "$T/va.nkir" >/dev/null || fail "compile failed"

queued() {
	"$NKICTL" --json status >"$T/st.json" && json_get "$T/st.json" "d['jobs']['queued']"
}

# A lease holds the core so that the runs queue behind it.
"$NKICTL" lock -- sleep 30 &
lock_pid=$!
n=0
until "$NKICTL" --json status >"$T/st.json" &&
	[ "$(json_get "$T/st.json" "d['cores'][0]['state']")" = leased ]; do
	n=$((n + 1)); [ $n -lt 100 ] || fail "the lease was never granted"; sleep 0.05
done
i=1
while [ $i -le 10 ]; do
	"$NKICTL" run "$T/va.nkir" -i x="$T/x.npy" -i y="$T/x.npy" -o "$T/o$i" \
		>"$T/run$i.out" 2>&1 &
	eval "pid$i=\$!"
	n=0; while [ "$(queued)" -lt $i ]; do
		n=$((n + 1)); [ $n -lt 100 ] || fail "run $i never queued"; sleep 0.05
	done
	i=$((i + 1))
done
"$NKICTL" --json jobs >"$T/queued.json"

for i in 2 4 6 8 10; do eval "kill -9 \$pid$i"; done
t0=$(date +%s%N)
while [ "$(queued)" -ne 5 ]; do
	[ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 1000 ] ||
		fail "$(queued) jobs queued 1 s after kill -9 of 5 of 10 clients"
	sleep 0.05
done
kill $lock_pid
for i in 1 3 5 7 9; do
	eval "wait \$pid$i" || fail "run $i failed: $(cat "$T/run$i.out")"
done
for i in 2 4 6 8 10; do eval "wait \$pid$i" 2>/dev/null || true; done

"$NKICTL" --json jobs --all >"$T/all.json"
"$PY" - "$T/queued.json" "$T/all.json" <<'PYEOF' || fail "history: $(cat "$T/all.json")"
import json, sys
queued = [j for j in json.load(open(sys.argv[1]))["jobs"] if j["kind"] == "run"]
assert len(queued) == 10, queued
jobs = {j["id"]: j for j in json.load(open(sys.argv[2]))["jobs"]}
order = [j["id"] for j in sorted(queued, key=lambda j: j["queued_at"])]
killed, kept = order[1::2], order[0::2]
for i in killed:
    j = jobs[i]
    assert j["started_at"] is None and j["state"] == "cancelled", j
for i in kept:
    assert jobs[i]["state"] == "done" and jobs[i]["status"] == "OK", jobs[i]
starts = [jobs[i]["started_at"] for i in kept]
assert starts == sorted(starts), starts
PYEOF

stop_nkid || fail "nkid exited non-zero"
echo ok
