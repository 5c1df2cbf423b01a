"""What a gRPC load generator sends and how it retries: its options, read without Locust or grpcio.

``locust -f loadgen/grpc_locustfile.py --host 127.0.0.1:PORT`` runs :mod:`retrystorm.loadgen.grpc_user`,
configured by the options of :mod:`retrystorm.loadgen.options` plus these (also in the web UI's start form):

* ``--grpc-mode real``: grpcio makes the retries. The channel gets the service config of
  ``--retry-strategy``: ``grpc-service-config:FILE.json[#INDEX]`` (the file's chosen method config,
  applied to every method, and its ``retryThrottling``; :func:`real_service_config`) or a
  ``grpc-retry:...`` preset written out as one (:func:`preset_service_config`); any other strategy is
  refused in one line (it has no grpcio form). A call's deadline covers all its attempts (gRFC A6):
  ``--request-deadline`` when given, else ``--attempt-timeout``.
* ``--grpc-mode emulated``: grpcio's retries are off (``grpc.enable_retries`` 0) and the strategy
  of ``--retry-strategy`` retries each call as the HTTP user does, every attempt with
  ``--attempt-timeout`` as its deadline and its number in the ``retrystorm-attempt`` metadata.
* ``--grpc-method``: the full method name (default the built-in target's ``Echo``); ``--grpc-request``:
  the request message's bytes, ``b64:BASE64`` or ``hex:HEX`` (default empty: every field at its default).

A gRPC status is an attempt's outcome as :data:`STATUS_OF_CODE` says, so the strategies' retry
conditions (HTTP statuses) read it: ``UNAVAILABLE`` is 503, ``RESOURCE_EXHAUSTED`` 429 (a throttle),
``DEADLINE_EXCEEDED`` a timeout, ``UNIMPLEMENTED`` 501, anything else 500.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import enum
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from retrystorm.errors import SpecError, UserError, shown
from retrystorm.loadgen.service_config import MAX_BYTES, PREFIX, grpcio_rejection
from retrystorm.loadgen.strategies import RetryStrategy
from retrystorm.loadgen.strategies.presets import GrpcRetry

#: The built-in target's method (``retrystorm target --grpc-port``).
DEFAULT_METHOD = "/retrystorm.target.v1.Target/Echo"
#: Metadata that numbers an emulated retry (2, 3, ...), as ``Retrystorm-Attempt`` does over HTTP.
ATTEMPT_METADATA = "retrystorm-attempt"
_METHOD = re.compile(r"/[A-Za-z_][\w.]*/[A-Za-z_]\w*")
#: The most bytes a request message may have (gRPC's default receive limit is 4 MiB).
MAX_REQUEST_BYTES = 4 * 1024 * 1024

#: gRPC code name -> the HTTP status the retry conditions read (``None``: a timeout).
STATUS_OF_CODE: dict[str, int | None] = {
    "UNAVAILABLE": 503,
    "RESOURCE_EXHAUSTED": 429,
    "DEADLINE_EXCEEDED": None,
    "UNIMPLEMENTED": 501,
}


class GrpcMode(enum.StrEnum):
    """Who retries: grpcio itself (``real``) or the strategy over grpcio (``emulated``)."""

    REAL = "real"
    EMULATED = "emulated"


@dataclasses.dataclass(frozen=True, slots=True)
class GrpcSettings:
    """The gRPC options of one run."""

    mode: GrpcMode
    method: str
    request: bytes

    @property
    def service(self) -> str:
        """The service of :attr:`method` (``pkg.Service``)."""
        return self.method.split("/")[1]


def _mode(text: str) -> GrpcMode:
    try:
        return GrpcMode(text.strip().lower())
    except ValueError:
        raise SpecError(f"got {shown(text)}, expected real or emulated") from None


def check_method(text: str) -> str:
    if not _METHOD.fullmatch(text.strip()):
        raise SpecError(f"got {shown(text)}, expected a full method name like {DEFAULT_METHOD}")
    return text.strip()


def _decode(kind: str, data: str) -> bytes | None:
    try:
        if kind == "b64":
            return base64.b64decode(data, validate=True)
        if kind == "hex":
            return bytes.fromhex(data)
    except (ValueError, binascii.Error):
        return None
    return None


def check_request(text: str) -> bytes:
    if not text.strip():
        return b""
    kind, _, data = text.strip().partition(":")
    raw = _decode(kind, data)
    if raw is None:
        raise SpecError(f"got {shown(text)}, expected the request message's bytes as b64:BASE64 or hex:HEX")
    if len(raw) > MAX_REQUEST_BYTES:
        raise SpecError(f"got {len(raw):,} bytes; at most {MAX_REQUEST_BYTES:,}")
    return raw


#: ``(flag, default, help, check)``: what :mod:`retrystorm.loadgen.grpc_locustfile` registers.
GRPC_OPTIONS = (
    ("--grpc-mode", "real", "real: grpcio retries from the service config; emulated: the strategy retries.", _mode),
    ("--grpc-method", DEFAULT_METHOD, "The full method name each logical call invokes.", check_method),
    ("--grpc-request", "", "The request message's bytes: b64:BASE64 or hex:HEX (empty: all defaults).", check_request),
)


def read_settings(values: Mapping[str, Any]) -> GrpcSettings:
    """The gRPC options from parsed values (``vars(parsed_options)``); :class:`UserError` naming the flag."""
    read: dict[str, Any] = {}
    for flag, default, _, check in GRPC_OPTIONS:
        try:
            read[flag] = check(str(values.get(flag[2:].replace("-", "_"), default)))
        except SpecError as error:
            raise UserError(f"{flag}: {error}") from None
    return GrpcSettings(read["--grpc-mode"], read["--grpc-method"], read["--grpc-request"])


def preset_service_config(preset: GrpcRetry) -> dict[str, Any]:
    """A ``grpc-retry`` preset as the gRPC service config grpcio reads (every method, A6 field names)."""
    policy = {
        "maxAttempts": preset.max_attempts,
        "initialBackoff": f"{preset.initial_backoff_s:.9f}".rstrip("0").rstrip(".") + "s",
        "maxBackoff": f"{preset.max_backoff_s:.9f}".rstrip("0").rstrip(".") + "s",
        "backoffMultiplier": preset.multiplier,
        "retryableStatusCodes": list(preset.codes),
    }
    config: dict[str, Any] = {"methodConfig": [{"name": [{}], "retryPolicy": policy}]}
    if preset.max_tokens is not None:
        # C-core reads maxTokens as a whole number when it is one ("10.0" fails to parse)
        tokens = int(preset.max_tokens) if preset.max_tokens.is_integer() else preset.max_tokens
        config["retryThrottling"] = {"maxTokens": tokens, "tokenRatio": preset.token_ratio}
    return config


def real_service_config(strategy_text: str, strategy: RetryStrategy) -> dict[str, Any]:
    """The service config grpcio runs with in ``real`` mode (see the module docstring), checked by grpcio itself."""
    text = strategy_text.strip()
    if text.startswith(PREFIX) or isinstance(strategy, GrpcRetry):
        config = _file_service_config(text.removeprefix(PREFIX)) if text.startswith(PREFIX) else None
        config = config or preset_service_config(strategy)  # type: ignore[arg-type]
        problem = grpcio_rejection(json.dumps(config))
        if problem is not None:
            raise UserError(f"--retry-strategy {shown(text)}: grpcio rejects its service config: {problem}")
        return config
    raise UserError(
        f"--grpc-mode real: --retry-strategy {shown(text)} has no grpcio form; give grpc-service-config:FILE.json "
        "or grpc-retry:..., or use --grpc-mode emulated"
    )


def _file_service_config(target: str) -> dict[str, Any]:
    """The file's chosen method config, named for every method, and its retryThrottling (already checked)."""
    path_text, _, index_text = target.partition("#")
    try:
        config = json.loads(Path(path_text.strip()).read_bytes()[:MAX_BYTES])
    except (OSError, ValueError) as error:  # read_strategy has read it once already: this is a race
        raise SpecError(f"{PREFIX}{path_text}: cannot read it again: {error}") from None
    entries = config.get("methodConfig", [])
    index = int(index_text) if index_text else next(i for i, entry in enumerate(entries) if "retryPolicy" in entry)
    chosen = {**entries[index], "name": [{}]}
    document: dict[str, Any] = {"methodConfig": [chosen]}
    if "retryThrottling" in config:
        document["retryThrottling"] = config["retryThrottling"]
    return document
