"""Chaos Toolkit actions: start, run and stop retrystorm load with a retry strategy; pause a service.

Every argument is checked before anything starts; a wrong one fails the activity with one line naming it
(:mod:`.settings`). Outputs are JSON, recorded in the experiment's journal.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from chaoslib.exceptions import ActivityFailed

from retrystorm.chaos.client import ChaosApiError, ChaosClient, check_chaos_url
from retrystorm.durations import parse_duration
from retrystorm.errors import SpecError, UserError
from retrystorm.integrations.chaostoolkit.session import SESSIONS, START_TIMEOUT_S, LoadSession
from retrystorm.integrations.chaostoolkit.settings import build_settings
from retrystorm.integrations.chaostoolkit.verdict import NO_VERDICT
from retrystorm.runner.errors import RunFailedError

__all__ = ["pause_service", "run_load", "start_load", "stop_load"]


def _started(session: LoadSession) -> dict[str, Any]:
    load = session.load
    return {
        "session": session.settings.name,
        "strategy": session.settings.spec.label,
        "target": session.settings.target_url,
        "load": load.describe() if load is not None else None,
        "duration_s": session.settings.spec.duration_s,
        "started_utc": session.started_utc,
        "logs": str(session.settings.log_dir),
    }


def _settings_arguments(given: Mapping[str, Any]) -> dict[str, Any]:
    """An action's arguments as :func:`build_settings` takes them (a token from the experiment's secrets too)."""
    arguments = dict(given)
    arguments["server_metrics_given"] = arguments.pop("server_metrics")
    arguments["chaos_token"] = _token(arguments.pop("secrets"), arguments["chaos_token"])
    return arguments


def _token(secrets: Mapping[str, Any] | None, given: str) -> str:
    """``chaos_token``, else the experiment's secret of that name (``"secrets": ["retrystorm"]``)."""
    return given or str((secrets or {}).get("chaos_token") or "")


def _start(arguments: dict[str, Any]) -> LoadSession:
    try:
        return SESSIONS.start(build_settings(**arguments))
    except (UserError, RunFailedError) as error:
        SESSIONS.failed(str(arguments.get("name")), str(error))
        raise ActivityFailed(str(error)) from None


def start_load(
    *,
    target_url: str,
    chaos_url: str,
    strategy: str | Mapping[str, Any] = "exponential",
    load: Mapping[str, Any] | None = None,
    server_metrics: str | Mapping[str, Any] | None = None,
    assertions: Mapping[str, Any] | None = None,
    chaos_target: str | None = None,
    chaos_token: str = "",
    name: str = "retrystorm",
    log_dir: str | None = None,
    secrets: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Start ``strategy``'s load against ``target_url``; return once its users spawn (the load's time 0).

    ``load`` is a scenario's ``load:`` section (default 50 users, think time ``exponential:1s``, attempt timeout
    1 s, 60 s); the load stops by itself after ``duration``. ``chaos_url`` is the chaos API whose pauses (of
    ``chaos_target``, or any) the verdict judges recovery from; ``assertions`` the bounds (default: the server
    recovers within 15 s, the users' goodput within 30 s). ``chaos_token``: the chaos API's token, if it has one
    (or the secret ``chaos_token`` of the activity's ``secrets``). ``name`` is what ``stop_load``, ``verdict`` and the
    control call this load.
    """
    arguments = _settings_arguments(locals())
    return _started(_start(arguments))


def run_load(
    *,
    target_url: str,
    chaos_url: str,
    strategy: str | Mapping[str, Any] = "exponential",
    load: Mapping[str, Any] | None = None,
    server_metrics: str | Mapping[str, Any] | None = None,
    assertions: Mapping[str, Any] | None = None,
    chaos_target: str | None = None,
    chaos_token: str = "",
    name: str = "retrystorm",
    log_dir: str | None = None,
    secrets: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """:func:`start_load`, then wait until the load ends (its duration, ``stop_load``, or a verdict known under the
    control); return the verdict. Give the activity ``"background": true`` so that the method goes on meanwhile."""
    arguments = _settings_arguments(locals())
    session = _start(arguments)
    session.wait()
    session.stop()
    return session.report()


def stop_load(name: str = "retrystorm") -> dict[str, Any]:
    """Stop the load called ``name`` (nothing to do if it ended) and return its verdict and figures."""
    session = SESSIONS.get(name)
    failure = SESSIONS.failure(name)
    if failure is not None:  # nothing to stop
        return {"verdict": NO_VERDICT, "reason": f"its load did not start: {failure}", "session": name}
    if session is None:
        raise ActivityFailed(f"stop_load: no load named {name!r} was started in this experiment")
    session.stop()
    return session.report()


def pause_service(
    *,
    chaos_url: str,
    target: str,
    duration: str,
    chaos_token: str = "",
    at: str | None = None,
    load_name: str = "retrystorm",
    secrets: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Pause ``target`` for ``duration`` (``5s``) through retrystorm's chaos API (``POST /outages``); the outage.

    ``at`` (``10s``): pause that long after the load called ``load_name`` started (its time 0; waiting first for it
    to start, when it runs in the background), so that a steady state is measured before the pause however long
    Locust took to start; without ``at``, now. The chaos API resumes the target at the end of ``duration``, and its
    watchdog does even if the API dies meanwhile.
    """
    try:
        base = check_chaos_url(str(chaos_url))
        delay_s = None if at is None else parse_duration(str(at), what="at")
    except (SpecError, UserError) as error:
        raise ActivityFailed(f"pause_service: {error}") from None
    if base is None:
        raise ActivityFailed("pause_service: chaos_url: the chaos API's address is needed, like http://127.0.0.1:8071")
    if delay_s is not None:
        _sleep_until_load_time(load_name, delay_s)
    try:
        return ChaosClient(base, _token(secrets, chaos_token)).pause(str(target), str(duration))
    except ChaosApiError as error:
        raise ActivityFailed(f"pause_service: {error.message}") from None


def _sleep_until_load_time(name: str, at_s: float) -> None:
    """Wait until the load ``name`` has run ``at_s`` seconds (for it to start first, up to its start timeout)."""
    deadline = time.monotonic() + START_TIMEOUT_S
    session = SESSIONS.get(name)
    while session is None or not session.started.is_set():
        failure = SESSIONS.failure(name)
        if failure is not None:
            raise ActivityFailed(f"pause_service: the load named {name!r} did not start ({failure}): nothing paused")
        if time.monotonic() > deadline:
            raise ActivityFailed(f"pause_service: no load named {name!r} started within {START_TIMEOUT_S:g} s")
        if session is not None and not session.running:
            raise ActivityFailed(f"pause_service: the load named {name!r} ended before it started")
        time.sleep(0.1)
        session = SESSIONS.get(name)
    time.sleep(max(0.0, session.t0 + at_s - time.monotonic()))
