"""What the simulator's plots and the run report draw alike: the four panels and shaded triggers.

Both draw goodput, attempts per second, the in-flight count and the modelled delay
on stacked axes sharing the time axis, with each outage (pause to resume) shaded grey
and every other trigger shaded in its kind's colour (:data:`TRIGGER_COLOURS`), named in
a legend when there are any.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from typing import Literal

from matplotlib.axes import Axes
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter, ScalarFormatter

from retrystorm.loadgen.series_names import ATTEMPTS, DELAY_S, GOODPUT, IN_FLIGHT

Scale = Literal["linear", "symlog", "log"]


@dataclasses.dataclass(frozen=True, slots=True)
class Panel:
    """One stacked panel: its y label, the series it draws (a name of
    :mod:`~retrystorm.loadgen.series_names`)
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


#: Each trigger kind's shade: a pause grey (as outages always were), the others a colour each.
TRIGGER_COLOURS = {"pause": "grey", "slow": "tab:orange", "spike": "tab:purple", "errors": "tab:red"}
#: How the legend names each kind.
TRIGGER_NAMES = {"pause": "pause", "slow": "slow (capacity cut)", "spike": "spike (load)", "errors": "error burst"}


def shade_triggers(axis: Axes, triggers: Iterable[tuple[str, float, float]], *, alpha: float = 0.2) -> None:
    """Shade each ``(kind, start, end)`` window in its kind's colour (:data:`TRIGGER_COLOURS`)."""
    for kind, start_s, end_s in triggers:
        axis.axvspan(start_s, end_s, color=TRIGGER_COLOURS.get(kind, "tab:olive"), alpha=alpha, lw=0)


def trigger_handles(kinds: Iterable[str], *, alpha: float = 0.2) -> list[Patch]:
    """Legend entries for the trigger kinds drawn, pauses first, each once."""
    present = set(kinds)
    order = [kind for kind in TRIGGER_COLOURS if kind in present] + sorted(present - set(TRIGGER_COLOURS))
    return [
        Patch(color=TRIGGER_COLOURS.get(kind, "tab:olive"), alpha=alpha, label=TRIGGER_NAMES.get(kind, kind))
        for kind in order
    ]


#: Positive values whose largest is this many times the smallest are drawn on a log axis.
LOG_SPAN = 100.0


def plain_number(value: float, _position: float | None = None) -> str:
    """A tick label without powers of ten: ``0.1``, ``2.5``, ``1,000``."""
    if value == 0:
        return "0"
    return f"{value:,.0f}" if abs(value) >= 1 else f"{value:.3g}"


def _plain_log_ticks(axis: Axes) -> None:
    """Label a log or symlog y axis at its powers of ten in plain numbers; no labels between them."""
    axis.yaxis.set_major_formatter(FuncFormatter(plain_number))
    axis.yaxis.set_minor_formatter(NullFormatter())


def style_panel(axis: Axes, label: str, scale: Scale) -> None:
    """Y label, y scale (symlog linear up to 10) and a light grid; call after drawing.

    Log and symlog axes are labelled in plain numbers at powers of ten; a symlog axis
    starts at 0 and a log axis spans at least one power of ten, so each shows two labels.
    """
    axis.set_ylabel(label)
    if scale == "symlog":  # counts: from 0, so 0 and 10 are always labelled
        axis.set_yscale("symlog", linthresh=10)
        axis.set_ylim(bottom=0)
        _plain_log_ticks(axis)
    elif scale == "log":
        axis.set_yscale("log")
        low, high = axis.get_ylim()
        if low > 0 and high < 10 * low:
            axis.set_ylim(10 ** math.floor(math.log10(low)), 10 ** math.ceil(math.log10(high)))
        _plain_log_ticks(axis)
    axis.grid(visible=True, alpha=0.3)


def value_axis(axis: Axes, values: Sequence[float], label: str, *, integer: bool = False) -> None:
    """The y axis of ``values`` (all >= 0), labelled, with no offset or scientific notation.

    Log when the positive values span ``LOG_SPAN`` or more (the label says so), else
    linear from 0 to a little above the largest; ``integer`` keeps it on whole numbers.
    """
    positive = [value for value in values if value > 0]
    if positive and max(positive) >= LOG_SPAN * min(positive):
        axis.set_yscale("log")
        _plain_log_ticks(axis)
        axis.set_ylabel(f"{label}, log scale")
        return
    formatter = ScalarFormatter(useOffset=False)
    formatter.set_scientific(False)
    axis.yaxis.set_major_formatter(formatter)
    largest = max(values, default=0.0)
    if integer:
        axis.yaxis.set_major_locator(MaxNLocator(integer=True))
    # room above the largest, so a flat series stands clear of the top: 10 %, or one for whole numbers
    axis.set_ylim(0, largest + 1 if integer else (1.1 * largest or 1.0))
    axis.set_ylabel(label)
