"""A scenario's own service: ``target:`` (where requests go, what a pause freezes), ``requests:``, ``retry_on:``.

Without ``target:`` the runner starts the built-in model server (``model:``). With it, the
users send to ``target.url`` and a pause freezes, by precedence:

* ``pid: N``: that process (registered at run start, with the process backend's refusals);
* ``tree: N``: that process and every descendant, those that ``setsid()`` included (a database's postmaster);
* ``cgroup: PATH`` / ``unit: NAME``: that cgroup, or that systemd unit's, whole: frozen at once by the cgroup
  freezer, its own CPU quota lowered by a ``slow``;
* ``container: NAME``: that container, ``service: NAME``: that compose service's containers,
  both through the docker backend and only with the label ``retrystorm.chaos=allow``;
* otherwise, with ``command:``, everything the command starts: the runner starts it in a cgroup of its own
  (:mod:`retrystorm.chaos.containment`), fresh for each strategy (cwd: the scenario's folder), and stops it
  after it; where no cgroup can be made, the command's process group.

Nothing else may be paused: a scenario with faults but none of these is refused.
``ready`` is a path that must answer 2xx before the load starts (default: the base URL
answering anything). ``metrics`` are optional server-side readings: a ``/metrics`` URL
to scrape, or a Prometheus to query, and the name of an in-flight gauge; without them,
the server's recovery is judged from what clients see (:mod:`retrystorm.experiment.analysis.recovery`).

Ceilings: a URL of :data:`MAX_URL_CHARS`, a command of :data:`MAX_COMMAND_CHARS`, metric
names of :data:`MAX_METRIC_CHARS`, and for ``requests`` those of :mod:`retrystorm.loadgen.request_mix`
(at most 20 requests, 32 headers each, bodies of 64 KiB, weights up to 1,000,000).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from retrystorm.addresses import grpc_address, http_address
from retrystorm.errors import SpecError, shown
from retrystorm.loadgen.request_mix import (
    MAX_REQUESTS,
    RequestSpec,
    check_body,
    check_headers,
    check_method,
    check_name,
    check_path,
    check_weight,
)
from retrystorm.loadgen.strategies.retry_on import ACCEPTED, RetryOn

MAX_URL_CHARS = 2048
MAX_COMMAND_CHARS = 4096
MAX_METRIC_CHARS = 200
#: A process to pause: a pid the kernel may hand out (Linux's pid_max is at most 2**22).
MAX_PID = 2**22
_METRIC = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_CONTAINER = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}")
#: Each kind of pause target, as a scenario writes it, by precedence (all but ``command`` are exclusive).
PAUSE_KINDS = ("pid", "tree", "cgroup", "unit", "container", "service", "command")
_NAMED_KINDS = PAUSE_KINDS[:-1]
_UNIT = re.compile(r"[A-Za-z0-9:_.\\@-]{1,240}\.(service|scope|slice)")


def _checked(check: Any) -> Any:
    """A validator that runs a :mod:`retrystorm.loadgen.request_mix` check and reports its message to pydantic."""

    def validate(value: object) -> Any:
        try:
            return check(value)
        except SpecError as error:
            raise ValueError(str(error).partition(": ")[2] or str(error)) from None

    return validate


def _http_url(value: object) -> str:
    if not isinstance(value, str) or len(value) > MAX_URL_CHARS:
        raise ValueError(f"got {shown(value)}; expected an http:// address like http://127.0.0.1:8000")
    try:
        return http_address(value)
    except ValueError:
        raise ValueError(f"got {shown(value)}; expected an http:// address like http://127.0.0.1:8000") from None


def _service_url(value: object) -> str:
    """An HTTP base URL, or ``grpc://HOST:PORT`` for a gRPC service."""
    if isinstance(value, str) and value.strip().startswith("grpc://") and len(value) <= MAX_URL_CHARS:
        try:
            return grpc_address(value)
        except ValueError:
            raise ValueError(f"got {shown(value)}; expected grpc://HOST:PORT, like grpc://127.0.0.1:50051") from None
    try:
        return _http_url(value)
    except ValueError:
        raise ValueError(
            f"got {shown(value)}; expected an http:// address like http://127.0.0.1:8000, or grpc://HOST:PORT"
        ) from None


def _command(value: object) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_COMMAND_CHARS:
        raise ValueError(f"got {shown(value)}; expected a command line of at most {MAX_COMMAND_CHARS} characters")
    try:
        shlex.split(value)
    except ValueError as error:
        raise ValueError(f"got {shown(value)}; {error} (quote as a POSIX shell does)") from None
    return value.strip()


def _metric(value: object) -> str:
    if not isinstance(value, str) or len(value) > MAX_METRIC_CHARS or not _METRIC.fullmatch(value):
        raise ValueError(f"got {shown(value)}; expected a Prometheus metric name like myapp_requests_in_progress")
    return value


def _cgroup(value: object) -> str:
    text = value if isinstance(value, str) else ""
    if not text.startswith("/") or len(text) > MAX_COMMAND_CHARS or ".." in text.split("/") or "\x00" in text:
        raise ValueError(f"got {shown(value)}; expected a cgroup path like /system.slice/postgresql.service")
    return text


def _unit(value: object) -> str:
    if not isinstance(value, str) or not _UNIT.fullmatch(value):
        raise ValueError(f"got {shown(value)}; expected a systemd unit name like postgresql@15-main.service")
    return value


def _container(value: object) -> str:
    if not isinstance(value, str) or not _CONTAINER.fullmatch(value):
        raise ValueError(f"got {shown(value)}; expected a container or compose service name (letters, digits, _.-)")
    return value


Url = Annotated[str, BeforeValidator(_http_url)]
MetricName = Annotated[str, BeforeValidator(_metric)]
ContainerName = Annotated[str, BeforeValidator(_container)]


class _Strict(BaseModel):
    # each field's docstring is its description: the scenario reference is generated from them
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class PrometheusSource(_Strict):
    """Server readings from a Prometheus: its address and the PromQL of the in-flight count."""

    url: Url
    """The Prometheus to ask (``http://HOST:PORT``)."""
    query_in_flight: str = Field(min_length=1, max_length=MAX_COMMAND_CHARS)
    """The PromQL whose value is the requests your service holds (at most 4,096 characters)."""


class ServerMetrics(_Strict):
    """Optional server-side readings: scrape ``url`` for the gauge ``in_flight``, or ask a Prometheus."""

    url: Url | None = None
    """A ``/metrics`` address to scrape every second."""
    prometheus: PrometheusSource | None = None
    """A Prometheus to query instead: ``{url, query_in_flight}``."""
    in_flight: MetricName | None = None
    """The gauge of requests in progress in that ``/metrics`` (all its series summed)."""

    @model_validator(mode="after")
    def _one_source(self) -> ServerMetrics:
        if (self.url is None) == (self.prometheus is None):
            raise ValueError("give url (a /metrics to scrape) or prometheus: {url, query_in_flight}, one of them")
        if self.url is not None and self.in_flight is None:
            raise ValueError(
                "in_flight: missing; name the gauge of requests in progress, like myapp_requests_in_flight"
            )
        return self


class ServiceTarget(_Strict):
    """The ``target:`` section (see the module docstring)."""

    url: Annotated[str, BeforeValidator(_service_url)]
    """The base URL the users send to: ``http(s)://HOST[:PORT][/PATH]``, at most 2,048 characters; request paths are
    appended to its path. A gRPC service: ``grpc://HOST:PORT``, with the scenario's ``grpc:`` section saying what one
    call is.
    """
    command: Annotated[str, BeforeValidator(_command)] | None = None
    """Started fresh for each strategy and stopped after it (its process group); split as a POSIX shell splits it,
    run without a shell, in the scenario's folder; at most 4,096 characters.
    """
    pid: int | None = Field(default=None, ge=2, le=MAX_PID)
    """A running process to pause (2 to 4,194,304), registered when the run starts, with the process backend's
    refusals.
    """
    tree: int | None = Field(default=None, ge=2, le=MAX_PID)
    """A running process to pause with every descendant (those that ``setsid()`` included, as a database's
    backends do), found again at each pause; registered when the run starts, with the process backend's refusals.
    """
    cgroup: Annotated[str, BeforeValidator(_cgroup)] | None = None
    """A cgroup to freeze whole with the cgroup freezer (v2 ``cgroup.freeze``, v1 ``freezer.state``), as
    ``/proc/PID/cgroup`` writes its path; a ``slow`` lowers its own CPU quota. Refused: the root cgroup, one that
    holds the runner, pid 1 or a watchdog.
    """
    unit: Annotated[str, BeforeValidator(_unit)] | None = None
    """A systemd unit whose cgroup to freeze whole, as ``cgroup`` does (needs systemd running)."""
    container: ContainerName | None = None
    """A container to pause with ``docker pause``; it needs the label ``retrystorm.chaos=allow``."""
    service: ContainerName | None = None
    """A compose service whose containers to pause; they need the label ``retrystorm.chaos=allow``."""
    ready: Annotated[str, AfterValidator(_checked(check_path))] | None = None
    """A path that must answer 2xx before the load starts; default: the URL answering anything (a gRPC service:
    its port accepting a connection)."""
    metrics: ServerMetrics | None = None
    """Server-side readings of your service; without them, its recovery is judged from what its clients see."""
    host: str | None = Field(default=None, min_length=1, max_length=63)
    """The host it runs on, a key of ``hosts.agents``: its faults go through that host's chaos agent."""
    model_server: bool = False
    """It is ``retrystorm target`` (with its admin API): each strategy sets the scenario's ``model:`` and resets
    it, as the compose stack's target."""

    @property
    def grpc_address(self) -> str | None:
        """``HOST:PORT`` of a gRPC service (``url: grpc://HOST:PORT``); ``None`` for an HTTP one."""
        return self.url.removeprefix("grpc://") if self.url.startswith("grpc://") else None

    @property
    def pause_kind(self) -> str | None:
        """What a pause freezes: ``pid``, ``tree``, ``cgroup``, ``unit``, ``container``, ``service``, ``command``
        (everything it starts), or ``None``."""
        for kind in _NAMED_KINDS:
            if getattr(self, kind) is not None:
                return kind
        return "command" if self.command is not None else None

    def pause_describe(self) -> str:
        """One line: what a pause freezes and how."""
        kind = self.pause_kind
        if kind == "pid":
            return f"process {self.pid} (SIGSTOP/SIGCONT, registered at run start)"
        if kind == "tree":
            return f"process {self.tree} and every descendant (SIGSTOP/SIGCONT, found again at each pause)"
        if kind == "cgroup":
            return f"cgroup {self.cgroup} whole (the cgroup freezer; a cut lowers its own CPU quota)"
        if kind == "unit":
            return f"systemd unit {self.unit}'s cgroup whole (the cgroup freezer; a cut lowers its own CPU quota)"
        if kind == "container":
            return f"container {self.container} (docker pause/unpause; label retrystorm.chaos=allow)"
        if kind == "service":
            return f"compose service {self.service}'s containers (docker pause/unpause; label retrystorm.chaos=allow)"
        if kind == "command":
            return (
                "everything the command starts, in a cgroup of its own (frozen at once by the cgroup freezer; ended "
                "with the run, even a SIGKILLed one); where none can be made, its process group"
            )
        return "nothing (no command, pid, tree, cgroup, unit, container or service)"

    def argv(self) -> list[str]:
        """The command split as a POSIX shell would, without running a shell; ``[]`` without one."""
        return shlex.split(self.command) if self.command else []

    def problems(self) -> Iterator[tuple[tuple[str, ...], str]]:
        """Rules across the section's fields."""
        given = [kind for kind in _NAMED_KINDS if getattr(self, kind) is not None]
        if len(given) > 1:
            yield ("target", given[1]), f"give one of {', '.join(_NAMED_KINDS)} (got {', '.join(given)})"
        if self.grpc_address is not None and self.ready is not None:
            yield ("target", "ready"), "an HTTP path; a grpc:// service is ready when its port accepts a connection"
        if self.host is not None:
            local = [kind for kind in PAUSE_KINDS if getattr(self, kind) is not None]
            if local:
                registered = "with host: the target's agent pauses what it registered (chaos serve --target NAME=PID)"
                yield ("target", local[0]), f"{registered}; remove {local[0]}"


class RequestEntry(_Strict):
    """One request of the mix: ``{method, path, name, headers, body, weight}`` (see
    :mod:`retrystorm.loadgen.request_mix`)."""

    method: Annotated[str, BeforeValidator(_checked(check_method))] = "GET"
    """GET, POST, PUT, PATCH, DELETE, HEAD or OPTIONS."""
    path: Annotated[str, BeforeValidator(_checked(check_path))]
    """From ``/``, ASCII without spaces (percent-encode the rest), at most 2,048 characters."""
    name: Annotated[str, BeforeValidator(_checked(check_name))] | None = None
    """Its name in statistics and metrics (the ``request`` label); default: ``METHOD PATH``; at most 100 characters."""
    headers: Annotated[dict[str, str], BeforeValidator(_checked(check_headers))] = {}
    """At most 32, values printable ASCII of at most 1,024 characters; ``Host``, ``Content-Length``,
    ``Transfer-Encoding``, ``Connection`` and ``Retrystorm-Attempt`` are the load generator's own."""
    body: Annotated[str | None, BeforeValidator(_checked(check_body))] = None
    """Text of at most 64 KiB."""
    weight: Annotated[int, BeforeValidator(_checked(check_weight))] = 1
    """Its share of the mix, 1 to 1,000,000."""

    def spec(self) -> RequestSpec:
        """This request as the load generator takes it."""
        return RequestSpec(
            method=self.method,
            path=self.path,
            name=self.name or "",
            headers=self.headers,
            body=self.body,
            weight=self.weight,
        )


def _retry_on(value: object) -> RetryOn:
    """Retry conditions (:class:`retrystorm.loadgen.strategies.RetryOn`) from a YAML list; ``429`` may be written as
    a number."""
    if isinstance(value, RetryOn):
        return value
    if not isinstance(value, list) or len(value) > 100:
        raise ValueError(f"got {shown(value)}; expected {ACCEPTED}")
    names = [str(item) if isinstance(item, int) and not isinstance(item, bool) else item for item in value]
    if not all(isinstance(item, str) for item in names):
        raise ValueError(f"got {shown(value)}; expected {ACCEPTED}")
    try:
        return RetryOn.of(names)
    except SpecError as error:
        raise ValueError(str(error).removeprefix("retry_on: ")) from None


RetryOnField = Annotated[RetryOn, BeforeValidator(_retry_on)]
Requests = Annotated[list[RequestEntry], Field(min_length=1, max_length=MAX_REQUESTS)]


def request_problems(requests: list[RequestEntry] | None) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """Two requests may not share a name: each is a metric label value."""
    seen: dict[str, int] = {}
    for index, entry in enumerate(requests or []):
        name = entry.spec().name
        if name in seen:
            yield ("requests", index), f"a second request named {name!r}; give one a name of its own"
        seen[name] = index
