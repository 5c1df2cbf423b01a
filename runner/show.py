"""What ``retrystorm run`` prints: the plan (``--dry-run``), and the verdicts at the end."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from retrystorm.console import wide
from retrystorm.durations import seconds_text
from retrystorm.experiment.analysis import RunResult, results_document
from retrystorm.experiment.report.text import count, percent, seconds, times, verdict_mark
from retrystorm.experiment.report.why import headline_lines, steady_phrase, validity_phrase
from retrystorm.runner.plan import Plan
from retrystorm.sim.report import runs_table

if TYPE_CHECKING:
    from retrystorm.experiment.report import StrategyCurves
    from retrystorm.runner.record import StrategyRecord


def plan_lines(plan: Plan, stack: str, target: str, loads: Sequence[str]) -> list[str]:
    """The plan as plain lines: what runs when, against what.

    ``target`` describes the target each strategy gets; ``loads`` the load of each strategy.
    """
    scenario = plan.scenario
    own = scenario.target
    fresh = "the same service (not restarted)" if own is not None and not own.command else "a fresh target"
    lines = [
        f"scenario {scenario.name} (seed {scenario.seed}), {stack}",
        f"target: {target}",
        (
            f"{len(plan.strategies)} strategies in turn, "
            + (f"each {plan.repeat} times, " if plan.repeat > 1 else "")
            + f"each against {fresh}; about {seconds_text(round(plan.estimated_s))} in all"
        ),
    ]
    for index, (strategy, load) in enumerate(zip(plan.strategies, loads, strict=True), start=1):
        lines.append(f"[{index}/{len(plan.strategies)}] {strategy.spec.label}")
        lines.append(f"    load: {load}")
        lines.extend(f"    at {seconds_text(step.at_s):>8}: {step.what}" for step in strategy.steps)
        checks = ", ".join(strategy.checks) if strategy.checks else "none"
        lines.append(f"    checks: {checks}")
    return lines


def failures(results: Sequence[RunResult]) -> list[str]:
    """One line per failed assertion: ``smira: server_recovers_within 15s: measured never (FAIL)``."""
    return [
        f"{result.strategy}: {verdict.describe()}"
        for result in results
        for verdict in result.verdicts
        if not verdict.passed
    ]


def validity_lines(document: Mapping[str, Any]) -> list[Text]:
    """``  ok    smira: load generator kept up (busiest process 0.21 of a core)`` per strategy, or ``NOT VALID``."""
    lines = []
    for row in document.get("results", []):
        validity = row.get("validity")
        if not isinstance(validity, Mapping):
            continue
        label = str(row.get("strategy"))
        steady = steady_phrase(row)
        if steady is not None:
            lines.append(Text.assemble(("  NOT VALID ", "bold red"), f"{label}: {steady}"))
        problem = validity_phrase(row)
        if problem is None:
            peaks = validity.get("cpu_peak") or {}
            late = validity.get("schedule_lag_worst_s")
            kept = [f"busiest process at most {max(peaks.values()):.0%} of a core"] if peaks else []
            if isinstance(late, int | float):
                kept.append(f"users started at most {late * 1000:,.0f} ms late, worst second's mean")
            busiest = f" ({'; '.join(kept)})" if kept else ""
            lines.append(Text.assemble(("  ok    ", "green"), f"{label}: the load generator kept up{busiest}"))
        else:
            lines.append(Text.assemble(("  NOT VALID ", "bold red"), f"{label}: {problem.removeprefix('not valid: ')}"))
    return lines


#: The spread table's columns: (results key, heading, how a value is shown).
SPREAD_COLUMNS = (
    ("server_recovery_s", "server recovery", lambda v: seconds(v, none="never")),
    ("client_recovery_s", "client recovery", lambda v: seconds(v, none="never")),
    ("success_ratio", "success", percent),
    ("amplification", "ampl.", times),
    ("peak_in_flight", "peak in flight", count),
    ("latency_p99", "p99", seconds),
)


def spread_cell(spread: Mapping[str, Any], show: Any) -> str:
    """``6s (4s-9s)``: the standing run's value, then the smallest and largest over the runs, ``never`` counted."""
    values = spread.get("values") or []
    low, high, never = spread.get("min"), spread.get("max"), spread.get("never") or 0
    span = f"{show(low)}-{show(high)}" if low is not None else ""
    missing = f"{never} never" if never else ""
    return ", ".join(part for part in (span, missing) if part) + f" of {len(values)}"


def spread_table(document: Mapping[str, Any]) -> Table | None:
    """With ``--repeat``: each strategy's figures in the run that stands for it, and their range over its runs."""
    if not isinstance(document.get("repeats"), Mapping):
        return None
    table = Table(
        title="Spread over the runs: the standing run's value (the range over every run)",
        title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
    )  # fmt: skip
    table.add_column("strategy", no_wrap=True)
    for _, heading, _ in SPREAD_COLUMNS:
        table.add_column(heading, justify="right")
    for row in document.get("results", []):
        spreads = row.get("spread") or {}
        cells = []
        for key, _, show in SPREAD_COLUMNS:
            value = row.get(key)
            value = sum(value) if isinstance(value, list) and None not in value else value
            shown = show(None) if isinstance(value, list) else show(value)
            cells.append(f"{shown} ({spread_cell(spreads.get(key) or {}, show)})")
        table.add_row(escape(str(row.get("strategy"))), *cells)
    return table


def print_verdicts(
    console: Console,
    title: str,
    results: Sequence[RunResult],
    report: Path | None,
    document: Mapping[str, Any] | None = None,
) -> None:
    """The results table, every assertion's verdict, the validity of each run, why each strategy did
    what it did and who wins (:mod:`retrystorm.experiment.report.why`), and where the report is."""
    console = wide(console)  # a file or a pipe: wide enough for the table
    console.print(runs_table(results, title))
    verdicts = [(result.strategy, verdict) for result in results for verdict in result.verdicts]
    if verdicts:
        console.print(Text("Assertions", style="bold"))
        for label, verdict in verdicts:
            mark = verdict_mark(verdict.passed, verdict.expected_failure)
            console.print(Text.assemble(mark, f"{label}: {verdict.describe()}"), soft_wrap=True)
    else:
        console.print("no assertions in this scenario")
    document = document or results_document("run", results)
    repeats = spread_table(document)
    if repeats is not None:
        console.print(repeats)
    checked = validity_lines(document)
    if checked:
        console.print(
            Text("Validity: did the service work in its steady state, and the load generator keep up?", style="bold")
        )
        for finding in checked:
            console.print(finding, soft_wrap=True)  # a finding is one line, whatever the width (logs, grep)
    console.print(Text("What happened, and why", style="bold"))
    *lines, winner = headline_lines(document)
    for line in lines:
        console.print(Text(f"  {line}"), soft_wrap=True)
    console.print(Text(winner, style="bold"), soft_wrap=True)
    if report is not None:
        console.print(f"report: {escape(str(report))}", soft_wrap=True)


def draw_report(
    console: Console,
    errors: Console,
    folder: Path,
    document: Mapping[str, Any],
    *,
    records: Sequence[StrategyRecord],
    simulated: Sequence[StrategyCurves] = (),
) -> Path | None:
    """Draw the PNGs and ``report.html`` into ``folder`` and say where on ``console``; the report's path.

    Called after ``results.json`` is written and the verdicts are printed: a report that cannot be drawn is one
    line on ``errors`` (``None``), and what came before it stands.
    """
    from retrystorm.runner.outputs import write_report_files  # noqa: PLC0415 - the report extra, when drawing

    try:
        written = write_report_files(folder, document, records, simulated)
    except Exception as error:  # whatever drawing raises, the results and the verdicts stand
        problem = " ".join(f"{type(error).__name__}: {error}".split())
        errors.print(
            f"retrystorm: the report could not be drawn ({problem}); results.json and the verdicts stand",
            markup=False,
            soft_wrap=True,
        )
        return None
    report = next(path for path in written if path.name == "report.html")
    console.print(f"report: {escape(str(report))}", soft_wrap=True)
    return report
