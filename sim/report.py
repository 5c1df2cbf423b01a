"""Show a :class:`~retrystorm.sim.experiments.base.Report`: rich tables, CSV, and files in an output folder."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from retrystorm.console import wide
from retrystorm.durations import format_duration
from retrystorm.experiment.analysis import RunResult
from retrystorm.experiment.report.curves import StrategyCurves
from retrystorm.experiment.report.text import recovery_text, seconds, verdict_mark
from retrystorm.experiment.report.why import headline_lines
from retrystorm.loadgen.series_names import GAVE_UP, TIMEOUTS
from retrystorm.sim.experiments.base import Report
from retrystorm.sim.result import RunOutput

#: What the tables say of their latency columns (:mod:`retrystorm.experiment.analysis.stats`).
CENSORED_NOTE = "latencies count every request: unfinished ones at their age so far (censored, a lower bound)"


def runs_table(results: Sequence[RunResult], title: str) -> Table:
    """One row per strategy run: counts, amplification, latencies (censored), peak, recoveries."""
    table = Table(title=f"{title}; {CENSORED_NOTE}", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("strategy", no_wrap=True)
    for name in ("attempts", "requests", "ok", "gave up", "unfinished", "ampl.", "p50", "p95", "p99", "max"):
        table.add_column(name, justify="right")
    for name in ("peak in flight", "server recovery", "client recovery"):
        table.add_column(name, justify="right")
    for result in results:
        latency = result.latency
        has_outage = bool(result.recoveries)
        amplification = result.amplification
        table.add_row(
            escape(result.strategy),
            f"{result.attempts:,}",
            f"{result.requests:,}",
            f"{result.succeeded:,}",
            f"{result.gave_up:,}",
            f"{result.unfinished:,}",
            f"{amplification:.2f}" if amplification is not None else "-",
            seconds(latency.p50),
            seconds(latency.p95),
            seconds(latency.p99),
            seconds(latency.max),
            f"{result.peak_in_flight:,}" if result.peak_in_flight is not None else "-",
            recovery_text([r.server_s for r in result.recoveries], has_outage),
            recovery_text([r.client_s for r in result.recoveries], has_outage),
        )
    return table


def contention_tables(rows: Sequence[dict[str, Any]]) -> list[Table]:
    """The post's two charts as tables: writes and completion time, strategies across, N down."""
    strategies = list(dict.fromkeys(row["strategy"] for row in rows))
    clients = sorted({row["clients"] for row in rows})
    cell = {(row["strategy"], row["clients"]): row for row in rows}
    tables = []
    for key, title, show in (
        ("calls", "Writes (calls) until every client succeeded, mean", lambda v: f"{v:,.0f}"),
        ("completion_time_s", "Time until every client succeeded, mean", seconds),
    ):
        table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
        table.add_column("clients", justify="right")
        for strategy in strategies:
            table.add_column(escape(strategy), justify="right")
        for count in clients:
            table.add_row(str(count), *(show(cell[(s, count)][key]) for s in strategies))
        tables.append(table)
    return tables


def edge_table(rows: Sequence[dict[str, Any]]) -> Table:
    """Each strategy's edge beside the longest outage it recovered from."""
    table = Table(
        title="Metastability edge: the shortest outage not recovered from",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for name in ("strategy", "edge", "longest outage recovered", "its recovery time"):
        table.add_column(name, justify="left" if name == "strategy" else "right")
    for row in rows:
        recovered = [point for point in row["curve"] if point["server_recovery_s"] is not None]
        longest = max(recovered, key=lambda point: point["outage_s"], default=None)
        edge = seconds(row["edge_s"]) if row["edge_s"] is not None else f"none up to {seconds(row['max_outage_s'])}"
        table.add_row(
            escape(row["strategy"]),
            edge,
            seconds(longest["outage_s"]) if longest else "-",
            seconds(longest["server_recovery_s"]) if longest else "-",
        )
    return table


def renderables(report: Report) -> list[RenderableType]:
    """Everything the terminal shows for ``report``, in order."""
    shown: list[RenderableType] = []
    if report.kind == "runs":
        shown.append(runs_table(report.results, f"{report.experiment}: one run per strategy (times in seconds)"))
    elif report.kind == "contention":
        shown.extend(contention_tables(report.rows))
    else:
        shown.append(edge_table(report.rows))
    verdicts = [(result.strategy, verdict) for result in report.results for verdict in result.verdicts]
    if verdicts:
        lines = [
            _mark(verdict.passed, f"{label}: {verdict.describe()}", verdict.expected_failure)
            for label, verdict in verdicts
        ]
        shown.append(Group(Text("Assertions", style="bold"), *lines))
    if report.kind == "runs" and report.results:
        *why, winner = headline_lines(report.document())
        lines = [Text(f"  {line}") for line in why]
        shown.append(Group(Text("What happened, and why", style="bold"), *lines, Text(winner, style="bold")))
    if report.findings:
        lines = [_mark(finding.holds, finding.text) for finding in report.findings]
        shown.append(Group(Text("Findings of the source", style="bold"), *lines))
    if report.notes:
        notes = [Text(f"- {note}") for note in report.notes]
        shown.append(Group(Text("Choices the simulation made", style="bold"), *notes))
    return shown


def _mark(ok: bool, text: str, expected_failure: bool = False) -> Text:
    return Text.assemble(verdict_mark(ok, expected_failure), text)


def print_report(report: Report, console: Console) -> None:
    """Print the tables, verdicts, findings and choices (wide when not on a terminal: nothing cut)."""
    console = wide(console)
    for renderable in renderables(report):
        console.print(renderable)
        console.print()


def csv_text(rows: Iterable[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    """Rows as CSV; lists and mappings as JSON. ``columns``: exactly these, in this order (a row's missing key is
    an empty cell; a key not among them raises ``ValueError``); ``None``: in order of first appearance."""
    rows = list(rows)
    columns = list(columns) if columns is not None else list(dict.fromkeys(key for row in rows for key in row))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(
            {key: json.dumps(value) if isinstance(value, list | dict) else value for key, value in row.items()}
        )
    return buffer.getvalue()


def timeseries_rows(report: Report) -> list[dict[str, Any]]:
    """Every run's series, one row per strategy and interval."""
    return [{"strategy": run.config.spec.label, **row} for run in report.runs for row in run.series.rows()]


def run_curves(run: RunOutput) -> StrategyCurves:
    """A simulated run's curves as the run report draws them: its series, its outages, its exact peak."""
    series = run.series
    curves = StrategyCurves.from_samples(run.config.spec.label, series.samples(), run.config.outages)
    more: dict[str, Sequence[float | None]] = {
        TIMEOUTS: series.rate(TIMEOUTS),
        GAVE_UP: series.rate(GAVE_UP),
        **series.latency,
    }
    triggers = tuple((window.kind, window.start_s, window.end_s) for window in run.config.triggers)
    return dataclasses.replace(curves, peak_in_flight=float(run.peak_in_flight), more=more, triggers=triggers)


def run_metadata(report: Report, folder: Path) -> dict[str, object]:
    """What the report's "Run" section says of a simulated run: scenario, seed, what ran, the folder."""
    config = report.runs[0].config
    spec = config.spec
    found: dict[str, object] = {
        "scenario": report.experiment,
        "seed": spec.seed,
        "stack": "the simulator, in virtual time",
        "target": f"the {config.model.spec()} model",
        "load": f"{spec.users:,} users ({spec.arrival} loop) for {format_duration(spec.duration_s)}",
    }
    if config.triggers:
        windows = sorted([*config.outages, *config.triggers], key=lambda window: (window.start_s, window.end_s))
        found["triggers"] = [f"at {format_duration(w.start_s)}: {w.describe()}" for w in windows]
    found["folder"] = str(folder)
    return found


def write_page(report: Report, document: Mapping[str, Any], folder: Path, plots: Sequence[Path]) -> list[Path]:
    """The run report of a scenario run, as ``retrystorm run`` writes it, with ``requests.png`` added.

    ``document`` is the report's results document; the page adds what ran to it (``run``).
    """
    from retrystorm.experiment.report import write_report  # noqa: PLC0415 - matplotlib and jinja2 only when writing
    from retrystorm.experiment.report.page import Image  # noqa: PLC0415

    document = {**document, "run": run_metadata(report, folder)}
    more = [
        Image(
            "Each logical request's latency and attempts, sorted by latency; unfinished ones at their age so far, "
            "marked x (requests.png)",
            path.read_bytes(),
        )
        for path in plots
        if path.name == "requests.png"
    ]
    curves = [run_curves(run) for run in report.runs]
    return write_report(folder, document, curves, source="simulated", more_images=more)


def write_tables(report: Report, folder: Path) -> list[Path]:
    """``results.json``, ``results.csv`` and ``timeseries.csv`` (runs) into ``folder`` (made if missing)."""
    folder.mkdir(parents=True, exist_ok=True)
    written = [folder / "results.json", folder / "results.csv"]
    written[0].write_text(json.dumps(report.document(), indent=2) + "\n", encoding="utf-8")
    written[1].write_text(csv_text(report.rows), encoding="utf-8")
    if report.runs:
        path = folder / "timeseries.csv"
        path.write_text(csv_text(timeseries_rows(report)), encoding="utf-8")
        written.append(path)
    return written


def write_figures(report: Report, folder: Path) -> list[Path]:
    """The PNG plots and, for scenario runs, the run report (a PNG per strategy, ``comparison.png``,
    ``report.html``) into ``folder``, after :func:`write_tables`; the paths written."""
    from retrystorm.sim.plots import write_plots  # noqa: PLC0415 - matplotlib only when plots are written

    plots = write_plots(report, folder)
    if report.kind == "runs" and report.runs:
        return [*plots, *write_page(report, report.document(), folder, plots)]
    return plots
