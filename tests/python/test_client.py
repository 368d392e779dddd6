"""The gRPC client against an in-process stand-in server on a Unix socket:
channel setup, Run/Simulate round trips and error mapping."""

import os
from concurrent import futures

import grpc
import numpy as np
import pytest

import nkid
from nkid import nki
from nkid._proto import nkid_pb2 as pb, nkid_pb2_grpc as pb_grpc, nkir_pb2 as ir
from nkid.client import Client, get_client
import nkir_ref
from kernels import elementwise as ew


class StandIn(pb_grpc.NkidServicer):
    """Executes on the reference interpreter; rejects > 128 partitions."""

    def __init__(self):
        self.ref = nkir_ref.RefClient()

    def Ping(self, request, context):
        return pb.PingReply(payload=request.payload)

    def _check(self, request, context):
        k = ir.Kernel()
        k.ParseFromString(request.ref.kernel.ir)
        for t in k.tensors:
            if t.kind == ir.TENSOR_TILE and t.shape[0] > 128:
                path = os.path.basename(k.files[t.loc.file])
                context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                              "cannot compile '%s': Size of partition dimension %d exceeds"
                              " architecture limitation of 128 (%s:%d)"
                              % (k.name, t.shape[0], path, t.loc.line))

    def Run(self, request, context):
        self._check(request, context)
        return self.ref.run(request.ref, request.inputs)

    def Simulate(self, request, context):
        self._check(request, context)
        return self.ref.simulate(request.ref, request.inputs)


@pytest.fixture
def standin(tmp_path, monkeypatch):
    sock = str(tmp_path / "s.sock")
    server = grpc.server(futures.ThreadPoolExecutor(4), options=[
        ("grpc.max_receive_message_length", 2 ** 31 - 1),
        ("grpc.max_send_message_length", 2 ** 31 - 1)])
    svc = StandIn()
    pb_grpc.add_NkidServicer_to_server(svc, server)
    server.add_insecure_port("unix:" + sock)
    server.start()
    monkeypatch.setenv("NKID_SOCKET", sock)
    yield svc
    server.stop(0)


def test_ping(standin):
    assert Client().ping(b"abc") == b"abc"


def test_run_and_simulate_roundtrip(standin):
    a = np.random.rand(256, 1024).astype(np.float32)
    np.testing.assert_allclose(ew.add_tiled(a, a), a + a)
    np.testing.assert_allclose(nki.simulate_kernel(ew.add_tiled, a, a), a + a)
    ref = standin.ref.calls[-1][1]
    assert ref.kernel.format == "nkir/1" and len(ref.spec_key) == 64
    assert ref.kernel.source_files[0].endswith("elementwise.py")


def test_large_tensor(standin):
    a = np.ones((1024, 4096), np.float32)         # 16 MiB each way
    out = ew.add_tiled(a, a)
    assert out.shape == a.shape and (out == 2).all()


def test_invalid_argument_is_verbatim(standin):
    with pytest.raises(nkid.NkidError) as e:
        ew.wide_partition(np.zeros((256, 64), np.float32))
    assert e.value.code == "INVALID_ARGUMENT"
    assert str(e.value).startswith("cannot compile 'wide_partition': Size of partition"
                                   " dimension 256 exceeds architecture limitation of 128"
                                   " (elementwise.py:")


def test_client_per_process_and_socket(standin):
    assert get_client() is get_client()
    assert get_client().socket == os.environ["NKID_SOCKET"]
