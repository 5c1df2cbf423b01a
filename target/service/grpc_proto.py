"""The built-in target's gRPC service, described in code: no ``.proto`` to compile, no build step.

::

    syntax = "proto3";
    package retrystorm.target.v1;
    message EchoRequest { bytes payload = 1; }
    message EchoReply { bytes payload = 1; }
    service Target { rpc Echo(EchoRequest) returns (EchoReply); }

``Echo`` answers, once the overload model releases the call, with the request's ``payload``.
Both messages have the same single field, so the request's bytes on the wire *are* the reply's:
the server echoes them without parsing (a malformed payload field is the client's own bytes
back). :func:`file_descriptor` builds the descriptor for server reflection and for clients that
want message classes (:func:`message_classes`); nothing here does I/O.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

PACKAGE = "retrystorm.target.v1"
SERVICE = f"{PACKAGE}.Target"
METHOD = "Echo"
#: The method's full name, as it travels in the ``:path`` of an HTTP/2 request.
FULL_METHOD = f"/{SERVICE}/{METHOD}"
FILE_NAME = "retrystorm/target/v1/target.proto"
REQUEST = f"{PACKAGE}.EchoRequest"
REPLY = f"{PACKAGE}.EchoReply"


def _message(name: str) -> descriptor_pb2.DescriptorProto:
    message = descriptor_pb2.DescriptorProto(name=name)
    message.field.add(
        name="payload",
        number=1,
        type=descriptor_pb2.FieldDescriptorProto.TYPE_BYTES,
        label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
        json_name="payload",
    )
    return message


def file_descriptor_proto() -> descriptor_pb2.FileDescriptorProto:
    """``target.proto`` as a ``FileDescriptorProto`` (what server reflection sends)."""
    proto = descriptor_pb2.FileDescriptorProto(name=FILE_NAME, package=PACKAGE, syntax="proto3")
    proto.message_type.extend([_message("EchoRequest"), _message("EchoReply")])
    service = proto.service.add(name="Target")
    service.method.add(name=METHOD, input_type=f".{REQUEST}", output_type=f".{REPLY}")
    return proto


def descriptor_pool_with_target() -> descriptor_pool.DescriptorPool:
    """A fresh pool holding ``target.proto`` (never the process's default pool: no name clashes)."""
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file_descriptor_proto())
    return pool


def message_classes(pool: descriptor_pool.DescriptorPool | None = None) -> tuple[Any, Any]:
    """The ``EchoRequest`` and ``EchoReply`` message classes, from ``pool`` or a fresh one."""
    pool = pool or descriptor_pool_with_target()
    return (
        message_factory.GetMessageClass(pool.FindMessageTypeByName(REQUEST)),
        message_factory.GetMessageClass(pool.FindMessageTypeByName(REPLY)),
    )
