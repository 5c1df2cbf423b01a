"""Stop a live run when a scenario's stop condition (``slo:``) is breached.

A :class:`SloGuard` reads each condition once a second while a strategy runs: a ``series`` from the runner's own
readings (the rate between the last two readings of the load generator's counters, or the last reading of a gauge,
as :mod:`retrystorm.runner.series` computes them), a ``promql`` query from Prometheus' HTTP API
(``GET /api/v1/query``, within :data:`QUERY_TIMEOUT_S`, in a task beside the readings so a slow Prometheus never
delays one). Once a condition has been beyond its bound at every reading for its ``for``, :attr:`SloGuard.breach`
is set; the orchestration then ends the strategy's run where it is, resumes and restores every target (the same
``finally`` as any run's end) and runs no further strategy.

Before the run, :meth:`SloGuard.check` refuses a series that does not exist and sends every query once: Prometheus
unreachable or refusing the query (a PromQL syntax error) is a :class:`~retrystorm.errors.UserError`, exit 2, before
anything starts. A query that fails during the run is logged once and reads as no value (not a breach).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
from collections.abc import Sequence
from typing import Any

import aiohttp

from retrystorm.errors import UserError, did_you_mean
from retrystorm.experiment.scenario import RunSpec
from retrystorm.experiment.scenario.slo import StopCondition
from retrystorm.loadgen.readings import Reading
from retrystorm.runner.series import CLIENT_GAUGES, COUNTERS, TARGET_GAUGES

log = logging.getLogger(__name__)

#: Deadline of one Prometheus query (the guard asks once a second).
QUERY_TIMEOUT_S = 0.8
#: The series a condition may name: the runner's per-second rates and gauges.
SERIES = (*COUNTERS, *TARGET_GAUGES, *CLIENT_GAUGES)


@dataclasses.dataclass(frozen=True, slots=True)
class Breach:
    """The condition that stopped the run: which, where, when (seconds after the load started) and its value."""

    condition: StopCondition
    strategy: str
    at_s: float
    value: float

    def describe(self) -> str:
        """``in_flight above 500 for 3s: 812 at 27s of fixed:100ms``."""
        return f"{self.condition.describe()}: {self.value:.6g} at {self.at_s:.0f}s of {self.strategy}"

    def to_json(self) -> dict[str, object]:
        """The breach, for results.json's ``slo``."""
        return {
            "condition": self.condition.describe(),
            "query": self.condition.query,
            "strategy": self.strategy,
            "at_s": round(self.at_s, 3),
            "value": self.value,
        }


def series_value(name: str, readings: Sequence[Reading]) -> float | None:
    """The latest value of series ``name``: a counter's rate between the last two client readings, a gauge's last
    reading (``None``: not read)."""
    if name in COUNTERS:
        clients = [(reading.time_s, reading.client) for reading in readings if reading.client is not None][-2:]
        if len(clients) < 2:
            return None
        (t0, c0), (t1, c1) = clients
        return max(0.0, COUNTERS[name](c1) - COUNTERS[name](c0)) / max(t1 - t0, 1e-3)
    last = readings[-1] if readings else None
    if last is None:
        return None
    if name in TARGET_GAUGES:
        return TARGET_GAUGES[name](last.target) if last.target is not None else None
    return CLIENT_GAUGES[name](last.client) if last.client is not None else None


def _vector_value(payload: Any, condition: StopCondition) -> float | None:
    """The value of a query's answer: a scalar, or a vector's sample furthest beyond the bound (empty: ``None``)."""
    if not isinstance(payload, dict) or payload.get("status") != "success":
        error = payload.get("error") if isinstance(payload, dict) else None
        raise ValueError(str(error or "not a Prometheus query answer"))
    data = payload["data"]
    if data["resultType"] == "scalar":
        values = [float(data["result"][1])]
    elif data["resultType"] == "vector":
        values = [float(sample["value"][1]) for sample in data["result"]]
    else:
        raise ValueError(f"a {data['resultType']} result; expected an instant vector or a scalar")
    values = [value for value in values if not math.isnan(value)]
    if not values:
        return None
    return max(values) if condition.above is not None else min(values)


class SloGuard:
    """The stop conditions of one run (see the module docstring)."""

    def __init__(self, conditions: Sequence[StopCondition], *, default_prometheus: str | None = None) -> None:
        self.conditions = list(conditions)
        self.default_prometheus = default_prometheus
        self.breach: Breach | None = None
        self._since: dict[int, float] = {}
        self._latest: dict[int, float | None] = {}
        self._failed: set[int] = set()
        self._session: aiohttp.ClientSession | None = None

    def _url(self, index: int) -> str:
        condition = self.conditions[index]
        url = condition.prometheus or self.default_prometheus
        if url is None:
            raise UserError(
                f"slo[{index}].prometheus: no Prometheus to send the query to; give prometheus: URL "
                "(or run with --backend compose, whose Prometheus is the default)"
            )
        return url.rstrip("/")

    async def _query(self, index: int) -> float | None:
        condition = self.conditions[index]
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=QUERY_TIMEOUT_S))
        async with self._session.get(f"{self._url(index)}/api/v1/query", params={"query": condition.query}) as answer:
            payload = await answer.json(content_type=None)
        return _vector_value(payload, condition)

    async def check(self) -> None:
        """Refuse unknown series and send each query once (:class:`UserError`, before anything starts)."""
        try:
            for index, condition in enumerate(self.conditions):
                if condition.series is not None and condition.series not in SERIES:
                    hint = did_you_mean(condition.series, SERIES)
                    raise UserError(
                        f"slo[{index}].series: {condition.series!r} is not a series of the run{hint}; "
                        f"accepted: {', '.join(SERIES)}"
                    )
                if condition.promql is not None:
                    await self._check_query(index)
        finally:
            await self.close()

    async def _check_query(self, index: int) -> None:
        url = self._url(index)
        try:
            await self._query(index)
        except (aiohttp.ClientError, TimeoutError) as error:
            reason = " ".join(str(error).split()) or type(error).__name__
            raise UserError(f"slo[{index}].prometheus: cannot query {url}: {reason}") from None
        except (ValueError, KeyError, TypeError, IndexError) as error:
            raise UserError(f"slo[{index}].promql: {url} refused the query: {error}") from None

    def start_strategy(self) -> None:
        """Forget the previous strategy's readings (each strategy's breach is its own)."""
        self._since.clear()
        self._latest.clear()

    def observe(self, strategy: str, time_s: float, readings: Sequence[Reading]) -> Breach | None:
        """Take this second's values (series from ``readings``, queries as last answered); the breach, if any."""
        for index, condition in enumerate(self.conditions):
            value = series_value(condition.query, readings) if condition.series is not None else self._latest.get(index)
            if value is None or not condition.breaches(value):
                self._since.pop(index, None)
                continue
            since = self._since.setdefault(index, time_s)
            if time_s - since >= condition.for_s - 1e-9:
                self.breach = Breach(condition, strategy, time_s, value)
                return self.breach
        return None

    @property
    def has_queries(self) -> bool:
        """Whether any condition is a Prometheus query (then :meth:`poll` runs beside the readings)."""
        return any(condition.promql is not None for condition in self.conditions)

    async def poll(self, sleep_until: Any, t0: float) -> None:
        """Ask every query once a second from ``t0`` (for :meth:`observe`) until cancelled."""
        tick = 0
        while True:
            await sleep_until(t0 + tick)
            tick += 1
            for index, condition in enumerate(self.conditions):
                if condition.promql is not None:
                    self._latest[index] = await self._safe_query(index)

    async def _safe_query(self, index: int) -> float | None:
        try:
            return await self._query(index)
        except (aiohttp.ClientError, TimeoutError, ValueError, KeyError, TypeError, IndexError) as error:
            if index not in self._failed:
                self._failed.add(index)
                log.warning("slo[%d]: the query failed (read as no value): %s", index, error)
            return None

    async def close(self) -> None:
        """Release the HTTP session."""
        if self._session is not None:
            await self._session.close()
            self._session = None

    def ran(self, spec: RunSpec) -> RunSpec:
        """``spec`` as it ran: up to the breach, if one stopped it (its analysis covers those seconds only)."""
        if self.breach is None:
            return spec
        return dataclasses.replace(spec, duration_s=max(1.0, math.ceil(self.breach.at_s)))

    def to_json(self, skipped: Sequence[str]) -> dict[str, object]:
        """results.json's ``slo``: the conditions, the breach (``None``: none) and the strategies not run."""
        return {
            "conditions": [condition.describe() for condition in self.conditions],
            "breached": self.breach.to_json() if self.breach is not None else None,
            "skipped": list(skipped),
        }


def check_guard(guard: SloGuard) -> None:
    """:meth:`SloGuard.check` from synchronous code (the command line, before the run)."""
    asyncio.run(guard.check())
