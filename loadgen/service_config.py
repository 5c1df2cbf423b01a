"""``grpc-service-config:PATH[#INDEX]``: read a gRPC service config file into a ``grpc-retry`` preset.

The thin shell around :func:`retrystorm.loadgen.strategies.presets.preset_from_service_config`:
it reads the file (at most :data:`MAX_BYTES`, UTF-8 JSON) and hands the loaded JSON
to the pure parser. :func:`read_strategy` is what every place that reads a strategy
from a person calls (``--retry-strategy``, a scenario's ``strategies:``,
``retrystorm strategies show``, ``retrystorm sim --strategy``): a strategy spec, or
``grpc-service-config:PATH`` with ``#INDEX`` to pick ``methodConfig[INDEX]`` (default:
the first with a ``retryPolicy``). A relative ``PATH`` is read from the current
directory. The result is a ``grpc-retry`` spec like any other, which is what reports
print and what the live runner passes to Locust: the file is read once.

Where grpcio is installed (the ``grpc`` extra), the file is also handed to grpcio's core as it is
(:func:`grpcio_rejection`): a config the core would refuse in the user's own client (grpcio 1.85 fails
``"maxTokens": 10.0``) is refused here too, in the core's words, rather than run in its parsed form.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from retrystorm.errors import SpecError
from retrystorm.loadgen.strategies import RetryStrategy, parse_strategy
from retrystorm.loadgen.strategies.base import SERVICE_CONFIG
from retrystorm.loadgen.strategies.presets import preset_from_service_config
from retrystorm.user_files import UserFileError, read_user_file

#: The largest service config read (real ones are a few KiB).
MAX_BYTES = 1024 * 1024
PREFIX = SERVICE_CONFIG + ":"


def read_strategy(spec: object) -> RetryStrategy:
    """A strategy from a spec, or from ``grpc-service-config:PATH``; :class:`SpecError` names what is wrong."""
    if isinstance(spec, str) and spec.strip().startswith(PREFIX):
        return read_service_config(spec.strip().removeprefix(PREFIX))
    return parse_strategy(spec)


def read_service_config(target: str) -> RetryStrategy:
    """``PATH`` or ``PATH#INDEX`` -> the ``grpc-retry`` preset of that service config."""
    path_text, _, index_text = target.partition("#")
    if not path_text.strip():
        raise SpecError(f"{SERVICE_CONFIG}: needs a file, like {PREFIX}service-config.json")
    index = None
    if index_text:
        if not index_text.isdigit():
            raise SpecError(f"{SERVICE_CONFIG}: #{index_text}: expected a methodConfig index, like #0")
        index = int(index_text)
    path = Path(path_text.strip())
    where = f"{SERVICE_CONFIG}: {path}"
    try:
        raw = read_user_file(path, MAX_BYTES)
    except UserFileError as error:
        raise SpecError(f"{where}: cannot read it: {error}") from None
    if len(raw) > MAX_BYTES:
        raise SpecError(f"{where}: larger than {MAX_BYTES // 1024} KiB; expected a gRPC service config")
    try:
        config = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise SpecError(f"{where}: not UTF-8 text; expected a JSON gRPC service config") from None
    except json.JSONDecodeError as error:
        raise SpecError(f"{where}:{error.lineno}: not JSON ({error.msg}); expected a gRPC service config") from None
    except RecursionError:
        raise SpecError(f"{where}: nested too deeply; expected a gRPC service config") from None
    try:
        preset = preset_from_service_config(config, index=index)
    except SpecError as error:
        raise SpecError(f"{where}: {error}") from None
    problem = grpcio_rejection(raw.decode("utf-8"))
    if problem is not None:
        raise SpecError(f"{where}: grpcio rejects it: {problem}; expected a service config grpcio runs")
    return preset


#: Where :func:`grpcio_rejection` points its channel: a Unix socket path that cannot exist, so the check sends
#: nothing anywhere.
_NOWHERE = "unix:/nonexistent/retrystorm-service-config-check"
_CHECK_TIMEOUT_S = 0.1


def grpcio_rejection(service_config_json: str) -> str | None:
    """What grpcio's core says of a service config it will not run, in its words; ``None`` when it takes it.

    The core checks a service config when it builds a channel's stack, at the first call, beyond the JSON rules
    this package reads (grpcio 1.85 takes ``"maxTokens": 10`` but fails ``10.0``: "failed to parse non-negative
    number"). So one call is made on a channel to :data:`_NOWHERE`: a rejected config fails it at once with
    ``INVALID_ARGUMENT`` ("errors validating service config"); an accepted one fails to connect. The core's own
    log line of the rejection is kept off the terminal (file descriptor 2 points at ``/dev/null`` meanwhile),
    so a user sees the one line this becomes.
    """
    try:
        import grpc  # noqa: PLC0415 - the grpc extra: without it there is no grpcio to refuse anything
    except ImportError:
        return None

    options = [("grpc.service_config", service_config_json), ("grpc.enable_retries", 1)]
    saved = os.dup(2)
    try:
        with Path(os.devnull).open("wb") as null:
            os.dup2(null.fileno(), 2)
        with grpc.insecure_channel(_NOWHERE, options=options) as channel:
            try:
                channel.unary_unary("/retrystorm.check.v1.Check/Config")(b"", timeout=_CHECK_TIMEOUT_S)
            except grpc.RpcError as error:
                details = str(error.details() or "")
                if error.code() is grpc.StatusCode.INVALID_ARGUMENT and "service config" in details:
                    return details.partition("service config: ")[2] or details
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    return None
