#!/bin/sh
# The fast path under valgrind: warm calls, nkictl ping -f, garbage and
# empty frames, a stranger at a rendezvous, an offer never taken, a client
# killed with a call queued behind a lease, and a stop with connections
# open; no invalid accesses, no definite leaks, clean exit.
. "$(dirname "$0")/lib.sh"

start_nkid_valgrind
"$NKICTL" ping -f -n 100 >/dev/null || fail "ping -f failed"
cat >"$T/fp.py" <<'PY'
import os, socket, struct, subprocess, sys, time
import numpy as np
from nkid import nki, _fastpath
from nkid.client import get_client
from nkid._proto import nkid_pb2 as pb
import nkid.nki.language as nl

@nki.jit
def plus_one(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(a) + 1.0)
    return out

what = sys.argv[1]
a = np.ones((128, 8), np.float32)
if what == "warm":
    for _ in range(30):
        assert (plus_one(a) == 2).all()
    assert _fastpath._paths.get(id(get_client()))._next >= 28
elif what == "abuse":
    c = get_client()
    for frame in (b"\x01\x02", b"", struct.pack("<IIII", 1, 1, 99, 0)):
        offer = c.call("FastPath", pb.FastPathRequest(), timeout=10)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.settimeout(30)
        s.connect(offer.path)
        s.recv(64)
        s.send(frame)
        s.recv(4096)
        s.close()
    # A stranger at a rendezvous, and an offer left untaken.
    offer = c.call("FastPath", pb.FastPathRequest(), timeout=10)
    subprocess.run([sys.executable, "-c", "import socket,sys; s=socket.socket("
                    "socket.AF_UNIX, socket.SOCK_SEQPACKET); s.connect(sys.argv[1]); "
                    "s.settimeout(30); s.recv(64)", offer.path], timeout=60)
    c.call("FastPath", pb.FastPathRequest(), timeout=10)
elif what == "loop":
    plus_one(a)
    print("warm", flush=True)
    while True:
        plus_one(a)
PY
cd "$T"
"$PY" fp.py warm || fail "warm calls over the fast path failed"
"$PY" fp.py abuse || fail "abuse of the fast path failed"
"$PY" fp.py loop >"$T/loop.out" &
loop=$!
i=0
until grep -q warm "$T/loop.out" 2>/dev/null; do
	i=$((i + 1)); [ $i -lt 600 ] || fail "the looping client did not warm up"
	sleep 0.1
done
# Its next call queues behind a lease: killed with it in flight.
"$NKICTL" lock -- sleep 300 >/dev/null 2>&1 &
lock=$!
i=0
until "$NKICTL" jobs | grep -q 'run.*queued'; do
	i=$((i + 1)); [ $i -lt 600 ] || fail "no run queued behind the lease"
	sleep 0.1
done
kill -9 $loop
wait $loop 2>/dev/null || true
kill $lock 2>/dev/null || true
wait $lock 2>/dev/null || true
# Connections open at the stop: one idle, one set up and never used.
"$PY" -c 'import time; from nkid import _fastpath; from nkid.client import get_client
assert _fastpath.get(get_client()) is not None
print("open", flush=True); time.sleep(30)' >"$T/idle.out" &
idle=$!
i=0
until grep -q open "$T/idle.out" 2>/dev/null; do
	i=$((i + 1)); [ $i -lt 600 ] || fail "the idle client did not connect"
	sleep 0.1
done
stop_nkid_valgrind
kill $idle 2>/dev/null
wait $idle 2>/dev/null || true
echo ok
