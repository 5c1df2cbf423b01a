"""``--simulate``: the same scenario in the simulator, and how far its figures are from the live ones.

The simulator runs each strategy with the outages as planned (the live run's happen a
few milliseconds later). For each strategy and figure ``f`` the comparison gives
``live``, ``simulated``, ``difference = simulated - live`` and ``ratio = simulated /
live`` (``null`` when either is missing or live is 0). For the per-second curves it
gives the mean absolute difference over the seconds both have,
``mean_abs_diff = sum |sim_i - live_i| / n``, and the live mean beside it for scale.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from retrystorm.errors import UserError
from retrystorm.experiment.report import StrategyCurves
from retrystorm.experiment.scenario import Scenario, StrategyEntry
from retrystorm.experiment.scenario.grpc import simulation_notes
from retrystorm.loadgen.series_names import ATTEMPTS, DELAY_S, GOODPUT, IN_FLIGHT

FIGURES = (
    "attempts",
    "requests",
    "succeeded",
    "amplification",
    "success_ratio",
    "latency_p50",
    "latency_p99",
    "peak_in_flight",
    "server_recovery_s",
    "client_recovery_s",
)
CURVES = (GOODPUT, ATTEMPTS, IN_FLIGHT, DELAY_S)


def check_simulable(scenario: Scenario, entries: Sequence[StrategyEntry]) -> None:
    """Refuse, before anything runs live, what the simulator would refuse after the live run.

    Builds each strategy's run configuration, which is where the simulator validates a
    run (e.g. users that would loop at one instant of virtual time), without simulating.
    """
    from retrystorm.sim.config import RunConfig, no_model_message  # noqa: PLC0415 - only with --simulate

    if scenario.model is None:
        url = scenario.target.url if scenario.target is not None else "target:"
        raise UserError(f"--simulate: {no_model_message(scenario.name, url)}")
    outages = tuple(scenario.outages())
    for entry in entries:
        try:
            RunConfig.from_scenario(scenario, entry, outages)
        except UserError as error:
            raise UserError(f"--simulate: the simulator cannot run {entry.label}: {error}") from None


def grpc_simulation_notes(scenario: Scenario) -> list[str]:
    """What the simulator made of ``scenario``'s gRPC load (none for an HTTP one)."""
    grpc = scenario.grpc
    if grpc is None:
        return []
    return simulation_notes(grpc, [entry.grpc_mode or grpc.mode for entry in scenario.strategies])


def simulate(scenario: Scenario) -> tuple[list[dict[str, Any]], list[StrategyCurves]]:
    """Each strategy of ``scenario`` in the simulator: its results rows and its curves."""
    from retrystorm.sim.experiments.scenario_runs import run_scenario  # noqa: PLC0415 - only with --simulate

    report = run_scenario(scenario)
    curves = []
    for run in report.runs:
        series = run.series
        curves.append(
            StrategyCurves(
                label=run.config.spec.label,
                times_s=series.times(),
                goodput=list(series.rate(GOODPUT)),
                attempts=list(series.rate(ATTEMPTS)),
                in_flight=[float(value) for value in series.in_flight],
                delay_s=list(series.delay_s),
                outages=[(outage.start_s, outage.end_s) for outage in run.config.outages],
                peak_in_flight=float(max(series.peak_in_flight, default=0)),
            )
        )
    return report.rows, curves


def _first(value: object) -> float | None:
    """A figure as one number: the first of a per-outage list."""
    if isinstance(value, list):
        value = value[0] if value else None
    return float(value) if isinstance(value, int | float) else None


def figure_difference(live: object, simulated: object) -> dict[str, float | None]:
    """``live``, ``simulated``, their difference and ratio (see the module docstring)."""
    a, b = _first(live), _first(simulated)
    both = a is not None and b is not None
    return {
        "live": a,
        "simulated": b,
        "difference": round(b - a, 6) if both and a is not None and b is not None else None,
        "ratio": round(b / a, 6) if both and a and b is not None else None,
    }


def curve_difference(live: Sequence[float | None], simulated: Sequence[float | None]) -> dict[str, float | None]:
    """Mean absolute difference over the seconds both curves have, and the live mean."""
    pairs = [(a, b) for a, b in zip(live, simulated, strict=False) if a is not None and b is not None]
    if not pairs:
        return {"mean_abs_diff": None, "live_mean": None, "seconds": 0}
    diff = math.fsum(abs(b - a) for a, b in pairs) / len(pairs)
    mean = math.fsum(a for a, _ in pairs) / len(pairs)
    return {"mean_abs_diff": round(diff, 6), "live_mean": round(mean, 6), "seconds": len(pairs)}


def comparison(
    live_rows: Sequence[Mapping[str, Any]],
    sim_rows: Sequence[Mapping[str, Any]],
    live_curves: Sequence[StrategyCurves],
    sim_curves: Sequence[StrategyCurves],
) -> dict[str, Any]:
    """Per strategy label: each figure's and each curve's difference, simulated against live."""
    sims = {row["strategy"]: row for row in sim_rows}
    sim_by_label = {curves.label: curves for curves in sim_curves}
    found: dict[str, Any] = {}
    for row in live_rows:
        label = row["strategy"]
        if label not in sims:
            continue
        entry: dict[str, Any] = {name: figure_difference(row.get(name), sims[label].get(name)) for name in FIGURES}
        live = next((curves for curves in live_curves if curves.label == label), None)
        if live is not None and label in sim_by_label:
            entry["curves"] = {
                name: curve_difference(getattr(live, name), getattr(sim_by_label[label], name)) for name in CURVES
            }
        found[label] = entry
    return found
