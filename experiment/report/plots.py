"""The run report's PNGs: one per strategy (live, with the simulation dashed beside it) and a comparison.

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

from experiment.report.curves import StrategyCurves
from experiment.report.panels import PANELS, Panel, shade_outages, shade_triggers, style_panel, trigger_handles

LIVE_COLOR = "tab:blue"
SIMULATED_COLOR = "tab:orange"
#: The comparison's panels: goodput, attempts/s, in flight.
COMPARISON_PANELS = (PANELS[0], PANELS[1], PANELS[2])


def _values(curves: StrategyCurves, panel: Panel) -> list[float]:
    values: list[float | None] = getattr(curves, panel.series)
    return [math.nan if value is None else value for value in values]


def _figure(width_in: float, height_in: float) -> Figure:
    figure = Figure(figsize=(width_in, height_in), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def strategy_figure(live: StrategyCurves, simulated: StrategyCurves | None = None) -> Figure:
    """Goodput, attempts/s, in flight and modelled delay of one strategy, outages shaded.

    The live curves are solid; ``simulated`` ones, when given, dashed in another colour
    on the same axes, so the gap between model and measurement reads directly.
    """
    figure = _figure(11, 10)
    axes = figure.subplots(len(PANELS), 1, sharex=True)
    for axis, panel in zip(axes, PANELS, strict=True):
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
        style_panel(axis, panel.label, panel.scale)
    if simulated is not None or live.triggers:
        _legend(axes[0], [live])
    axes[-1].set_xlabel(f"seconds since the load started; {shaded([live])}")
    figure.suptitle(live.label, fontsize=11)
    return figure


def comparison_figure(curves: Sequence[StrategyCurves], title: str) -> Figure:
    """Every strategy's goodput, attempts/s and in flight overlaid, each strategy's outages shaded.

    Each strategy's outages (measured, so slightly apart) are shaded with a share of
    the opacity, so where they coincide the shade is as dark as on a strategy's own plot.
    """
    figure = _figure(11, 8)
    axes = figure.subplots(len(COMPARISON_PANELS), 1, sharex=True)
    alpha = 0.2 / max(1, len(curves))
    for axis, panel in zip(axes, COMPARISON_PANELS, strict=True):
        for entry in curves:
            axis.plot(entry.times_s, _values(entry, panel), lw=1.2, label=entry.label)
            shade_outages(axis, entry.outages, alpha=alpha)
            shade_triggers(axis, entry.triggers, alpha=alpha)
        style_panel(axis, panel.label, panel.scale)
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
    """The figure as PNG bytes (deterministic: no version text in the metadata)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None})
    return buffer.getvalue()
