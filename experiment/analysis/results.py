"""The results document: one object per strategy run, the shape ``--json`` prints.

``{"experiment": NAME, "results": [RUN, ...], ...}``; each ``RUN`` holds at least
``strategy`` (the label as the user wrote it), ``attempts``, ``requests``,
``succeeded``, ``gave_up``, ``amplification``, ``latency_p50``, ``latency_p95``,
``latency_p99``, ``latency_max``, ``latency_censored``, ``peak_in_flight``,
``server_recovery_s`` and ``client_recovery_s``. The latencies count every logical
request started: the ended ones at their latency, the unfinished ones at their age
when the run ended (censored; ``latency_censored`` says how many,
:mod:`retrystorm.experiment.analysis.stats`).
Times are in seconds; ``null`` where something did not happen (no recovery, no
finished request); recovery times are a list when a run had several outages and
``null`` when it had none. The simulator and the live runner write the same shape.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from retrystorm.experiment.analysis.recovery import Recovery
from retrystorm.experiment.analysis.stats import LatencySummary

Measured = float | None | list[float | None]


@dataclasses.dataclass(frozen=True, slots=True)
class Verdict:
    """One assertion checked: its name, the bound, what was measured, whether it held."""

    check: str
    bound: float | str
    measured: Measured
    passed: bool

    @property
    def expected_failure(self) -> bool:
        """A check that a strategy never recovers (``never``), which held: a failure the scenario expected, seen."""
        return self.passed and self.bound == "never"

    @property
    def status(self) -> str:
        """``pass``, ``FAIL``, or ``expected failure, confirmed`` (a ``never`` that held is no success)."""
        if self.expected_failure:
            return "expected failure, confirmed"
        return "pass" if self.passed else "FAIL"

    def describe(self) -> str:
        """``server_recovers_within 15s: measured 6s (pass)``; a recovery not seen is ``never``, as in the tables;
        ``server_recovers_within never: measured never (expected failure, confirmed)``."""
        within = self.check.endswith("_within")
        shown = _show(self.measured, "s" if within else "", "never" if within else "none")
        return f"{self.check} {_show(self.bound)}: measured {shown} ({self.status})"

    def to_json(self) -> dict[str, object]:
        """The verdict as a JSON object."""
        return {"check": self.check, "bound": self.bound, "measured": self.measured, "passed": self.passed}


def _show(value: object, unit: str = "", missing: str = "none") -> str:
    if value is None:
        return missing
    if isinstance(value, list):
        return "[" + ", ".join(_show(item, unit, missing) for item in value) + "]"
    if isinstance(value, float):
        return f"{value:.4g}{unit}"
    return f"{value}{unit}"


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _per_outage(values: Sequence[float | None]) -> float | list[float | None] | None:
    if not values:
        return None
    rounded = [_round(value) for value in values]
    return rounded[0] if len(rounded) == 1 else rounded


@dataclasses.dataclass(frozen=True, slots=True)
class RunResult:
    """What one strategy's run produced: counts, latencies, peak, recoveries, verdicts.

    ``requests`` are the logical requests started; each ended ``succeeded``, ``gave_up``
    or was still ``unfinished`` when the run ended. ``attempts`` are the attempts that
    went on the wire, counted when sent (those still awaiting an answer when the run
    ended included), in the simulator and live alike; a budget's local rejections are
    counted in ``rejected_locally``, not here. ``amplification`` is attempts sent per
    logical request started.
    """

    strategy: str
    spec: str
    attempts: int
    requests: int
    succeeded: int
    gave_up: int
    unfinished: int
    latency: LatencySummary
    peak_in_flight: int | None
    recoveries: Sequence[Recovery] = ()
    rejected_locally: int = 0
    verdicts: Sequence[Verdict] = ()
    extra: Mapping[str, object] = dataclasses.field(default_factory=dict)

    @property
    def amplification(self) -> float | None:
        """Attempts sent per logical request started."""
        return self.attempts / self.requests if self.requests else None

    @property
    def success_ratio(self) -> float | None:
        """Succeeded logical requests per logical request started."""
        return self.succeeded / self.requests if self.requests else None

    @property
    def passed(self) -> bool | None:
        """Whether every assertion held (``None`` when there were none)."""
        return all(verdict.passed for verdict in self.verdicts) if self.verdicts else None

    def to_json(self) -> dict[str, object]:
        """This run as a JSON object (see the module docstring for the keys)."""
        latency = self.latency
        document: dict[str, object] = {
            "strategy": self.strategy,
            "spec": self.spec,
            "attempts": self.attempts,
            "requests": self.requests,
            "succeeded": self.succeeded,
            "gave_up": self.gave_up,
            "unfinished": self.unfinished,
            "rejected_locally": self.rejected_locally,
            "amplification": _round(self.amplification),
            "success_ratio": _round(self.success_ratio),
            "latency_p50": _round(latency.p50),
            "latency_p75": _round(latency.p75),
            "latency_p90": _round(latency.p90),
            "latency_p95": _round(latency.p95),
            "latency_p99": _round(latency.p99),
            "latency_max": _round(latency.max),
            "latency_censored": latency.censored,
            "peak_in_flight": self.peak_in_flight,
            "outages": [[_round(r.outage.start_s), _round(r.outage.end_s)] for r in self.recoveries],
            "server_recovery_s": _per_outage([r.server_s for r in self.recoveries]),
            "client_recovery_s": _per_outage([r.client_s for r in self.recoveries]),
        }
        if self.recoveries:
            document["server_recovery_signals"] = self.recoveries[0].server_signals
        if self.verdicts:
            document["assertions"] = [verdict.to_json() for verdict in self.verdicts]
            document["passed"] = self.passed
        document.update(self.extra)
        return document


def results_document(
    experiment: str, results: Iterable[Mapping[str, object] | RunResult], **extra: object
) -> dict[str, object]:
    """``{"experiment": ..., "results": [...], **extra}``; results may be runs or ready objects."""
    rows = [row.to_json() if isinstance(row, RunResult) else dict(row) for row in results]
    return {"experiment": experiment, "results": rows, **extra}
