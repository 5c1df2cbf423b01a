"""PNG plots of simulated runs: time series with outages and triggers shaded, per-request latency and
attempts sorted (as in the seed article; unfinished requests at their age, marked), the
contention charts, recovery against outage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from retrystorm.experiment.report.panels import (
    PANELS,
    plain_number,
    shade_outages,
    shade_triggers,
    style_panel,
    trigger_handles,
    value_axis,
)
from retrystorm.figures import plain_text
from retrystorm.loadgen.series_names import IN_FLIGHT, RATES
from retrystorm.sim.experiments.base import Report
from retrystorm.sim.result import RunOutput

#: The labels the simulator draws differently.
_LABELS = {IN_FLIGHT: "in flight (dashed: + accept queue)"}


def _outages(run: RunOutput) -> list[tuple[float, float]]:
    return [(outage.start_s, outage.end_s) for outage in run.config.outages]


def timeseries_figure(runs: list[RunOutput], title: str) -> Figure:
    """Goodput, attempts, in-flight and delay over time, one line per strategy, outages shaded."""
    figure = Figure(figsize=(12, 11), layout="constrained")
    axes = figure.subplots(len(PANELS), 1, sharex=True)
    for axis, panel in zip(axes, PANELS, strict=True):
        name = panel.series
        for run in runs:
            series = run.series
            values = series.rate(name) if name in RATES else getattr(series, name)
            (line,) = axis.plot(series.times(), values, lw=1, label=run.config.spec.label)
            if name == IN_FLIGHT and any(series.accept_queue):
                waiting = [a + b for a, b in zip(series.in_flight, series.accept_queue, strict=True)]
                axis.plot(series.times(), waiting, lw=1, ls="--", color=line.get_color())
        if runs:
            shade_outages(axis, _outages(runs[0]))
            shade_triggers(axis, [(w.kind, w.start_s, w.end_s) for w in runs[0].config.triggers])
        style_panel(axis, _LABELS.get(panel.series, panel.label), panel.scale)
    kinds = [window.kind for window in runs[0].config.triggers] if runs else []
    if kinds:
        handles, _ = axes[0].get_legend_handles_labels()
        pauses = ["pause"] if runs[0].config.outages else []
        axes[0].legend(handles=[*handles, *trigger_handles([*kinds, *pauses])], fontsize=8, loc="upper right")
        axes[-1].set_xlabel("time (s); triggers shaded by kind")
    else:
        axes[0].legend(fontsize=8, loc="upper right")
        axes[-1].set_xlabel("time (s); outages shaded")
    figure.suptitle(title, fontsize=10)
    return figure


def sorted_requests(run: RunOutput) -> tuple[list[float], list[int], list[bool]]:
    """Every logical request of ``run`` sorted by latency: latency (an unfinished one's age), attempts, censored.

    The unfinished requests count at their age when the run ended, as in the latency
    percentiles (:mod:`retrystorm.experiment.analysis.stats`).
    """
    rows = [(latency, attempts, False) for latency, attempts in zip(run.latencies, run.request_attempts, strict=True)]
    rows += [(age, attempts, True) for age, attempts in zip(run.unfinished.ages, run.unfinished.attempts, strict=True)]
    rows.sort(key=lambda row: row[0])
    return [row[0] for row in rows], [row[1] for row in rows], [row[2] for row in rows]


def requests_figure(runs: list[RunOutput], title: str) -> Figure:
    """Each logical request's latency and attempts, sorted by latency: one panel per strategy.

    Latency is a line on the left axis, attempts dots on the right one; the requests
    still in progress when the run ended count at their age so far (censored) and are
    marked with red crosses on the line. Either axis is logarithmic when its values span
    two powers of ten (see :func:`retrystorm.experiment.report.panels.value_axis`), and no axis
    uses an offset.
    """
    figure = Figure(figsize=(12, 3 * max(1, len(runs))), layout="constrained")
    axes = figure.subplots(max(1, len(runs)), 1, squeeze=False)[:, 0]
    for axis, run in zip(axes, runs, strict=False):
        latencies, attempts, censored = sorted_requests(run)
        ranks = range(1, len(latencies) + 1)
        (latency_line,) = axis.plot(ranks, latencies, color="tab:green", lw=1.5, label="latency (left axis)")
        handles = [latency_line]
        marked = [(rank, value) for rank, value, cut in zip(ranks, latencies, censored, strict=True) if cut]
        if marked:
            (crosses,) = axis.plot(
                [rank for rank, _ in marked], [value for _, value in marked], ls="none", marker="x", ms=4,
                color="tab:red", label="unfinished: age so far (censored)",
            )  # fmt: skip
            handles.append(crosses)
        value_axis(axis, latencies, "latency (s)")
        twin = axis.twinx()
        (attempt_dots,) = twin.plot(
            ranks, attempts, ls="none", marker=".", ms=3, alpha=0.5, color="tab:blue", label="attempts (right axis)"
        )
        value_axis(twin, [float(a) for a in attempts], "attempts", integer=True)
        axis.set_zorder(twin.get_zorder() + 1)  # the latency line over the dots, the twin's background under both
        axis.patch.set_visible(False)
        axis.xaxis.set_major_formatter(FuncFormatter(plain_number))
        unfinished = f", {len(marked):,} unfinished (x)" if marked else ""
        axis.set_title(
            f"{run.config.spec.label}: {len(run.latencies):,} ended requests{unfinished}, sorted by latency", fontsize=9
        )
        axis.grid(True, alpha=0.3)
        axis.legend(handles=[*handles, attempt_dots], loc="upper left", fontsize=8, markerscale=2)
    axes[-1].set_xlabel("logical requests, sorted by latency or, unfinished, by age (1 = fastest)")
    figure.suptitle(title, fontsize=10)
    return figure


def contention_figure(rows: list[dict[str, Any]]) -> Figure:
    """The post's two charts: writes and completion time against the number of clients."""
    figure = Figure(figsize=(12, 5), layout="constrained")
    calls_axis, time_axis = figure.subplots(1, 2)
    for strategy in dict.fromkeys(row["strategy"] for row in rows):
        points = sorted(
            (row["clients"], row["calls"], row["completion_time_s"]) for row in rows if row["strategy"] == strategy
        )
        calls_axis.plot([p[0] for p in points], [p[1] for p in points], marker="o", ms=3, label=strategy)
        time_axis.plot([p[0] for p in points], [p[2] for p in points], marker="o", ms=3, label=strategy)
    calls_axis.set_ylabel("writes (calls)")
    time_axis.set_ylabel("time until all succeeded (s)")
    time_axis.set_yscale("log")
    for axis in (calls_axis, time_axis):
        axis.set_xlabel("contending clients")
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=8)
    figure.suptitle("Optimistic concurrency under contention (AWS Architecture Blog, 2015)", fontsize=10)
    return figure


def edge_figure(rows: list[dict[str, Any]]) -> Figure:
    """Server recovery time against outage length; crosses where it did not recover, edges dashed."""
    figure = Figure(figsize=(10, 5), layout="constrained")
    axis = figure.subplots()
    ceiling = max((row["horizon_s"] for row in rows), default=60.0)
    for row in rows:
        recovered = [
            (p["outage_s"], p["server_recovery_s"]) for p in row["curve"] if p["server_recovery_s"] is not None
        ]
        failed = [p["outage_s"] for p in row["curve"] if p["server_recovery_s"] is None]
        (line,) = axis.plot(
            [p[0] for p in recovered], [p[1] for p in recovered], marker="o", ms=4, label=row["strategy"]
        )
        axis.plot(failed, [ceiling] * len(failed), "x", color=line.get_color())
        if row["edge_s"] is not None:
            axis.axvline(row["edge_s"], color=line.get_color(), ls="--", lw=1)
    axis.axhline(ceiling, color="grey", lw=0.8)
    axis.set_xlabel("outage length (s); dashed: the edge")
    axis.set_ylabel(f"server recovery after the resume (s); x: none within {ceiling:g} s")
    axis.grid(True, alpha=0.3)
    axis.legend(fontsize=8)
    figure.suptitle("Metastability edge", fontsize=10)
    return figure


def write_plots(report: Report, folder: Path) -> list[Path]:
    """The report's PNGs in ``folder``; the paths written."""
    figures: dict[str, Figure] = {}
    if report.kind == "runs":
        figures["timeseries.png"] = timeseries_figure(report.runs, report.experiment)
        figures["requests.png"] = requests_figure(report.runs, report.experiment)
    elif report.kind == "contention":
        figures["contention.png"] = contention_figure(report.rows)
    else:
        figures["edge.png"] = edge_figure(report.rows)
    written = []
    for name, figure in figures.items():
        path = folder / name
        plain_text(figure).savefig(path, dpi=100)
        written.append(path)
    return written
