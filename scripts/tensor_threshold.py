"""Measure the size from which shared-memory tensors beat inline protobuf
(nkid._shm.DEFAULT_THRESHOLD; docs/performance.md, "Tensor transfer").

    NKID=build/bin/nkid .venv/bin/python scripts/tensor_threshold.py

Starts nkid on a private socket, runs a copy kernel (tests/python/kernels/
copy.py) through nki.baremetal on [128, n] float32 inputs (int8 and
float16 for the smallest sizes) with tensors inline (NKID_SHM=0) and through /dev/shm (NKID_SHM_THRESHOLD=0),
interleaved, and prints the per-call p50 of each.
"""

import os
import subprocess
import sys
import tempfile
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "python"))


def main():
    import numpy as np
    from nkid import nki
    from kernels.copy import copy_tiles
    nkid = os.environ.get("NKID") or os.path.join(TOP, "build", "bin", "nkid")
    tmp = tempfile.mkdtemp(prefix="nkid-thr-")
    sock = os.path.join(tmp, "nkid.sock")
    proc = subprocess.Popen([nkid, "-s", sock, "--state-dir", os.path.join(tmp, "state")],
                            stderr=subprocess.DEVNULL)
    while not os.path.exists(sock):
        time.sleep(0.05)
    os.environ["NKID_SOCKET"] = sock
    k = nki.baremetal(copy_tiles)
    print("%10s %12s %12s" % ("bytes", "inline_us", "shm_us"))
    try:
        cases = [(np.int8, 512), (np.float16, 512)] + [
            (np.float32, c) for c in (512, 1024, 2048, 4096, 8192, 16384)]
        for dtype, cols in cases:
            x = (np.random.rand(128, cols) * 100).astype(dtype)
            res = {"0": [], "1": []}
            for _ in range(3):
                k(x)
            n = 40 if cols <= 8192 else 15
            for _ in range(n):
                for mode in ("0", "1"):
                    os.environ["NKID_SHM"] = mode
                    os.environ["NKID_SHM_THRESHOLD"] = "0"
                    t0 = time.perf_counter()
                    k(x)
                    res[mode].append((time.perf_counter() - t0) * 1e6)
            p = {m: sorted(v)[len(v) // 2] for m, v in res.items()}
            print("%10d %12.0f %12.0f" % (x.nbytes, p["0"], p["1"]), flush=True)
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
