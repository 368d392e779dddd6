"""Every string nkid stores or returns is valid UTF-8 (issue 30, 3): a
kernel whose IR names a source file with bytes that are not UTF-8 fails
to compile with a message that is, and CacheList from this package still
works afterwards (before, the failed entry's log quoted the raw name and
every Python client's CacheList failed with "Exception deserializing
response!")."""

import pytest

from nkid._proto import nkid_pb2 as pb
from nkid._proto import nkir_pb2
from nkid.client import Client, NkidError


def hostile_ref():
    # A kernel-level error (a launch grid of rank 9) is located at the
    # kernel's def line, so its message quotes files[0]. The name is
    # written as ASCII and its bytes replaced on the wire: protobuf in
    # Python writes only valid UTF-8 strings.
    k = nkir_pb2.Kernel(name="utf8_hostile", files=["QQQQ.py"],
                        loc=nkir_pb2.Loc(file=0, line=3), grid=[1] * 9)
    ir = k.SerializeToString().replace(b"QQQQ", b"\xff\xfe\xc0\x80")
    assert b"\xff\xfe" in ir
    return pb.KernelRef(kernel=pb.Kernel(name="utf8_hostile", format="nkir/1", ir=ir))


def test_non_utf8_file_name_then_cache_list(nkid_socket):
    cl = Client(nkid_socket)
    with pytest.raises(NkidError) as e:
        cl.compile(hostile_ref())
    assert "UTF-8" in str(e.value) or "grid" in str(e.value)
    # The failure is cached (deterministic): listing must still decode.
    reply = cl.call("CacheList", pb.CacheListRequest(limit=1000))
    logs = [x.log for x in reply.entries if x.kernel == "utf8_hostile"]
    assert logs, "the failed entry is not listed"
    for log in logs:
        log.encode("utf-8")     # a str: decoded, so it was valid UTF-8
    # Asked again: the cached failure answers, still readable.
    with pytest.raises(NkidError):
        cl.compile(hostile_ref())
    cl.call("CacheList", pb.CacheListRequest(limit=1000))


def test_nul_in_a_string_field_refused(nkid_socket):
    """dtype "float32\\0" was read as float32 (protobuf-c's C strings end
    at the NUL): any string field with a NUL is refused, naming it."""
    import numpy as np
    x = np.ones((4,), np.float32)
    t = pb.Tensor(name="x", dtype="float32\x00junk", shape=[4], data=x.tobytes())
    cl = Client(nkid_socket)
    with pytest.raises(NkidError) as e:
        cl.call("Simulate", pb.SimulateRequest(ref=hostile_ref(), inputs=[t]))
    assert e.value.code == "INVALID_ARGUMENT"
    assert "'Tensor.dtype' holds a NUL byte" in str(e.value)


def test_non_utf8_string_field_refused(nkid_socket):
    """A string field that is not UTF-8, at any depth, is refused on the
    wire with its name (the bytes written by hand: Python's protobuf
    writes only UTF-8)."""
    import grpc
    from nkid.client import Client as C
    req = pb.CompileRequest(ref=pb.KernelRef(
        kernel=pb.Kernel(name="ok", format="nkir/1", ir=b"x"), options="QQQQ"))
    raw = req.SerializeToString().replace(b"QQQQ", b"\xc3\x28\xa0\xa1")
    ch = grpc.insecure_channel("unix:" + nkid_socket)
    try:
        call = ch.unary_unary("/nkid.v1.Nkid/Compile")
        with pytest.raises(grpc.RpcError) as e:
            call(raw, timeout=10)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "'KernelRef.options' is not valid UTF-8" in e.value.details()
    finally:
        ch.close()
    assert C(nkid_socket).ping(b"still") == b"still"
