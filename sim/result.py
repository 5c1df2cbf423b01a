"""What a simulated run produced, and its analysis into the shared results shape."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from retrystorm.experiment.analysis import LatencySummary, RunResult, recoveries
from retrystorm.experiment.analysis.mechanism import after_resumes
from retrystorm.experiment.analysis.verdicts import evaluate
from retrystorm.experiment.scenario import Assertions
from retrystorm.sim.latency import Unfinished

if TYPE_CHECKING:
    from retrystorm.sim.config import RunConfig
    from retrystorm.sim.series import Series


@dataclasses.dataclass(slots=True)
class RunOutput:
    """The raw output of one run: counters, per-request records, series.

    ``counts["attempts"]`` counts each attempt when it is sent (frozen server or not),
    ``counts["requests"]`` each logical request when it starts: the live runner reads
    its attempts the same way (see :class:`retrystorm.experiment.analysis.RunResult`). The latency
    summary counts the ended requests at their latency and the unfinished ones at their
    age (censored, :mod:`retrystorm.experiment.analysis.stats`).
    """

    config: RunConfig
    counts: dict[str, int]
    #: Each ended logical request's latency (succeeded or given up), its attempts, and whether it succeeded.
    latencies: list[float]
    request_attempts: list[int]
    peak_in_flight: int
    series: Series
    request_ok: list[bool] = dataclasses.field(default_factory=list)
    #: The requests in progress when the run ended: ages so far (censored latencies), attempts so far.
    unfinished: Unfinished = dataclasses.field(default_factory=lambda: Unfinished([], []))

    def result(self, assertions: Assertions | None = None) -> RunResult:
        """The analysed run: counts, latency percentiles, recoveries after each outage (or episode of
        triggers, :meth:`RunConfig.recovery_spans`), verdicts; with triggers other than pauses, every window
        as it happened under ``triggers`` and the errors a burst injected."""
        counts = self.counts
        samples = self.series.samples()
        spans = self.config.recovery_spans()
        found = recoveries(samples, spans) if spans else []
        keys = ("timeouts", "rejections", "late_answers", "dropped", "in_flight_end", "accept_queue_end")
        extra: dict[str, object] = {key: counts[key] for key in keys}
        extra["abandoned_in_flight_end"] = counts.get("abandoned_in_flight_end")
        for key in ("failed_locally", "cancelled"):  # a gRPC channel's, a gRPC server's: only where they apply
            if key in counts:
                extra[key] = counts[key]
        extra["after_resume"] = [figures.to_json() for figures in after_resumes(samples, found)]
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
            latency=LatencySummary.of(self.latencies, self.unfinished.ages),
            peak_in_flight=self.peak_in_flight,
            recoveries=found,
            rejected_locally=counts["rejected_locally"],
            extra=extra,
        )
        if assertions is None:
            return result
        return dataclasses.replace(result, verdicts=evaluate(assertions, result))
