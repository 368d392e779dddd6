"""cpu.executor_threads: every kernel case gives the same bytes from an nkid
whose executor runs on one thread and from one that runs programs, loop
iterations and the rows of large ops side by side on four, and the answer
numpy gives. Two real daemons, started with configs."""

import json
import os
import shutil
import subprocess
import tempfile
import time

import ml_dtypes
import numpy as np
import pytest

import cases
from conftest import NKID
from kernels import elementwise as ew, layout, matmul as mm, norms

THREADS = (1, 4)


def _start(tmp, threads):
    cfg = os.path.join(tmp, "t%d.json" % threads)
    with open(cfg, "w") as f:
        json.dump({"cpu": {"executor_threads": threads}}, f)
    sock = os.path.join(tmp, "t%d.sock" % threads)
    proc = subprocess.Popen([NKID, "-c", cfg, "-s", sock, "--state-dir",
                             os.path.join(tmp, "t%d" % threads)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 15
    while not os.path.exists(sock):
        assert proc.poll() is None, "nkid exited with %s" % proc.returncode
        assert time.monotonic() < deadline, "no socket at %s" % sock
        time.sleep(0.02)
    return proc, sock


@pytest.fixture(scope="module")
def nkids():
    if not os.path.exists(NKID):
        pytest.skip("%s does not exist (run make, or set NKID)" % NKID)
    tmp = tempfile.mkdtemp(prefix="nkid-threads-")
    procs = []
    old = os.environ.get("NKID_SOCKET")
    try:
        for t in THREADS:
            procs.append(_start(tmp, t))
        yield [s for _, s in procs]
    finally:
        if old is None:
            os.environ.pop("NKID_SOCKET", None)
        else:
            os.environ["NKID_SOCKET"] = old
        for p, _ in procs:
            p.terminate()
            p.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


def _big():
    """Cases large enough that every kind of split happens: a grid of 64
    programs, loops of 8 and 16 iterations, [128, 4096] ops."""
    r = cases.rng
    a = r.standard_normal((1024, 2048)).astype(np.float32)
    b = r.standard_normal((1024, 2048)).astype(np.float32)
    h = r.standard_normal((1024, 2048)).astype(ml_dtypes.bfloat16)
    xT = r.standard_normal((512, 1024)).astype(np.float32)
    y = r.standard_normal((512, 1024)).astype(np.float32)
    x = r.standard_normal((2000, 512)).astype(np.float32)
    g = r.standard_normal(512).astype(np.float32)
    e = np.exp(x - x.max(1, keepdims=True))
    w = r.standard_normal((128, 4096)).astype(np.float32)
    img = r.standard_normal((128, 64, 64)).astype(np.float32)
    t2 = np.arange(128 * 64 * 64, dtype=np.float32).reshape(128, 4096)
    C = cases.Case
    return [
        C("add_spmd_64", ew.add_spmd[8, 4], [a, b], a + b),
        C("add_tiled_big", ew.add_tiled, [a, b], a + b),
        C("add_spmd_bf16", ew.add_spmd[8, 4], [h, h],
          (h.astype(np.float32) * 2).astype(ml_dtypes.bfloat16), 1e-2, 1e-2),
        C("mm_tiled_big", mm.mm_tiled, [xT, y], xT.T @ y, 1e-4, 1e-2),
        C("mm_hoisted_big", mm.mm_hoisted, [xT, y], xT.T @ y, 1e-4, 1e-2),
        C("mm_blocked_big", mm.mm_blocked, [xT, y], xT.T @ y, 1e-4, 1e-2),
        C("softmax_masked", norms.softmax_rows, [x], e / e.sum(1, keepdims=True), 1e-4, 1e-5),
        C("rms_norm_masked", norms.rms_norm, [x, g],
          x / np.sqrt((x * x).mean(1, keepdims=True) + 1e-6) * g, 1e-4, 1e-4),
        C("exp_square_sum_wide", ew.exp_square_sum, [w / 8],
          (np.exp(w / 8).sum(1, keepdims=True), ((w / 8) ** 2).sum(1, keepdims=True)),
          1e-4, 1e-3),
        C("pool_mean_big", layout.pool_mean, [img, 2],
          img.reshape(128, 32, 2, 32, 2).mean((2, 4)), 1e-5, 1e-6),
        C("swap_blocks_big", layout.swap_blocks, [t2, (64, 64)],
          t2.reshape(128, 64, 64).transpose(0, 2, 1).reshape(128, 4096), 0, 0),
    ]


CASES = cases.tier1() + cases.tier2() + _big()


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_same_bits_on_one_thread_and_four(nkids, case):
    outs = []
    for sock in nkids:
        os.environ["NKID_SOCKET"] = sock
        outs.append(_as_tuple(case.kernel(*case.args)))
    case.check(outs[-1] if len(outs[-1]) > 1 else outs[-1][0])
    for got, want in zip(outs[1], outs[0]):
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.ascontiguousarray(got).tobytes() == \
            np.ascontiguousarray(want).tobytes(), case.name
