"""What a simulated run produced, and its analysis into the shared results shape."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from experiment.analysis import LatencySummary, RunResult, recoveries
from experiment.analysis.verdicts import evaluate
from experiment.scenario import Assertions

if TYPE_CHECKING:
    from sim.config import RunConfig
    from sim.series import Series


@dataclasses.dataclass(slots=True)
class RunOutput:
    """The raw output of one run: counters, per-request records, series.

    ``counts["attempts"]`` counts each attempt when it is sent (frozen server or not),
    ``counts["requests"]`` each logical request when it starts: the live runner reads
    its attempts the same way (see :class:`experiment.analysis.RunResult`).
    """

    config: RunConfig
    counts: dict[str, int]
    latencies: list[float]
    request_attempts: list[int]
    peak_in_flight: int
    series: Series

    def result(self, assertions: Assertions | None = None) -> RunResult:
        """The analysed run: counts, latency percentiles, recoveries after each outage (or episode of
        triggers, :meth:`RunConfig.recovery_spans`), verdicts; with triggers other than pauses, every window
        as it happened under ``triggers`` and the errors a burst injected."""
        counts = self.counts
        spans = self.config.recovery_spans()
        found = recoveries(self.series.samples(), spans) if spans else []
        extra: dict[str, object] = {
            key: counts[key]
            for key in ("timeouts", "rejections", "late_answers", "dropped", "in_flight_end", "accept_queue_end")
        }
        if self.config.triggers:  # a run with pauses only keeps the shape it always had
            windows = sorted([*self.config.outages, *self.config.triggers], key=lambda w: (w.start_s, w.end_s))
            extra["injected_errors"] = counts["injected_errors"]
            extra["triggers"] = [window.to_json() for window in windows]
        result = RunResult(
            strategy=self.config.spec.label,
            spec=self.config.spec.policy.strategy.spec(),
            attempts=counts["attempts"],
            requests=counts["requests"],
            succeeded=counts["succeeded"],
            gave_up=counts["gave_up"],
            unfinished=counts["unfinished"],
            latency=LatencySummary.of(self.latencies),
            peak_in_flight=self.peak_in_flight,
            recoveries=found,
            rejected_locally=counts["rejected_locally"],
            extra=extra,
        )
        if assertions is None:
            return result
        return dataclasses.replace(result, verdicts=evaluate(assertions, result))
