"""The NeuronCore model on kernels of other families: nki-samples' reference
kernels against the latency thresholds of their unit tests (docs/model.md,
"Kernels of other families").

    PYTHONPATH=client/python .venv/bin/python scripts/model_proxies.py \\
        [--target trn1] [--rev 0898a77] /path/to/nki-samples[.git]

The kernels are not part of this repository: each reference module is taken
from the checkout (a work tree, or a bare repository at --rev via git show)
into a scratch directory with only its `neuronxcc` imports renamed to
nkid's, traced with placeholder inputs of the unit test's shapes and
costed by build/bin/nkimodel (nothing runs; $NKIMODEL names another).
The adaptive_avg_pool2d thresholds are a measured p99 x 1.05 ("65 *
1.05"): the figure is the measurement (65); those nine are also the
pooling family of `make bench`'s public cases, through a kernel of this
project's (tests/python/kernels/perf_pool.py). The others are bounds the
p50 (attention: p1; allocated attention: p50 x 1.05) must meet: the ratio
is against the bound, in brackets.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
NKIMODEL = os.path.join(TOP, "build", "bin", "nkimodel")
REF = "src/nki_samples/reference"
MODULES = ("vision", "attention", "allocated_attention", "allocated_fused_linear")

# (module, kernel, grid, tensor shapes, other arguments, dtype, figure, a bound?)
POOL = [((1, 64, 56, 56), 7, "float32", 65), ((2, 128, 28, 28), 7, "float32", 109),
        ((1, 256, 14, 14), 7, "float16", 88), ((4, 64, 56, 56), (7, 7), "float32", 152),
        ((2, 128, 28, 28), (14, 14), "float32", 327), ((1, 512, 7, 7), 1, "float32", 14),
        ((8, 64, 32, 32), (4, 4), "float16", 103), ((2, 2048, 32, 32), (3, 3), "float32", 564),
        ((2, 64, 256, 256), 1, "float32", 255)]
#: the unit test launches resize_nearest on a grid of in_b programs, each of
#: which loops over the whole batch; the model takes one program (ten
#: programs would move ten times the bytes the bound allows at the DMA peak).
CASES = ([("vision", "adaptive_avg_pool2d_kernel", (), [s], [o], dt, f, False)
          for s, o, dt, f in POOL] +
         [("vision", "resize_nearest_fixed_dma_kernel", (), [(10, 30, 20, 1280)],
           [(10, 59, 38, 1280)], "float32", 1740, True),
          ("vision", "resize_nearest_fixed_dma_kernel", (1,), [(1, 30, 20, 1280)],
           [(1, 59, 38, 1280)], "float16", 659, True),
          ("attention", "fused_self_attn_for_SD_small_head_size", (1,),
           [(1, 128, 4096), (1, 4096, 128), (1, 4096, 128)], [], "float32", 675 * 1.05, True),
          ("attention", "fused_self_attn_for_SD_small_head_size", (1,),
           [(1, 128, 4096), (1, 4096, 128), (1, 4096, 128)], [], "bfloat16", 536 * 1.05,
           True),
          ("attention", "fused_self_attn_for_SD_small_head_size", (1,),
           [(1, 64, 4096), (1, 4096, 64), (1, 4096, 64)], [], "float16", 600 * 1.05, True),
          ("allocated_attention", "allocated_fused_self_attn_for_SD_small_head_size", (1,),
           [(1, 128, 4096), (1, 128, 4096), (1, 4096, 128)], [], "float32", 410 * 1.05, True),
          ("allocated_attention", "allocated_fused_self_attn_for_SD_small_head_size", (1,),
           [(1, 128, 4096), (1, 128, 4096), (1, 4096, 128)], [], "bfloat16", 380 * 1.05,
           True),
          ("allocated_attention", "allocated_fused_self_attn_for_SD_small_head_size", (1,),
           [(1, 128, 5120), (1, 128, 5120), (1, 5120, 128)], [], "bfloat16", 586 * 1.05,
           True),
          ("allocated_fused_linear", "allocated_fused_rms_norm_qkv", (),
           [(1, 128, 512), (512, 512)], [], "float16", 25, True),
          ("allocated_fused_linear", "allocated_fused_rms_norm_qkv", (),
           [(1, 512, 1024), (1024, 384)], [], "bfloat16", 40, True),
          ("allocated_fused_linear", "allocated_fused_rms_norm_qkv", (),
           [(1, 128, 1024), (1024, 512)], [], "bfloat16", 28, True),
          ("vision", "select_and_scatter_kernel", (),
           [(8, 64, 112, 112), (8, 64, 56, 56)], [], "float32", 4500, True)])


def fetch(src, rev, dst):
    """The reference modules, imports renamed, into dst."""
    for m in MODULES:
        path = "%s/%s.py" % (REF, m)
        if os.path.isdir(os.path.join(src, REF)):
            with open(os.path.join(src, path)) as f:
                text = f.read()
        else:
            text = subprocess.run(["git", "-C", src, "show", "%s:%s" % (rev, path)],
                                  check=True, capture_output=True, text=True).stdout
        text = re.sub(r"\bfrom neuronxcc import nki\b", "from nkid import nki", text)
        text = re.sub(r"\bneuronxcc\.nki\b", "nkid.nki", text)
        with open(os.path.join(dst, m + ".py"), "w") as f:
            f.write(text)


def model(kern, grid, args, target, tmp):
    import json
    from nkid import tracer, trace as ktrace
    fn = getattr(kern, "func", kern)
    t = tracer.trace(fn, args, {}, grid, target=target)
    path = os.path.join(tmp, "k.nkir")
    ktrace.save(t, path)
    out = subprocess.run([os.environ.get("NKIMODEL", NKIMODEL), "-j", path],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip())
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="trn1")
    ap.add_argument("--rev", default="0898a77")
    ap.add_argument("samples")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="nkid-proxies.")
    try:
        table(a, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def table(a, tmp):
    """The table of CASES, the nki-samples modules fetched into tmp."""
    fetch(a.samples, a.rev, tmp)
    sys.path.insert(0, tmp)
    import importlib
    import nkid.nki.language as nl
    import nkid.nki.typing as nt
    within, worst = 0, 0.0
    for mod, name, grid, shapes, extra, dt, fig, bound in CASES:
        kern = getattr(importlib.import_module(mod), name)
        targs = tuple(nt.tensor[list(x), getattr(nl, dt)] for x in shapes) + tuple(extra)
        args = shapes + extra
        try:
            s = model(kern, grid, targs, a.target, tmp)
        except Exception as e:          # report, go on
            print("%-38s %-34s %s: %s" % (name[:38], str(args)[:34], dt, e))
            continue
        us = s["total_time_us"]
        r = us / fig
        rr = max(r, 1 / r)
        if not bound:
            within += rr <= 1.5
            worst = max(worst, rr)
        print("%-38s %-34s %-8s %8.1f us  figure %7.1f  %s" % (
            name[:38], str(args)[:34], dt, us, fig,
            "(%.2f)" % r if bound else "%.2f" % r))
    n = sum(1 for c in CASES if not c[7])
    print("measured cases (adaptive_avg_pool2d): %d of %d within 1.5x, max ratio %.2f"
          % (within, n, worst))


if __name__ == "__main__":
    main()
