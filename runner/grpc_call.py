"""What one gRPC call of a scenario sends: the method found in a proto, the JSON request encoded with it.

The proto comes from a descriptor set file (``protoc --include_imports --descriptor_set_out``), from the
service's server reflection (``grpc.reflection.v1alpha``, asked with a deadline), or, for the built-in target,
from its own descriptor (:mod:`retrystorm.target.service.grpc_proto`). The request message, a JSON object, is
parsed into the method's input type with protobuf's JSON mapping (``json_format.Parse``) and serialised: the
bytes every call then sends. Every problem is a :class:`~retrystorm.errors.UserError` naming the ``grpc:``
field and what is accepted (exit 2): a file that is not a descriptor set, a method the proto does not have, a
message that does not match its type, a reflection service that does not answer.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from retrystorm.errors import UserError, shown

#: How long server reflection may take to answer (connecting included).
REFLECTION_TIMEOUT_S = 5.0
#: The most files a reflection answer may make us ask for (a proto's transitive imports).
MAX_REFLECTED_FILES = 200
MAX_DESCRIPTOR_SET_BYTES = 64 * 1024 * 1024


@dataclasses.dataclass(frozen=True, slots=True)
class Protos:
    """A descriptor pool, the services its files declare, and where it came from (for messages)."""

    pool: Any
    services: tuple[str, ...]
    where: str


def _protos(files: dict[str, Any], where: str) -> Protos:
    from google.protobuf import descriptor_pool  # noqa: PLC0415 - the grpc extra

    pool = descriptor_pool.DescriptorPool()
    _add_in_order(pool, files)
    services = sorted(f"{p.package}.{s.name}" if p.package else s.name for p in files.values() for s in p.service)
    return Protos(pool, tuple(services), where)


def require_grpc() -> None:
    """One line, exit 2, when the grpc extra is not installed."""
    try:
        import google.protobuf  # noqa: F401, PLC0415
        import grpc  # noqa: F401, PLC0415 - only to tell whether the extra is there
    except ImportError:
        raise UserError("grpc: needs the grpc extra: pip install 'retrystorm[grpc]'") from None


def from_descriptor_set(path: Path) -> Protos:
    """Every file of the descriptor set at ``path``."""
    from google.protobuf import descriptor_pb2  # noqa: PLC0415 - the grpc extra
    from google.protobuf.message import DecodeError  # noqa: PLC0415

    where = f"grpc.descriptor_set: {path}"
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_DESCRIPTOR_SET_BYTES + 1)
    except OSError as error:
        raise UserError(f"{where}: cannot read it: {error.strerror or error}") from None
    if len(raw) > MAX_DESCRIPTOR_SET_BYTES:
        raise UserError(f"{where}: larger than {MAX_DESCRIPTOR_SET_BYTES // 2**20} MiB; expected a descriptor set")
    files = descriptor_pb2.FileDescriptorSet()
    try:
        files.ParseFromString(raw)
    except DecodeError:
        files.Clear()
    if not files.file:
        raise UserError(
            f"{where}: not a FileDescriptorSet; expected the output of protoc --include_imports --descriptor_set_out"
        )
    try:
        return _protos({proto.name: proto for proto in files.file}, f"the descriptor set {path}")
    except (TypeError, ValueError) as error:
        raise UserError(f"{where}: {error}; build it with protoc --include_imports") from None


def _add_in_order(pool: Any, files: dict[str, Any]) -> None:
    """Add ``files`` (name -> FileDescriptorProto) to ``pool``, each after the files it imports."""
    added: set[str] = set()

    def add(name: str, seen: tuple[str, ...]) -> None:
        if name in added or name in seen:
            return
        proto = files.get(name)
        if proto is None:
            raise ValueError(f"it imports {name!r} but does not hold it")
        for dependency in proto.dependency:
            add(dependency, (*seen, name))
        pool.Add(proto)
        added.add(name)

    for name in files:
        add(name, ())


def from_reflection(address: str, symbol: str, timeout_s: float = REFLECTION_TIMEOUT_S) -> Protos:
    """The file declaring ``symbol`` (a service) and its imports, from the server reflection at ``address``."""
    import grpc  # noqa: PLC0415 - the grpc extra
    from google.protobuf import descriptor_pb2  # noqa: PLC0415
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc  # noqa: PLC0415

    where = f"grpc: server reflection at {address}"
    files: dict[str, Any] = {}
    wanted: list[Any] = [reflection_pb2.ServerReflectionRequest(file_containing_symbol=symbol)]
    with grpc.insecure_channel(address) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        while wanted:
            try:
                answers = list(stub.ServerReflectionInfo(iter(wanted), timeout=timeout_s, wait_for_ready=True))
            except grpc.RpcError as error:
                raise UserError(_reflection_problem(where, error)) from None
            wanted = []
            for answer in answers:
                if answer.HasField("error_response"):
                    message = answer.error_response.error_message or f"code {answer.error_response.error_code}"
                    raise UserError(f"{where}: {message}; expected a service it knows (or give grpc.descriptor_set)")
                for blob in answer.file_descriptor_response.file_descriptor_proto:
                    proto = descriptor_pb2.FileDescriptorProto.FromString(blob)
                    files.setdefault(proto.name, proto)
            missing = {dep for proto in files.values() for dep in proto.dependency if dep not in files}
            if len(files) + len(missing) > MAX_REFLECTED_FILES:
                raise UserError(f"{where}: more than {MAX_REFLECTED_FILES} proto files; give grpc.descriptor_set")
            wanted = [reflection_pb2.ServerReflectionRequest(file_by_filename=name) for name in sorted(missing)]
    try:
        return _protos(files, f"the server reflection at {address}")
    except (TypeError, ValueError) as error:
        raise UserError(f"{where}: {error}; give grpc.descriptor_set") from None


def _reflection_problem(where: str, error: Any) -> str:
    code = error.code().name if hasattr(error, "code") else "error"
    if code == "UNIMPLEMENTED":
        return f"{where}: the service does not serve reflection; give grpc.descriptor_set (a protoc descriptor set)"
    if code == "DEADLINE_EXCEEDED":
        return f"{where}: no answer within {REFLECTION_TIMEOUT_S:g} s; give grpc.descriptor_set, or check the address"
    details = error.details() if hasattr(error, "details") else ""
    return f"{where}: {code}: {details}; give grpc.descriptor_set, or check the address"


def input_type(protos: Protos, method: str) -> Any:
    """The input message descriptor of ``method`` (``/package.Service/Method``)."""
    service_name, _, method_name = method.strip("/").partition("/")
    try:
        service = protos.pool.FindServiceByName(service_name)
    except KeyError:
        known = ", ".join(protos.services) or "none"
        raise UserError(f"grpc.method: {protos.where} has no service {service_name!r}; its services: {known}") from None
    found = service.methods_by_name.get(method_name)
    if found is None:
        names = ", ".join(sorted(service.methods_by_name)) or "none"
        raise UserError(f"grpc.method: {service_name} has no method {method_name!r}; its methods: {names}")
    if found.client_streaming or found.server_streaming:
        raise UserError(f"grpc.method: {method} streams; expected a unary method (one request, one reply)")
    return found.input_type


def encode(message_type: Any, request_json: str) -> bytes:
    """The JSON object ``request_json`` as the bytes of a ``message_type`` message (proto3 JSON mapping)."""
    from google.protobuf import json_format, message_factory  # noqa: PLC0415 - the grpc extra

    message = message_factory.GetMessageClass(message_type)()
    try:
        json_format.Parse(request_json, message)
    except json_format.ParseError as error:
        problem = " ".join(str(error).split())
        raise UserError(
            f"grpc.request: {problem} (got {shown(json.loads(request_json))}); expected a {message_type.full_name} "
            "message in protobuf's JSON mapping"
        ) from None
    return bytes(message.SerializeToString())


def request_bytes(protos: Protos, method: str, request_json: str) -> bytes:
    """The request bytes of ``method`` for ``request_json``, its types from ``protos``."""
    return encode(input_type(protos, method), request_json)


def builtin_protos() -> Protos:
    """The built-in target's ``target.proto`` (no reflection needed)."""
    from retrystorm.target.service.grpc_proto import file_descriptor_proto  # noqa: PLC0415 - the grpc extra

    proto = file_descriptor_proto()
    return _protos({proto.name: proto}, "the built-in target")
