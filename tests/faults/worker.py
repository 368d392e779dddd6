"""A client process of make faults: compiles new kernels and runs them
against nkid until told to stop, surviving nkid's deaths, and writes what
nkid acknowledged and what it got to a file, one line each:

    ACK <neff_key> <a> <seed>     Compile answered OK (the store is durable)
    RUN ok|WRONG <neff_key>       Run by key answered, result checked
    ERR <status>                  a call failed (nkid killed, restarting)

    python worker.py SOCKET OUTFILE STOPFILE WORKER_ID"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kernels  # noqa: E402
from nkid.client import Client, from_wire  # noqa: E402
from nkid.errors import NkidError  # noqa: E402
from nkid._proto import nkid_pb2 as pb  # noqa: E402


def main():
    sock, out, stop, wid = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    cl = None
    i = 0
    with open(out, "a", buffering=1) as f:
        while not os.path.exists(stop):
            # a = wid + i/1024 is exact in float32: numpy and nkid agree.
            a, seed = wid + (i % 16384) / 1024.0, i % 7
            i += 1
            c = kernels.Case(a, seed=seed)
            try:
                if cl is None:
                    cl = Client(sock)
                rep = cl.call("Compile", pb.CompileRequest(ref=c.ref), timeout=10)
                f.write("ACK %s %r %d\n" % (rep.neff_key, a, seed))
                rr = cl.call("Run", pb.RunRequest(ref=pb.KernelRef(neff_key=rep.neff_key),
                                                  inputs=c.inputs), timeout=10)
                ok = c.check(from_wire(rr.outputs[0]))
                f.write("RUN %s %s\n" % ("ok" if ok else "WRONG", rep.neff_key))
            except NkidError as e:
                f.write("ERR %s\n" % e.code)
                if cl is not None:
                    cl.close()
                cl = None
                time.sleep(0.05)


if __name__ == "__main__":
    main()
