"""A small gRPC service of one's own for ``retrystorm run``'s live test: not the built-in target.

``python greeter.py PORT`` serves ``/demo.v1.Greeter/SayHello`` (``HelloRequest {string name = 1;}`` ->
``HelloReply {string message = 1;}``) on 127.0.0.1:PORT with server reflection, through grpcio's thread pool:
each call holds a worker for 20 ms. On SIGTERM it prints how many calls it answered and how many of them named
``storm`` (the request the scenario gives as JSON), and exits.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from concurrent import futures

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from grpc_reflection.v1alpha import reflection

SERVICE = "demo.v1.Greeter"


def file_proto() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(name="demo/v1/greeter.proto", package="demo.v1", syntax="proto3")
    for name, field in (("HelloRequest", "name"), ("HelloReply", "message")):
        message = proto.message_type.add(name=name)
        message.field.add(name=field, number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING, json_name=field)
    proto.service.add(name="Greeter").method.add(
        name="SayHello", input_type=".demo.v1.HelloRequest", output_type=".demo.v1.HelloReply"
    )
    return proto


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main(port: int) -> None:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file_proto())
    request_class = message_factory.GetMessageClass(pool.FindMessageTypeByName("demo.v1.HelloRequest"))
    reply_class = message_factory.GetMessageClass(pool.FindMessageTypeByName("demo.v1.HelloReply"))
    counts = {"calls": 0, "storm": 0}
    lock = threading.Lock()

    def say_hello(request, context):
        time.sleep(0.02)
        with lock:
            counts["calls"] += 1
            counts["storm"] += request.name == "storm"
        return reply_class(message=f"hello {request.name}")

    handler = grpc.method_handlers_generic_handler(
        SERVICE,
        {
            "SayHello": grpc.unary_unary_rpc_method_handler(
                say_hello, request_class.FromString, reply_class.SerializeToString
            )
        },
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    server.add_generic_rpc_handlers((handler,))
    reflection.enable_server_reflection((SERVICE, reflection.SERVICE_NAME), server, pool)
    server.add_insecure_port(f"127.0.0.1:{port}")
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    server.start()
    say(f"greeter listening on 127.0.0.1:{port}")
    stopped.wait()
    server.stop(0)
    say(f"answered {counts['calls']} calls, {counts['storm']} naming storm")


if __name__ == "__main__":
    main(int(sys.argv[1]))
