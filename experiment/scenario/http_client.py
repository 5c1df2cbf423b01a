"""A strategy entry's ``http_client``: who retries an HTTP load's requests.

* ``retrystorm`` (the default): the strategy's own loop over the load generator's HTTP client, any strategy
  or preset (the ``urllib3`` preset is then retrystorm's emulation of urllib3).
* ``urllib3``: urllib3's own ``Retry``, built from the ``urllib3`` preset's settings
  (:mod:`retrystorm.loadgen.urllib3_settings`, ``loadgen/locustfile.py --http-client urllib3``). urllib3
  takes its attempt cap and retried statuses from the ``Retry`` and has no budget and no request deadline,
  so the entry's or ``load``'s ``max_attempts``, ``budget`` and ``request_deadline``, and the scenario's
  ``retry_on``, are refused (write ``total`` and ``status_forcelist`` into the preset), and so are a ``grpc:``
  load and a ``hosts:`` run (its workers start the emulating user). One scenario can run ``urllib3`` beside
  its emulation: the same preset under two labels.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Literal, Protocol

from retrystorm.loadgen.strategies.presets import Urllib3Retry

Loc = tuple[str | int, ...]
HttpClient = Literal["retrystorm", "urllib3"]
ACROSS_HOSTS = "urllib3's own Retry does not run across hosts yet; remove hosts: to run it on this host"
#: What urllib3's Retry cannot take, and what to write instead.
_INSTEAD = {
    "max_attempts": "write total into the preset (urllib3:total=N, N retries)",
    "budget": "urllib3 has no retry budget",
    "request_deadline": "urllib3 bounds each attempt (load.attempt_timeout), not a request",
}


class _Entry(Protocol):
    @property
    def strategy(self) -> object: ...
    @property
    def http_client(self) -> HttpClient | None: ...
    @property
    def max_attempts(self) -> int | None: ...
    @property
    def budget(self) -> object | None: ...
    @property
    def request_deadline(self) -> float | None: ...


class _Scenario(Protocol):
    @property
    def grpc(self) -> object | None: ...
    @property
    def retry_on(self) -> object | None: ...
    @property
    def load(self) -> object: ...
    @property
    def strategies(self) -> Sequence[_Entry]: ...


def http_client_problems(scenario: _Scenario) -> Iterator[tuple[Loc, str]]:
    """The rules of ``http_client: urllib3`` (see the module docstring)."""
    chosen = [index for index, entry in enumerate(scenario.strategies) if entry.http_client == "urllib3"]
    for index in chosen:
        entry = scenario.strategies[index]
        where: Loc = ("strategies", index)
        if scenario.grpc is not None:
            yield (*where, "http_client"), "applies to an HTTP load; a grpc: load has grpc_mode"
        if getattr(scenario, "hosts", None) is not None:
            yield (*where, "http_client"), ACROSS_HOSTS
        if not isinstance(entry.strategy, Urllib3Retry):
            yield (*where, "strategy"), "urllib3's own Retry runs the urllib3 preset only; give urllib3:total=N,..."
        for field, instead in _INSTEAD.items():
            if getattr(entry, field) is not None:
                yield (*where, field), f"not with http_client urllib3; {instead}"
    if chosen:
        for field, instead in _INSTEAD.items():
            if getattr(scenario.load, field, None) is not None:
                yield ("load", field), f"not with http_client urllib3; {instead}"
        if scenario.retry_on is not None:
            yield ("retry_on",), "not with http_client urllib3; write status_forcelist into the preset"
        if getattr(scenario.load, "reset_after_success", True) is False:
            yield ("load", "reset_after_success"), "not with http_client urllib3; urllib3 starts each backoff afresh"
