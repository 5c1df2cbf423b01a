"""A scenario's ``grpc:`` section: the load is gRPC calls, retried by grpcio itself or by the strategies.

With ``grpc:`` and no ``target:``, the runner starts the built-in target with its gRPC front
(``retrystorm target --grpc-port``) and the gRPC Locust user (:mod:`retrystorm.loadgen.grpc_user`) calls
``/retrystorm.target.v1.Target/Echo``. With ``target: {url: grpc://HOST:PORT, ...}`` it calls your own
service's ``method`` instead. ``mode`` says who retries:

* ``real``: grpcio, from the strategy written as a service config (a ``grpc-retry`` preset, or
  ``grpc-service-config:FILE.json``): A6 retries, ``retryThrottling`` and transparent retries are grpcio's
  own. grpcio reads its attempt cap and throttle from the service config, so a strategy entry's or
  ``load``'s ``max_attempts`` and ``budget``, and the scenario's ``retry_on``, cannot apply: they are refused
  (write them into the preset: ``grpc-retry:max_attempts=3,max_tokens=10``).
* ``emulated``: grpcio's retries are off and the strategy's loop retries, any strategy or preset.

A strategy entry may take its own ``grpc_mode``, so one scenario compares grpcio with its emulation.

What one call sends: ``request``, the request message as a JSON object (encoded with the method's input
type, from ``descriptor_set`` when given, else from the service's server reflection; the built-in target's
own descriptor for it), or ``request_bytes`` (``b64:BASE64`` or ``hex:HEX``, sent as they are); neither:
every field at its default (no bytes).

The gRPC user runs closed-loop only (each user waits for its call), so ``load.arrival: open`` is refused, and
so is ``requests:`` (an HTTP request mix).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Annotated, Any, Literal, Protocol

from pydantic import BaseModel, BeforeValidator, ConfigDict

from retrystorm.errors import SpecError, shown
from retrystorm.loadgen.grpc_settings import DEFAULT_METHOD, GrpcMode, GrpcSettings, check_method, check_request
from retrystorm.loadgen.strategies.presets import GrpcRetry

Loc = tuple[str | int, ...]
#: The largest JSON request message (its text): gRPC's default receive limit is 4 MiB.
MAX_REQUEST_JSON_CHARS = 4 * 1024 * 1024
MAX_PATH_CHARS = 4096
#: The only method the built-in target serves.
BUILTIN_METHOD = DEFAULT_METHOD


def _checked(check: Any) -> Any:
    def validate(value: object) -> Any:
        if not isinstance(value, str):
            raise ValueError(f"got {shown(value)}; expected text")  # noqa: TRY004 - pydantic wants ValueError
        try:
            check(value)
        except SpecError as error:
            raise ValueError(str(error)) from None
        return value.strip()

    return validate


def _request_json(value: object) -> str:
    """The JSON object of a request message, kept as compact JSON text (encoded once the proto is known)."""
    if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
        raise ValueError(f"got {shown(value)}; expected the request message as a JSON object, like {{name: world}}")
    text = json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)
    if len(text) > MAX_REQUEST_JSON_CHARS:
        raise ValueError(f"got {len(text):,} characters of JSON; at most {MAX_REQUEST_JSON_CHARS:,}")
    return text


def _path(value: object) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_PATH_CHARS:
        raise ValueError(
            f"got {shown(value)}; expected the path of a descriptor set file (protoc --descriptor_set_out)"
        )
    return value.strip()


class GrpcSection(BaseModel):
    """The ``grpc:`` section (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    mode: Literal["real", "emulated"] = "real"
    """``real``: grpcio retries from the strategy's service config; ``emulated``: the strategy retries over grpcio
    (a strategy entry's ``grpc_mode`` wins)."""
    method: Annotated[str, BeforeValidator(_checked(check_method))] = DEFAULT_METHOD
    """The full method name each logical call invokes (``/package.Service/Method``); the built-in target serves
    ``/retrystorm.target.v1.Target/Echo``."""
    request: Annotated[str, BeforeValidator(_request_json)] | None = None
    """The request message as a JSON object (proto3 JSON mapping), encoded with the method's input type."""
    request_bytes: Annotated[str, BeforeValidator(_checked(check_request))] | None = None
    """The request message's bytes as sent: ``b64:BASE64`` or ``hex:HEX`` (at most 4 MiB)."""
    descriptor_set: Annotated[str, BeforeValidator(_path)] | None = None
    """A ``FileDescriptorSet`` file (``protoc --include_imports --descriptor_set_out``) holding the method, read
    from the scenario's folder; without it the service's server reflection is asked."""

    def settings(self, mode: str | None = None) -> GrpcSettings:
        """The load generator's gRPC settings (``mode``: a strategy entry's own); a JSON request is sent as
        the bytes the runner encodes once it knows the proto."""
        raw = check_request(self.request_bytes) if self.request_bytes else b""
        return GrpcSettings(GrpcMode(mode or self.mode), self.method, raw)


class _Entry(Protocol):
    @property
    def strategy(self) -> object: ...
    @property
    def grpc_mode(self) -> str | None: ...
    @property
    def max_attempts(self) -> int | None: ...
    @property
    def budget(self) -> object | None: ...


class _Load(Protocol):
    @property
    def arrival(self) -> str: ...
    @property
    def max_attempts(self) -> int | None: ...
    @property
    def budget(self) -> object | None: ...


class _Scenario(Protocol):
    """What :func:`grpc_problems` reads of a :class:`~retrystorm.experiment.scenario.model.Scenario`."""

    @property
    def grpc(self) -> GrpcSection | None: ...
    @property
    def target(self) -> object | None: ...
    @property
    def requests(self) -> object | None: ...
    @property
    def retry_on(self) -> object | None: ...
    @property
    def load(self) -> _Load: ...
    @property
    def strategies(self) -> Sequence[_Entry]: ...


def grpc_problems(scenario: _Scenario) -> Iterator[tuple[Loc, str]]:
    """The rules across ``grpc:`` and the rest of a scenario."""
    section = scenario.grpc
    modes = [index for index, entry in enumerate(scenario.strategies) if entry.grpc_mode is not None]
    if section is None:
        for index in modes:
            yield ("strategies", index, "grpc_mode"), "applies to a gRPC load; add a grpc: section"
        return
    if section.request is not None and section.request_bytes is not None:
        yield ("grpc", "request_bytes"), "give request (JSON) or request_bytes, not both"
    if scenario.target is None and section.method != BUILTIN_METHOD:
        yield ("grpc", "method"), f"the built-in target serves {BUILTIN_METHOD} only; add target: {{url: grpc://...}}"
    if scenario.target is None and section.descriptor_set is not None:
        yield ("grpc", "descriptor_set"), "the built-in target's own descriptor is used; remove it (or add target:)"
    if scenario.requests is not None:
        yield ("requests",), "an HTTP request mix; a gRPC load sends grpc.method with grpc.request"
    if scenario.load.arrival == "open":
        yield ("load", "arrival"), "the gRPC user runs closed-loop only (each user waits for its call); use closed"
    real = [index for index, entry in enumerate(scenario.strategies) if (entry.grpc_mode or section.mode) == "real"]
    for index in real:
        yield from _real_entry_problems(scenario, index)
    if real:
        for field in ("max_attempts", "budget"):
            if getattr(scenario.load, field) is not None:
                yield ("load", field), _FROM_CONFIG
        if scenario.retry_on is not None:
            yield ("retry_on",), "grpcio retries the service config's retryableStatusCodes in grpc mode real"


_FROM_CONFIG = (
    "grpcio takes it from the service config in grpc mode real; write it into the preset "
    "(grpc-retry:max_attempts=N,max_tokens=T) or use grpc_mode: emulated"
)


def _real_entry_problems(scenario: _Scenario, index: int) -> Iterator[tuple[Loc, str]]:
    """grpcio takes its retries from the service config: what it cannot take is refused."""
    entry = scenario.strategies[index]
    if not isinstance(entry.strategy, GrpcRetry):
        yield (
            ("strategies", index, "strategy"),
            (
                f"{_spec(entry.strategy)} has no grpcio form in grpc mode real; give grpc-retry:... or "
                "grpc-service-config:FILE.json, or grpc_mode: emulated"
            ),
        )
    for field in ("max_attempts", "budget"):
        if getattr(entry, field) is not None:
            yield ("strategies", index, field), _FROM_CONFIG


def simulation_notes(section: GrpcSection | None, modes: Sequence[str]) -> list[str]:
    """What the simulator makes of a ``grpc:`` scenario (none without one); ``modes``: each strategy's mode.

    The simulator runs the emulation: the strategies and presets as over HTTP, ``grpc-retry`` with its
    channel (calls failed locally after a refused or reset connect), and a call's deadline carried to the
    server (a frozen server's queued calls whose client gave up are dropped at the resume). grpcio's own
    retries (``real``) are simulated through their preset, the grpc-retry the service config becomes.
    """
    if section is None:
        return []
    notes = [
        (
            "gRPC: simulated as its emulation: each strategy's retries as over HTTP, one gRPC channel for all users "
            "(grpc-retry: after a refused or reset connect, calls fail locally until its reconnect backoff ends), "
            "and each call's deadline carried to the server (calls queued at a frozen server whose client gave up "
            "are dropped at the resume)."
        )
    ]
    if "real" in modes:
        notes.append(
            "gRPC real mode (grpcio's own retries) is simulated through its preset: the grpc-retry its service "
            "config makes, with the call's deadline over all its attempts; grpcio's transparent retries and its "
            "per-attempt deadlines (the call's remaining time) are not modelled."
        )
    return notes


def _spec(strategy: object) -> str:
    spec = getattr(strategy, "spec", None)
    return str(spec()) if callable(spec) else str(strategy)
