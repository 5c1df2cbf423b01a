"""What an experiment hands to the output layer: rows, runs, findings, notes."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from retrystorm.experiment.analysis import RunResult, results_document
from retrystorm.sim.result import RunOutput


@dataclasses.dataclass(frozen=True, slots=True)
class Finding:
    """A published result the simulation must reproduce, and whether it did."""

    text: str
    holds: bool

    def to_json(self) -> dict[str, object]:
        """``{"text": ..., "holds": ...}``."""
        return {"text": self.text, "holds": self.holds}


@dataclasses.dataclass(slots=True)
class Report:
    """The outcome of one experiment or scenario.

    ``rows`` are the JSON ``results``; ``runs`` and ``results`` are set for scenario
    runs (time series, per-request records, verdicts); ``notes`` say which choices the
    simulation had to make; ``findings`` check the published results.
    """

    experiment: str
    kind: Literal["runs", "contention", "edge"]
    rows: list[dict[str, Any]]
    runs: list[RunOutput] = dataclasses.field(default_factory=list)
    results: list[RunResult] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    findings: list[Finding] = dataclasses.field(default_factory=list)
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when every finding holds and every assertion passed."""
        return all(f.holds for f in self.findings) and all(r.passed is not False for r in self.results)

    def document(self) -> dict[str, object]:
        """The ``--json`` document."""
        extra: dict[str, object] = dict(self.extra)
        if self.findings:
            extra["findings"] = [finding.to_json() for finding in self.findings]
        if self.notes:
            extra["choices"] = list(self.notes)
        extra["ok"] = self.ok
        return results_document(self.experiment, self.rows, **extra)
