"""Assertion verdicts: each check of a scenario's ``assertions``, with the measured value beside the bound.

With several outages a recovery check must hold after every one of them:
``server_recovers_within: 15s`` needs every server recovery to be seen and ``<= 15 s``;
``never`` needs none to be seen (a metastable failure after every outage).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from retrystorm.durations import format_duration
from retrystorm.experiment.analysis.results import Measured, RunResult, Verdict
from retrystorm.experiment.scenario.model import Assertions


def _recovery_verdict(check: str, bound: float | Literal["never"], times: Sequence[float | None]) -> Verdict:
    measured: Measured = list(times) if len(times) != 1 else times[0]
    if bound == "never":
        return Verdict(check, "never", measured, all(time is None for time in times))
    passed = all(time is not None and time <= bound + 1e-9 for time in times)
    return Verdict(check, format_duration(bound), measured, passed)


def evaluate(assertions: Assertions, result: RunResult) -> list[Verdict]:
    """Check every bound set in ``assertions`` against ``result``, in a fixed order."""
    found: list[Verdict] = []
    if assertions.server_recovers_within is not None:
        times = [recovery.server_s for recovery in result.recoveries]
        found.append(_recovery_verdict("server_recovers_within", assertions.server_recovers_within, times))
    if assertions.client_recovers_within is not None:
        times = [recovery.client_s for recovery in result.recoveries]
        found.append(_recovery_verdict("client_recovers_within", assertions.client_recovers_within, times))
    if assertions.min_success_ratio is not None:
        ratio = result.success_ratio
        passed = ratio is not None and ratio >= assertions.min_success_ratio
        found.append(Verdict("min_success_ratio", assertions.min_success_ratio, ratio, passed))
    if assertions.max_amplification is not None:
        amplification = result.amplification
        passed = amplification is not None and amplification <= assertions.max_amplification
        found.append(Verdict("max_amplification", assertions.max_amplification, amplification, passed))
    if assertions.max_peak_in_flight is not None:
        peak = result.peak_in_flight
        passed = peak is not None and peak <= assertions.max_peak_in_flight
        found.append(Verdict("max_peak_in_flight", assertions.max_peak_in_flight, peak, passed))
    return found
