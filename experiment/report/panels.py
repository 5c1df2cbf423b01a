"""What the simulator's plots and the run report draw alike: the four panels and shaded outages.

Both draw goodput, attempts per second, the in-flight count and the modelled delay
on stacked axes sharing the time axis, with each outage (pause to resume) shaded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Literal

from matplotlib.axes import Axes

from experiment.analysis.series_names import ATTEMPTS, DELAY_S, GOODPUT, IN_FLIGHT

Scale = Literal["linear", "symlog", "log"]


@dataclasses.dataclass(frozen=True, slots=True)
class Panel:
    """One stacked panel: its y label, the series it draws (a name of :mod:`~experiment.analysis.series_names`)
    and its y scale."""

    label: str
    series: str
    scale: Scale


#: Goodput, attempts/s, in flight (symlog: 0 and 7,800 on one axis), delay (log: 0.1 s to hours).
PANELS = (
    Panel("goodput (successful requests/s)", GOODPUT, "linear"),
    Panel("attempts/s", ATTEMPTS, "linear"),
    Panel("in flight", IN_FLIGHT, "symlog"),
    Panel("modelled delay (s)", DELAY_S, "log"),
)


def shade_outages(axis: Axes, outages: Iterable[tuple[float, float]], *, alpha: float = 0.2) -> None:
    """Shade each ``(pause, resume)`` span in grey."""
    for start_s, end_s in outages:
        axis.axvspan(start_s, end_s, color="grey", alpha=alpha, lw=0)


def style_panel(axis: Axes, label: str, scale: Scale) -> None:
    """Y label, y scale (symlog linear up to 10) and a light grid."""
    axis.set_ylabel(label)
    if scale == "symlog":
        axis.set_yscale("symlog", linthresh=10)
    elif scale == "log":
        axis.set_yscale("log")
    axis.grid(visible=True, alpha=0.3)
