"""The run report's PNGs: one per strategy (live, with the simulation dashed beside it) and a comparison.

Beside goodput, attempts/s, in flight and the modelled delay, a strategy's figure
draws its outcomes over time (ok, timed-out attempts and given-up requests per second)
and its latency over time (p50, p95 and p99 per second, censored: the requests in
progress count at their age, so a storm shows as percentiles climbing a second per
second); the comparison adds every strategy's p99 over time.

Figures are built on matplotlib's Agg canvas, never through pyplot: no display, no
global figure registry to leak, and the same curves give the same bytes (the PNG's
``Software`` text, which names the matplotlib version, is left out).
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from retrystorm.experiment.report.curves import StrategyCurves
from retrystorm.experiment.report.panels import (
    PANELS,
    Panel,
    shade_outages,
    shade_triggers,
    style_panel,
    trigger_handles,
)
from retrystorm.figures import plain_text
from retrystorm.loadgen.series_names import DELAY_S, IN_FLIGHT

LIVE_COLOR = "tab:blue"
SIMULATED_COLOR = "tab:orange"
#: The comparison's panels: goodput, attempts/s, in flight.
COMPARISON_PANELS = (PANELS[0], PANELS[1], PANELS[2])
#: The outcomes drawn over time: series name, label, colour.
OUTCOMES = (("goodput", "ok (requests)", "tab:green"), ("timeouts", "timeouts (attempts)", "tab:red"),
            ("gave_up", "gave up (requests)", "black"))  # fmt: skip
#: The latency percentiles drawn over time: series name, label, line style.
LATENCIES = (("latency_p50", "p50", ":"), ("latency_p95", "p95", "--"), ("latency_p99", "p99", "-"))
LATENCY_LABEL = "latency (s), censored:\nunfinished at their age"


def _values(curves: StrategyCurves, panel: Panel) -> list[float]:
    values: list[float | None] = getattr(curves, panel.series)
    return [math.nan if value is None else value for value in values]


#: What an empty panel says instead of an empty frame: the in-flight and delay panels of a service without
#: server readings, and the delay panel of a service of one's own (only the built-in target models a delay).
EMPTY_PANELS = {
    IN_FLIGHT: "no server metrics: the server's recovery is judged from the clients (attempt latency, timeouts)",
    DELAY_S: "no modelled delay: only the built-in target models one",
}


def empty_panel(axis: Axes, curves: Sequence[StrategyCurves], panel: Panel) -> bool:
    """Say why ``panel`` is empty, in the panel, when no curve has a value above 0 in it; whether it was."""
    note = EMPTY_PANELS.get(panel.series)
    values = [value for entry in curves for value in _values(entry, panel) if not math.isnan(value)]
    if note is None or any(value > 0 for value in values) or (panel.series == IN_FLIGHT and values):
        return False
    axis.text(0.5, 0.5, note, transform=axis.transAxes, ha="center", va="center", color="#666", fontsize=9)
    axis.set_yticks([])
    axis.set_ylabel(panel.label)
    return True


def _figure(width_in: float, height_in: float) -> Figure:
    figure = Figure(figsize=(width_in, height_in), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _series(curves: StrategyCurves, name: str) -> list[float] | None:
    values = curves.series(name)
    return None if values is None else [math.nan if value is None else value for value in values]


def outcomes_panel(axis: Axes, curves: StrategyCurves) -> None:
    """Ok requests, timed-out attempts and given-up requests per second, outages shaded."""
    for name, label, color in OUTCOMES:
        values = _series(curves, name)
        if values is not None:
            axis.plot(curves.times_s, values, lw=1.1, color=color, label=label)
    shade_outages(axis, curves.outages)
    style_panel(axis, "outcomes per second", "linear")
    axis.legend(fontsize=7, loc="upper right")


def latency_panel(axis: Axes, curves: StrategyCurves) -> None:
    """The censored p50, p95 and p99 of each second (log scale), outages shaded."""
    drawn = False
    for name, label, style in LATENCIES:
        values = _series(curves, name)
        if values is not None and any(value > 0 for value in values if not math.isnan(value)):
            axis.plot(curves.times_s, values, lw=1.1, ls=style, color=LIVE_COLOR, label=label)
            drawn = True
    shade_outages(axis, curves.outages)
    style_panel(axis, LATENCY_LABEL, "log" if drawn else "linear")
    if drawn:
        axis.legend(fontsize=7, loc="upper left")


def has_outcomes(curves: StrategyCurves) -> bool:
    """Whether the curves carry the outcomes and latencies over time (live and simulated runs do)."""
    return all(curves.series(name) is not None for name, *_ in (*OUTCOMES, *LATENCIES))


def strategy_figure(live: StrategyCurves, simulated: StrategyCurves | None = None) -> Figure:
    """Goodput, attempts/s, in flight, modelled delay, outcomes and latency over time of one strategy.

    The live curves are solid; ``simulated`` ones, when given, dashed in another colour
    on the same axes of the first four panels, so the gap between model and measurement
    reads directly. Outages are shaded.
    """
    extra = 2 if has_outcomes(live) else 0
    figure = _figure(11, 10 + 2.6 * extra)
    axes = figure.subplots(len(PANELS) + extra, 1, sharex=True)
    if extra:
        outcomes_panel(axes[len(PANELS)], live)
        latency_panel(axes[len(PANELS) + 1], live)
    for axis, panel in zip(axes, PANELS, strict=False):
        axis.plot(live.times_s, _values(live, panel), lw=1.2, color=LIVE_COLOR, label="live")
        if simulated is not None:
            axis.plot(
                simulated.times_s,
                _values(simulated, panel),
                lw=1.2,
                ls="--",
                color=SIMULATED_COLOR,
                label="simulated",
            )
        shade_outages(axis, live.outages)
        shade_triggers(axis, live.triggers)
        if not empty_panel(axis, [live, *([simulated] if simulated is not None else [])], panel):
            style_panel(axis, panel.label, panel.scale)
    if simulated is not None or live.triggers:
        _legend(axes[0], [live])
    axes[-1].set_xlabel(f"seconds since the load started; {shaded([live])}")
    figure.suptitle(live.label, fontsize=11)
    return figure


def comparison_figure(curves: Sequence[StrategyCurves], title: str) -> Figure:
    """Every strategy's goodput, attempts/s, in flight and censored p99 latency overlaid, outages shaded.

    Each strategy's outages (measured, so slightly apart) are shaded with a share of
    the opacity, so where they coincide the shade is as dark as on a strategy's own plot.
    The p99 panel is drawn when every strategy has the latency over time.
    """
    with_latency = bool(curves) and all(entry.series("latency_p99") is not None for entry in curves)
    figure = _figure(11, 8 + (2.6 if with_latency else 0))
    axes = figure.subplots(len(COMPARISON_PANELS) + with_latency, 1, sharex=True)
    alpha = 0.2 / max(1, len(curves))
    for axis, panel in zip(axes, COMPARISON_PANELS, strict=False):
        for entry in curves:
            axis.plot(entry.times_s, _values(entry, panel), lw=1.2, label=entry.label)
            shade_outages(axis, entry.outages, alpha=alpha)
            shade_triggers(axis, entry.triggers, alpha=alpha)
        if not empty_panel(axis, curves, panel):
            style_panel(axis, panel.label, panel.scale)
    if with_latency:
        axis = axes[-1]
        for entry in curves:
            axis.plot(entry.times_s, _series(entry, "latency_p99"), lw=1.2, label=entry.label)
            shade_outages(axis, entry.outages, alpha=alpha)
        style_panel(axis, "p99 " + LATENCY_LABEL, "log")
    if curves:
        _legend(axes[0], curves)
    axes[-1].set_xlabel(f"seconds since the load started; {shaded(curves)}")
    figure.suptitle(title, fontsize=11)
    return figure


def shaded(curves: Sequence[StrategyCurves]) -> str:
    """What the shades are, for an axis label or a caption."""
    return "triggers shaded by kind" if any(entry.triggers for entry in curves) else "outages shaded"


def _legend(axis: Axes, curves: Sequence[StrategyCurves]) -> None:
    """The lines' legend, with one entry per trigger kind shaded when there are triggers besides pauses."""
    kinds = [kind for entry in curves for kind, _, _ in entry.triggers]
    if not kinds:
        axis.legend(fontsize=8, loc="upper right")
        return
    kinds += ["pause"] if any(entry.outages for entry in curves) else []
    handles, _ = axis.get_legend_handles_labels()
    axis.legend(handles=[*handles, *trigger_handles(kinds)], fontsize=8, loc="upper right")


def png_bytes(figure: Figure, dpi: int = 100) -> bytes:
    """The figure as PNG bytes (deterministic: no version text in the metadata), its texts drawn as written
    (:func:`~retrystorm.figures.plain_text`)."""
    plain_text(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None})
    return buffer.getvalue()
