"""How far the simulation is from the live run, strategy by strategy.

Both sets of curves go through the same recovery analysis
(:func:`retrystorm.experiment.analysis.recoveries`, each over its own outages and default steady
window), so the comparison is like for like: server and client recovery after each
outage (simulated minus live, in seconds), and the peak in flight and the mean
goodput and attempts per second over the run (simulated / live).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from retrystorm.experiment.analysis import recoveries
from retrystorm.experiment.report.curves import StrategyCurves
from retrystorm.experiment.report.text import DASH, count, recovery_text
from retrystorm.loadgen.series_names import ATTEMPTS, GOODPUT, IN_FLIGHT


@dataclasses.dataclass(frozen=True, slots=True)
class FitRow:
    """One figure measured live and simulated, and how far apart they are."""

    figure: str
    live: str
    simulated: str
    off: str


def _recoveries(curves: StrategyCurves) -> tuple[list[float | None], list[float | None]]:
    outages = curves.recovery_outages()
    if not outages or not curves.times_s:
        return [], []
    found = recoveries(curves.samples(), outages)
    return [r.server_s for r in found], [r.client_s for r in found]


def _mean(values: Sequence[float | None]) -> float | None:
    seen = [value for value in values if value is not None]
    return math.fsum(seen) / len(seen) if seen else None


def _peak(values: Sequence[float | None]) -> float | None:
    return max((value for value in values if value is not None), default=None)


def _ratio(live: float | None, simulated: float | None) -> str:
    if live is None or simulated is None or live == 0:
        return DASH
    return f"×{simulated / live:.2f}"


def _differences(live: Sequence[float | None], simulated: Sequence[float | None]) -> str:
    if len(live) != len(simulated):
        return f"{len(simulated)} outages simulated, {len(live)} live"
    shown = []
    for live_s, sim_s in zip(live, simulated, strict=True):
        if live_s is None and sim_s is None:
            shown.append("both never")
        elif live_s is None or sim_s is None:
            shown.append("only the simulation recovered" if live_s is None else "only the live run recovered")
        else:
            shown.append(f"{sim_s - live_s:+.0f}s")
    return ", ".join(shown) if shown else DASH


def fit_rows(live: StrategyCurves, simulated: StrategyCurves) -> list[FitRow]:
    """Recoveries, peak in flight, mean goodput and attempts: live, simulated, how far off."""
    live_server, live_client = _recoveries(live)
    sim_server, sim_client = _recoveries(simulated)
    rows = []
    if live.outages or simulated.outages:
        for figure, live_values, sim_values in (
            ("server recovery", live_server, sim_server),
            ("client recovery", live_client, sim_client),
        ):
            rows.append(
                FitRow(
                    figure,
                    recovery_text(live_values, bool(live_values), none=DASH),
                    recovery_text(sim_values, bool(sim_values), none=DASH),
                    _differences(live_values, sim_values),
                )
            )
    for figure, name, show in (
        ("peak in flight", IN_FLIGHT, count),
        ("mean goodput (req/s)", GOODPUT, lambda v: DASH if v is None else f"{v:.1f}"),
        ("mean attempts/s", ATTEMPTS, lambda v: DASH if v is None else f"{v:.1f}"),
    ):
        if name == IN_FLIGHT:
            live_value, sim_value = _peak_of(live), _peak_of(simulated)
        else:
            live_value, sim_value = _mean(getattr(live, name)), _mean(getattr(simulated, name))
        rows.append(FitRow(figure, show(live_value), show(sim_value), _ratio(live_value, sim_value)))
    return rows


def _peak_of(curves: StrategyCurves) -> float | None:
    """The exact peak when the curves carry one, else the largest reading."""
    return curves.peak_in_flight if curves.peak_in_flight is not None else _peak(curves.in_flight)


def simulated_by_label(simulated: Sequence[StrategyCurves]) -> dict[str, StrategyCurves]:
    """The simulated curves by strategy label."""
    return {curves.label: curves for curves in simulated}
