"""A small serving loop on asyncio: requests arrive on a queue, each is
answered by a kernel call awaited through nkid (nkid.aio), many in flight
at once on one thread. nkid restarting meanwhile only delays the answers
(docs/python.md, "asyncio").

    python examples/serving_asyncio.py [--requests 200] [--concurrency 32]
"""

import argparse
import asyncio
import math
import time

import numpy as np

import nkid.aio
from nkid import nki
import nkid.nki.language as nl


@nki.jit
def gelu_bias(x, b):
    """gelu(x + b) for one [128, 512] tile: a decode step's worth of work."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.gelu(nl.add(nl.load(x), nl.load(b))))
    return out


async def serve(queue, results, bias):
    """One worker: take a request, await the kernel, hand back the answer."""
    while True:
        rid, x, arrived = await queue.get()
        try:
            y = await nkid.aio.call(gelu_bias, x, bias)
            results[rid] = (y, time.monotonic() - arrived)
        except nkid.NkidError as e:          # nkid's answer, verbatim
            results[rid] = (e, time.monotonic() - arrived)
        finally:
            queue.task_done()


async def main(requests, concurrency):
    rng = np.random.default_rng(0)
    bias = rng.standard_normal((128, 512), dtype=np.float32)
    queue = asyncio.Queue()
    results = {}
    workers = [asyncio.create_task(serve(queue, results, bias)) for _ in range(concurrency)]
    status = await nkid.aio.get_client().status()
    print("nkid %s pid %d, backend %s" % (status.version, status.pid, status.backend))
    t0 = time.monotonic()
    inputs = {}
    for rid in range(requests):
        x = rng.standard_normal((128, 512), dtype=np.float32)
        inputs[rid] = x
        queue.put_nowait((rid, x, time.monotonic()))
    await queue.join()
    took = time.monotonic() - t0
    for w in workers:
        w.cancel()
    await asyncio.gather(*workers, return_exceptions=True)

    failed = [r for r, (y, _) in results.items() if isinstance(y, Exception)]
    lat = sorted(ms for y, ms in results.values() if not isinstance(y, Exception))
    z = (inputs[0] + bias).astype(np.float64)
    want = 0.5 * z * (1 + np.vectorize(math.erf)(z / math.sqrt(2)))
    if 0 not in failed:
        err = float(np.max(np.abs(results[0][0] - want)))
        print("request 0: max |nkid - numpy gelu| = %.2e" % err)
    # Latency from arrival: all requests arrive at once, so it includes the
    # wait in the queue.
    print("%d requests, %d concurrent: %.0f requests/s, latency p50 %.1f ms, p99 %.1f ms,"
          " %d failed" % (requests, concurrency, requests / took,
                          lat[len(lat) // 2] * 1e3 if lat else 0,
                          lat[int(len(lat) * 0.99)] * 1e3 if lat else 0, len(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=32)
    a = ap.parse_args()
    raise SystemExit(asyncio.run(main(a.requests, a.concurrency)))
