"""A map's phase diagram: one panel per strategy, each cell coloured by its time to recover.

Drawn from ``map.json`` alone (:mod:`retrystorm.sim.map.document`): the first axis across, the
second up (one row for a one-axis map). A cell that recovers is coloured by its median
time to recover (one colour scale for every panel), a metastable one is dark and crossed,
a mixed one hatched over its colour; a thick line runs between metastable cells and the
others (the edge), and marks (published results, incidents) are stars with their label. A
cell confirmed live (``--live``) carries a ring: green where the live server verdict agrees
with the simulated one, red where it does not, grey where undecided.
Built on matplotlib's Agg canvas (:func:`retrystorm.experiment.report.plots.png_bytes` writes it).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

METASTABLE = "#3d0c11"
CMAP = "viridis"
#: A live-confirmed cell's ring colour by its agreement (True, False, None).
LIVE_COLOURS = {True: "#2ca02c", False: "#d62728", None: "#9e9e9e"}
#: Where each mark's label goes, in points from the mark, in turn.
LABEL_OFFSETS = ((8, 8), (8, -8), (-8, 8), (-8, -8))


def edges_of(values: Sequence[float], scale: str) -> list[float]:
    """The cell boundaries around ``values``: midpoints (geometric on a log axis), half a step beyond each end."""
    if len(values) == 1:
        value = values[0]
        return [value * 0.9, value * 1.1] if value else [-0.5, 0.5]
    if scale == "log":
        logs = [math.log(value) for value in values]
        return [math.exp(value) for value in edges_of(logs, "linear")]
    middles = [(a + b) / 2 for a, b in itertools.pairwise(values)]
    return [values[0] - (middles[0] - values[0]), *middles, values[-1] + (values[-1] - middles[-1])]


def _grid(document: Mapping[str, Any], label: str) -> list[list[Mapping[str, Any]]]:
    """The strategy's cells as ``grid[column][row]`` (first axis across, second up)."""
    axes = document["axes"]
    rows = len(axes[1]["values"]) if len(axes) > 1 else 1
    cells = [cell for cell in document["cells"] if cell["strategy"] == label]
    return [cells[column * rows : (column + 1) * rows] for column in range(len(axes[0]["values"]))]


def _label(axis: Mapping[str, Any]) -> str:
    return f"{axis['path']} ({axis['unit']})" if axis.get("unit") else str(axis["path"])


def _draw_panel(axis: Axes, document: Mapping[str, Any], label: str, norm: Normalize) -> None:
    axes = document["axes"]
    x_edges = edges_of(axes[0]["values"], axes[0]["scale"])
    y_edges = edges_of(axes[1]["values"], axes[1]["scale"]) if len(axes) > 1 else [0.0, 1.0]
    grid = _grid(document, label)
    colours = colormaps[CMAP]
    metastable = [[cell["verdict"] == "metastable" for cell in column] for column in grid]
    for i, column in enumerate(grid):
        for j, cell in enumerate(column):
            width, height = x_edges[i + 1] - x_edges[i], y_edges[j + 1] - y_edges[j]
            time_s = cell["server_recovery_s"]
            face = METASTABLE if metastable[i][j] else colours(norm(time_s if time_s is not None else 0.0))
            hatch = "xx" if metastable[i][j] else "///" if cell["verdict"] == "mixed" else None
            axis.add_patch(
                Rectangle((x_edges[i], y_edges[j]), width, height, facecolor=face, edgecolor="white", lw=0.4,
                          hatch=hatch)
            )  # fmt: skip
    for i, column in enumerate(metastable):  # the edge: between metastable cells and the others
        for j, stuck in enumerate(column):
            if i + 1 < len(metastable) and stuck != metastable[i + 1][j]:
                axis.plot([x_edges[i + 1]] * 2, [y_edges[j], y_edges[j + 1]], color="black", lw=2.2)
            if j + 1 < len(column) and stuck != column[j + 1]:
                axis.plot([x_edges[i], x_edges[i + 1]], [y_edges[j + 1]] * 2, color="black", lw=2.2)
    for i, column in enumerate(grid):  # cells confirmed live: a ring coloured by their agreement
        for j, cell in enumerate(column):
            found = cell.get("agreement")
            if found:
                x, y = axes[0]["values"][i], axes[1]["values"][j] if len(axes) > 1 else 0.5
                axis.plot([x], [y], marker="o", ms=13, mfc="none", mew=2.5, color=LIVE_COLOURS[found.get("agrees")],
                          zorder=4)  # fmt: skip
    for index, mark in enumerate(document.get("marks") or []):
        x = mark["at"][axes[0]["path"]]
        y = mark["at"][axes[1]["path"]] if len(axes) > 1 else 0.5
        axis.plot([x], [y], marker="*", ms=15, color="white", markeredgecolor="black", zorder=5)
        dx, dy = LABEL_OFFSETS[index % len(LABEL_OFFSETS)]  # neighbouring marks' labels on different sides
        axis.annotate(mark["label"], (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=8, zorder=6,
                      ha="left" if dx > 0 else "right", va="bottom" if dy > 0 else "top",
                      bbox={"boxstyle": "round,pad=0.2", "fc": "white", "alpha": 0.85, "lw": 0})  # fmt: skip
    axis.set_xlim(x_edges[0], x_edges[-1])
    axis.set_ylim(y_edges[0], y_edges[-1])
    _ticks(axis, "x", axes[0])
    axis.set_xlabel(_label(axes[0]))
    if len(axes) > 1:
        _ticks(axis, "y", axes[1])
        axis.set_ylabel(_label(axes[1]))
    else:
        axis.set_yticks([])
    axis.set_title(label, fontsize=10)


def tick_text(value: float) -> str:
    """A value on a tick: ``10``, ``2.5``, ``0.225``, ``1,000``."""
    return f"{value:,.0f}" if abs(value) >= 100 or float(value).is_integer() else f"{value:.3g}"


def _ticks(axis: Axes, which: str, spec: Mapping[str, Any]) -> None:
    """Ticks at the cells' values (every other one, or fewer, when there are many), in plain numbers."""
    values = list(spec["values"])
    step = max(1, math.ceil(len(values) / 12))
    shown = values[::step]
    scale = "log" if spec["scale"] == "log" else "linear"
    if which == "x":
        axis.set_xscale(scale)
        axis.set_xticks(shown, [tick_text(v) for v in shown], minor=False)
        axis.set_xticks([], minor=True)
    else:
        axis.set_yscale(scale)
        axis.set_yticks(shown, [tick_text(v) for v in shown], minor=False)
        axis.set_yticks([], minor=True)


def phase_figure(document: Mapping[str, Any]) -> Figure:
    """One panel per strategy of the map ``document`` (see the module docstring)."""
    labels = [entry["strategy"] for entry in document["strategies"]]
    one_axis = len(document["axes"]) == 1
    columns = min(len(labels), 3)
    rows = math.ceil(len(labels) / columns)
    figure = Figure(figsize=(5.2 * columns + 1.2, (2.2 if one_axis else 4.4) * rows + 1.0), layout="constrained")
    FigureCanvasAgg(figure)
    panels = figure.subplots(rows, columns, squeeze=False).flatten()
    times = [cell["server_recovery_s"] for cell in document["cells"] if cell["server_recovery_s"] is not None]
    norm = Normalize(vmin=0.0, vmax=max([*times, 1.0]))
    for axis, label in zip(panels, labels, strict=False):
        _draw_panel(axis, document, label, norm)
    for axis in panels[len(labels) :]:
        axis.set_visible(False)
    bar = figure.colorbar(ScalarMappable(norm=norm, cmap=CMAP), ax=list(panels[: len(labels)]), shrink=0.9)
    bar.set_label("server's time to recover after the last trigger (s), median")
    handles = [
        Patch(facecolor=METASTABLE, hatch="xx", edgecolor="white", label="metastable: no seed recovered"),
        Patch(facecolor="lightgrey", hatch="///", edgecolor="white", label="mixed: some seeds recovered"),
        Line2D([], [], color="black", lw=2.2, label="edge"),
    ]
    if document.get("marks"):
        handles.append(Line2D([], [], marker="*", ls="none", ms=12, color="white", markeredgecolor="black",
                              label="marked"))  # fmt: skip
    if any(cell.get("agreement") for cell in document["cells"]):
        for agrees, word in ((True, "agrees"), (False, "disagrees")):
            handles.append(Line2D([], [], marker="o", ls="none", ms=10, mfc="none", mew=2,
                                  color=LIVE_COLOURS[agrees], label=f"live: {word}"))  # fmt: skip
    ncols = len(handles) if len(handles) <= 4 or len(labels) > 1 else math.ceil(len(handles) / 2)  # one panel: 2 rows
    figure.legend(handles=handles, loc="outside lower center", ncols=ncols, fontsize=8)
    runs = len(document.get("seeds") or [1])
    figure.suptitle(f"{document['map']}: where each strategy tips over ({runs} seed{'s' if runs > 1 else ''} a cell)")
    return figure
