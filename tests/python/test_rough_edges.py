"""The Python side of issue 31's rough edges: messages that name what is
wrong and suggest what would work."""
import os
import traceback

import numpy as np
import pytest

import nkid
from nkid import nki
import nkid.nki.language as nl
from nkid.client import Client, pb
from kernels import elementwise as ew


def test_int64_input_suggests_int32():
    # item 11: the suggested conversion is the nearest dtype NKI takes.
    y = np.zeros((128, 512), np.float32)
    with pytest.raises(TypeError) as e:
        ew.add_tiled(np.zeros((128, 512), np.int64), y)
    assert "parameter 'x' has dtype int64" in str(e.value)
    assert "x.astype(numpy.int32)" in str(e.value)
    with pytest.raises(TypeError) as e:
        ew.add_tiled(y, np.zeros((128, 512)))
    assert "y.astype(numpy.float32)" in str(e.value)


def test_regular_file_at_the_socket_path_is_not_a_socket(tmp_path):
    # item 11: as nkictl says it, not "nothing accepted the connection".
    path = tmp_path / "nkid.sock"
    path.write_text("")
    with pytest.raises(nkid.NkidError) as e:
        Client(str(path)).call("Ping", pb.PingRequest(), timeout=2)
    assert "it is not a socket" in str(e.value)
    assert "nothing accepted" not in str(e.value)


def test_benchmark_result_prints_its_figures(nkid_socket, monkeypatch):
    # item 22: print(bench.benchmark_result) shows the figures, and the note
    # names the host time the way each client shows it.
    monkeypatch.delenv("NKID_BENCHMARK_LATENCY", raising=False)
    x = np.ones((128, 512), np.float32)
    b = nki.benchmark(warmup=1, iters=3)(ew.add_tiled)
    b(x, x)
    r = b.benchmark_result
    text = str(r)
    assert "object at 0x" not in text and "object at 0x" not in repr(r)
    assert text.startswith("nc_latency:  min ") and "\ncpu_latency: min " in text
    assert "samples:     3" in text
    assert "nkictl: HOST CPU, Python: cpu_latency" in r.note
    assert repr(r).startswith("<BenchmarkResult nc_latency p50 ")


def test_device_print_floats_and_one_colon(nkid_socket):
    # item 19: float32 values read as floats (numpy's "1."), and a prefix
    # that ends in a colon does not get a second one.
    import cases
    x = np.arange(8, dtype=np.float32).reshape(2, 4) / 2
    _, text = cases.printed(nki.simulate_kernel, ew.print_tile, x)
    assert "tile t: " in text and "::" not in text, text
    assert "[[0. 0.5 1. 1.5]" in text, text


def test_simulate_kernel_of_a_list_is_the_documented_type_error(nkid_socket):
    # item 10: a.tolist() where a tensor goes is TypeError, naming it.
    a = np.ones((128, 512), np.float32)
    with pytest.raises(TypeError) as e:
        nki.simulate_kernel(ew.add_tiled, a.tolist(), a)
    assert str(e.value).startswith("All input and output tensors to the kernel must be"
                                   " numpy.ndarray when using this simulate_kernel API")
    assert "parameter 'x'" in str(e.value)


def test_print_shows_an_if_on_a_loop_index():
    # item 10: --print renders OP_IF as an if with its condition and sides.
    from nkid.tracer import trace
    from nkid.tracer.pretty import format_kernel
    from test_lang_branch import three_ways
    x = np.zeros((128, 8), np.float32)
    text = format_kernel(trace(three_ways, (x, 48)).kernel)
    assert "- = if()" not in text
    lines = [s.strip() for s in text.splitlines()]
    assert any(s.startswith("if ") and ">= 0:" in s for s in lines), text
    assert "else:" in lines, text


def _ours(frame):
    pkg = os.path.dirname(os.path.abspath(nkid.__file__)) + os.sep
    return os.path.abspath(frame.filename).startswith(pkg)


def _mismatched(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    left = nl.load(a)
    right = nl.load(b)
    both = nl.add(left, right)
    nl.store(out, value=both)
    return out


def test_tracer_error_keeps_the_users_frames_and_names_the_operands(monkeypatch):
    # item 9: no tracer frames between the call and the kernel's line, and
    # the message names the tiles the kernel named.
    monkeypatch.delenv("NKID_TRACEBACK", raising=False)
    a = np.ones((128, 512), np.float32)
    b = np.ones((64, 512), np.float32)
    with pytest.raises(ValueError) as e:
        nki.jit(_mismatched)(a, b)
    assert str(e.value).startswith("operands left [128, 512] and right [64, 512] are not"
                                   " broadcastable (partition dimension) (test_rough_edges.py:")
    frames = traceback.extract_tb(e.value.__traceback__)
    assert sum(_ours(f) for f in frames) <= 1, frames     # the door's raise only
    assert frames[-1].name == "_mismatched" and "nl.add" in frames[-1].line
    # NKID_TRACEBACK=full keeps them all.
    monkeypatch.setenv("NKID_TRACEBACK", "full")
    with pytest.raises(ValueError) as e:
        nki.jit(_mismatched)(a, b)
    assert sum(_ours(f) for f in traceback.extract_tb(e.value.__traceback__)) > 3


def test_compile_error_names_the_kernel_file_by_its_name(nkid_socket):
    # item 9: the daemon's (/abs/path/file.py:LINE) reads (file.py:LINE),
    # as the tracer's own errors; full_message keeps the path.
    x = np.zeros((256, 40), np.float32)
    with pytest.raises(nkid.NkidError) as e:
        ew.wide_partition(x)
    assert "(elementwise.py:" in str(e.value) and "/kernels/" not in str(e.value)
    assert os.path.join("kernels", "elementwise.py:") in e.value.full_message
