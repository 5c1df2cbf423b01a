"""What one gRPC call sends: the method found in a proto, the JSON request encoded with it, every problem one line."""

import socket
from concurrent import futures

import grpc
import pytest
from google.protobuf import descriptor_pb2
from grpc_reflection.v1alpha import reflection

from retrystorm.errors import UserError
from retrystorm.runner import grpc_call
from retrystorm.target.service.grpc_proto import (
    FULL_METHOD,
    SERVICE,
    descriptor_pool_with_target,
    file_descriptor_proto,
)


def test_the_builtin_target_s_request_is_encoded_with_its_own_descriptor():
    raw = grpc_call.request_bytes(grpc_call.builtin_protos(), FULL_METHOD, '{"payload": "aGk="}')
    assert raw == b"\n\x02hi"  # field 1, length 2, b"hi"


@pytest.mark.parametrize(
    ("method", "request_json", "expected"),
    [
        ("/nope.Svc/M", "{}", "has no service 'nope.Svc'; its services: retrystorm.target.v1.Target"),
        ("/retrystorm.target.v1.Target/Ping", "{}", "v1.Target has no method 'Ping'; its methods: Echo"),
        (FULL_METHOD, '{"name": "x"}', 'Message type "retrystorm.target.v1.EchoRequest" has no field named "name"'),
        (FULL_METHOD, '{"payload": 5}', "expected a retrystorm.target.v1.EchoRequest message in protobuf's JSON"),
    ],
)  # fmt: skip
def test_an_unknown_method_or_a_message_that_does_not_match_is_one_line(method, request_json, expected):
    with pytest.raises(UserError) as caught:
        grpc_call.request_bytes(grpc_call.builtin_protos(), method, request_json)
    assert expected in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_descriptor_set_file_gives_the_method(tmp_path):
    path = tmp_path / "target.pb"
    path.write_bytes(descriptor_pb2.FileDescriptorSet(file=[file_descriptor_proto()]).SerializeToString())
    protos = grpc_call.from_descriptor_set(path)
    assert grpc_call.request_bytes(protos, FULL_METHOD, '{"payload": "AA=="}') == b"\n\x01\x00"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"not protobuf at all \xff\xff", "not a FileDescriptorSet; expected the output of protoc --include_imports"),
        (None, "cannot read it: No such file or directory"),
    ],
)
def test_a_bad_descriptor_set_is_one_line_naming_the_field(tmp_path, content, expected):
    path = tmp_path / "set.pb"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(UserError) as caught:
        grpc_call.from_descriptor_set(path)
    assert str(caught.value).startswith(f"grpc.descriptor_set: {path}: ")
    assert expected in str(caught.value)


def test_a_descriptor_set_missing_an_import_says_so(tmp_path):
    proto = file_descriptor_proto()
    proto.dependency.append("google/protobuf/empty.proto")
    path = tmp_path / "set.pb"
    path.write_bytes(descriptor_pb2.FileDescriptorSet(file=[proto]).SerializeToString())
    with pytest.raises(UserError) as caught:
        grpc_call.from_descriptor_set(path)
    assert "imports 'google/protobuf/empty.proto' but does not hold it; build it with protoc --include_imports" in str(
        caught.value
    )


@pytest.fixture
def reflecting_server():
    """A bare grpcio server on loopback serving reflection for the built-in target's proto (no handler)."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    reflection.enable_server_reflection((SERVICE, reflection.SERVICE_NAME), server, pool=descriptor_pool_with_target())
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(0).wait()


def test_server_reflection_gives_the_method_and_names_an_unknown_service(reflecting_server):
    protos = grpc_call.from_reflection(reflecting_server, SERVICE)
    assert grpc_call.request_bytes(protos, FULL_METHOD, '{"payload": "aGk="}') == b"\n\x02hi"
    with pytest.raises(UserError) as caught:
        grpc_call.from_reflection(reflecting_server, "other.Service")
    assert f"grpc: server reflection at {reflecting_server}: " in str(caught.value)
    assert "expected a service it knows (or give grpc.descriptor_set)" in str(caught.value)


def test_an_unreachable_reflection_service_is_one_line():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connections are refused
        with pytest.raises(UserError) as caught:
            grpc_call.from_reflection(f"127.0.0.1:{port}", SERVICE, timeout_s=1.0)
    assert str(caught.value).startswith(f"grpc: server reflection at 127.0.0.1:{port}: ")
    assert "give grpc.descriptor_set, or check the address" in str(caught.value)


def test_a_service_without_reflection_is_told_to_give_a_descriptor_set():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with pytest.raises(UserError) as caught:
            grpc_call.from_reflection(f"127.0.0.1:{port}", SERVICE)
    finally:
        server.stop(0).wait()
    assert "the service does not serve reflection; give grpc.descriptor_set" in str(caught.value)
