"""What ``start_load`` is given, checked before anything starts: a scenario's own fields, validated by its loader.

The arguments mirror a scenario file: ``strategy`` is one entry of ``strategies:`` (a spec such as ``smira`` or
``exponential:base=100ms``, or a mapping with ``label``, ``strategy``, ``budget``...), ``load`` is its ``load:``
section (``users``, ``think_time``, ``attempt_timeout``, ``duration``...), ``server_metrics`` its
``target.metrics:`` (``{url, in_flight}`` or ``{prometheus: {url, query_in_flight}}``), or ``"builtin"``: the
built-in target's own ``/metrics`` beside ``target_url`` (its in-flight gauge and modelled delay), and ``assertions``
its ``assertions:`` for this strategy. So every check and every message is the scenario loader's, as one line naming
the argument.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from retrystorm.chaos.client import ChaosClient, check_chaos_url
from retrystorm.errors import SpecError, UserError
from retrystorm.experiment.scenario import Assertions, RunSpec, ScenarioError, scenario_from_data
from retrystorm.loadgen.exposition import parse_target
from retrystorm.runner import server_metrics
from retrystorm.runner.server_metrics import Parse

#: Where ``start_load`` says its arguments are (its messages start with it).
SOURCE = "start_load"
BUILTIN = "builtin"
#: The bounds a session is judged by unless ``assertions`` says otherwise.
DEFAULT_ASSERTIONS: Mapping[str, str] = {"server_recovers_within": "15s", "client_recovers_within": "30s"}
#: Load a session runs unless ``load`` says otherwise: short, small, on a laptop's scale.
DEFAULT_LOAD: Mapping[str, Any] = {
    "users": 50,
    "think_time": "exponential:1s",
    "attempt_timeout": "1s",
    "duration": "60s",
}
MAX_NAME_CHARS = 100


def one_line(text: str) -> str:
    """A message of several lines as one: its first line, and how many more there were."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) <= 1:
        return text.strip()
    return f"{lines[0]} (and {len(lines) - 1} more problems)"


#: The scenario's field -> the argument of start_load that gave it (a message names the argument).
ARGUMENT_OF = {"strategies[0].strategy": "strategy", "strategies[0]": "strategy", "target.url": "target_url",
               "target.metrics": "server_metrics", "target": "target_url"}  # fmt: skip


def _argument_names(message: str) -> str:
    """``start_load: strategies[0].strategy: ...`` as ``start_load: strategy: ...``."""
    head = f"{SOURCE}: "
    for field, argument in ARGUMENT_OF.items():
        if message.startswith(head + field):
            return head + argument + message[len(head + field) :]
    return message


@dataclasses.dataclass(frozen=True, slots=True)
class LoadSettings:
    """One load session, checked."""

    name: str
    spec: RunSpec
    assertions: Assertions
    target_url: str
    #: Where the server's readings come from and how they are read; ``None``: judged from the clients.
    metrics: tuple[str, Parse] | None
    chaos: ChaosClient
    #: Only pauses of this chaos API target count (``None``: every pause).
    chaos_target: str | None
    log_dir: Path


def _name(name: object) -> str:
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME_CHARS:
        raise UserError(f"{SOURCE}: name: got {str(name)[:40]!r}, expected a text of 1 to {MAX_NAME_CHARS} characters")
    return name.strip()


def _metrics(target_url: str, given: object) -> tuple[dict[str, Any], tuple[str, Parse] | None]:
    """The scenario's ``target.metrics`` (or none) and where readings come from."""
    if given is None:
        return {}, None
    if given == BUILTIN:
        return {}, (target_url.rstrip("/") + "/metrics", parse_target)
    if isinstance(given, Mapping):
        return {"metrics": dict(given)}, None
    raise UserError(
        f"{SOURCE}: server_metrics: got {str(given)[:60]!r}, expected {BUILTIN!r} (a retrystorm target's own "
        "/metrics), a mapping {url, in_flight} or {prometheus: {url, query_in_flight}}, or none"
    )


def _assertions(given: object) -> Assertions:
    data = DEFAULT_ASSERTIONS if given is None else given
    if not isinstance(data, Mapping):
        raise UserError(
            f"{SOURCE}: assertions: got {str(data)[:60]!r}, expected a mapping such as {DEFAULT_ASSERTIONS}"
        )
    try:
        found = Assertions.model_validate(dict(data))
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        raise UserError(f"{SOURCE}: assertions.{where}: {first['msg']}") from None
    if not any(
        isinstance(bound, float | int) for bound in (found.server_recovers_within, found.client_recovers_within)
    ):
        raise UserError(
            f"{SOURCE}: assertions: give server_recovers_within or client_recovers_within as a duration "
            "(such as 15s): the verdict is whether the service recovers within it"
        )
    return found


def build_settings(
    *,
    name: str,
    target_url: str,
    chaos_url: str,
    strategy: object,
    load: Mapping[str, Any] | None = None,
    server_metrics_given: object = None,
    assertions: object = None,
    chaos_target: str | None = None,
    chaos_token: str = "",
    log_dir: str | None = None,
) -> LoadSettings:
    """Check every argument (a :class:`~retrystorm.errors.UserError` of one line names the first wrong one)."""
    label = _name(name)
    try:
        chaos_base = check_chaos_url(str(chaos_url))
    except SpecError as error:
        raise UserError(f"{SOURCE}: chaos_url: {error}") from None
    if chaos_base is None:
        raise UserError(f"{SOURCE}: chaos_url: the chaos API's address is needed, like http://127.0.0.1:8071")
    if load is not None and not isinstance(load, Mapping):
        raise UserError(f"{SOURCE}: load: got {str(load)[:60]!r}, expected a mapping such as {dict(DEFAULT_LOAD)}")
    target, metrics = _metrics(str(target_url), server_metrics_given)
    data = {
        "name": label,
        "target": {"url": target_url, **target},
        "load": {**DEFAULT_LOAD, **(load or {})},
        "strategies": [strategy],
    }
    try:
        scenario = scenario_from_data(data, source=SOURCE)
    except ScenarioError as error:
        raise UserError(_argument_names(one_line(str(error)))) from None
    if metrics is None and scenario.target is not None:
        metrics = server_metrics.endpoint(scenario.target.metrics)
    return LoadSettings(
        name=label,
        spec=RunSpec.of(scenario, scenario.strategies[0]),
        assertions=_assertions(assertions),
        target_url=scenario.target.url if scenario.target is not None else str(target_url),
        metrics=metrics,
        chaos=ChaosClient(chaos_base, chaos_token),
        chaos_target=chaos_target,
        log_dir=Path(log_dir) if log_dir else Path.cwd() / "retrystorm-chaostoolkit" / label,
    )
