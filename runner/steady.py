"""A live run's steady window judged from its readings (:mod:`retrystorm.experiment.analysis.steady_state`).

The window is the plan's steady window (the second half of the time before the first trigger), on the
readings' whole seconds: from the first whole second in it to the last whole second *before* the first trigger
starts, so that the run can judge it, and stop, before any trigger is played
(:meth:`retrystorm.runner.orchestrate.StrategyRun.sample`). A run without triggers is judged over the second half
of the run, after it. The counts are differences of the client's counters between the first and the last reading
with a client part inside those seconds: attempts by request and outcome, answers by request and HTTP status, and
the logical requests that succeeded or gave up. A load generator that does not count by request is judged as one
request, from its attempts by outcome. A window that fails while the load generator ran late against its plan
(:func:`lag_between`, over the saturation rule's limit) says so in its problem: its timeouts may be the generator's.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from retrystorm.experiment.analysis.steady_state import RequestAnswers, SteadyRule, SteadyState, judge
from retrystorm.experiment.analysis.validity import ValidityRule
from retrystorm.experiment.scenario import RunSpec
from retrystorm.loadgen.metrics import DEFAULT_REQUEST_LABEL
from retrystorm.loadgen.readings import ClientReading, Reading

RULE = SteadyRule()
#: Beyond this mean lateness over the window the load generator lagged (the saturation rule's limit): a steady
#: window that failed says so, since its timeouts may then be the generator's own.
LAG_LIMIT_S = ValidityRule().lag_limit_s
#: How a run of the built-in target's default request (``GET /api``) names it.
DEFAULT_REQUEST = "GET /api"


def steady_ticks(window: tuple[float, float] | None, duration_s: float) -> tuple[int, int] | None:
    """The whole seconds ``(first, last)`` the steady window is judged over (module docstring); ``None``: too short.

    ``window`` is the plan's steady window; ``None`` (no trigger) means the second half of the run.
    """
    low, high = window if window is not None else (duration_s / 2, duration_s)
    first = math.ceil(low - 1e-9)
    last = math.ceil(high - 1e-9) - 1 if window is not None else math.floor(high + 1e-9)
    return (first, last) if last > first else None


def request_names(spec: RunSpec) -> dict[str, str]:
    """The ``request`` label of each request of the mix, and how a line names it (``GET /`` or ``'create' (POST
    /orders)``); a gRPC load's one request is named by its method (``/package.Service/Method``)."""
    if spec.grpc is not None:
        return {DEFAULT_REQUEST_LABEL: spec.grpc.method}
    if not spec.requests:
        return {DEFAULT_REQUEST_LABEL: DEFAULT_REQUEST}
    names = {}
    for request in spec.requests:
        plain = f"{request.method} {request.path}"
        names[request.name] = plain if request.name == plain else f"{request.name!r} ({plain})"
    return names


def _difference(
    last: Mapping[tuple[str, str], float], first: Mapping[tuple[str, str], float], name: str
) -> dict[str, float]:
    return {
        key[1]: max(0.0, value - first.get(key, 0.0)) for key, value in last.items() if key[0] == name and value > 0
    }


def answers_between(first: ClientReading, last: ClientReading, names: Mapping[str, str]) -> list[RequestAnswers]:
    """Each request's attempts by outcome and answers by status between two readings."""
    if not last.outcomes_by_request:  # counted by outcome only: the whole mix as one request
        outcomes = {key: max(0.0, value - first.attempts.get(key, 0.0)) for key, value in last.attempts.items()}
        return [RequestAnswers("every request", outcomes, {})]
    labels = sorted({request for request, _ in last.outcomes_by_request})
    return [
        RequestAnswers(
            names.get(label, label),
            _difference(last.outcomes_by_request, first.outcomes_by_request, label),
            _difference(last.statuses_by_request, first.statuses_by_request, label),
        )
        for label in labels
    ]


def judge_readings(
    readings: Sequence[Reading], ticks: tuple[int, int], names: Mapping[str, str], rule: SteadyRule = RULE
) -> SteadyState:
    """The steady-state rule over the readings of ticks ``ticks[0]`` to ``ticks[1]``."""
    clients = [(r.tick, r.client) for r in readings if ticks[0] <= r.tick <= ticks[1] and r.client is not None]
    if len(clients) < 2:
        return judge(None, 0.0, 0.0, (float(ticks[0]), float(ticks[1])), rule)
    (start, first), (end, last) = clients[0], clients[-1]
    succeeded = max(0.0, last.requests_ok - first.requests_ok)
    gave_up = max(0.0, last.requests_gave_up - first.requests_gave_up)
    found = judge(answers_between(first, last, names), succeeded, gave_up, (float(start), float(end)), rule)
    lag_s = lag_between(first, last)
    if found.valid or lag_s is None or lag_s <= LAG_LIMIT_S:
        return found
    return dataclasses.replace(
        found,
        problem=f"{found.problem}; but the load generator ran {lag_s * 1000:,.0f} ms late against its plan on "
        f"average in that window (over the {LAG_LIMIT_S * 1000:g} ms limit): what failed may be the generator, not "
        "the service (run with more --workers, fewer users, or on a less loaded machine)",
    )


def lag_between(first: ClientReading, last: ClientReading) -> float | None:
    """The larger of the mean schedule lag and the mean event-loop lag between two readings
    (:mod:`retrystorm.loadgen.schedule_lag`); ``None``: neither observed anything."""
    means = [
        (total - before) / (count - earlier)
        for total, before, count, earlier in (
            (last.schedule_lag_sum, first.schedule_lag_sum, last.schedule_lag_count, first.schedule_lag_count),
            (last.loop_lag_sum, first.loop_lag_sum, last.loop_lag_count, first.loop_lag_count),
        )
        if count - earlier >= 1
    ]
    return max(means, default=None)
