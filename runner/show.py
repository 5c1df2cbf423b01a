"""What ``retrystorm run`` prints: the plan (``--dry-run``), and the verdicts at the end."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from experiment.analysis import RunResult
from retrystorm.durations import format_duration
from runner.plan import Plan
from sim.report import runs_table


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
            f"{len(plan.strategies)} strategies in turn, each against {fresh}; "
            f"about {format_duration(round(plan.estimated_s))} in all"
        ),
    ]
    for index, (strategy, load) in enumerate(zip(plan.strategies, loads, strict=True), start=1):
        lines.append(f"[{index}/{len(plan.strategies)}] {strategy.spec.label}")
        lines.append(f"    load: {load}")
        lines.extend(f"    at {format_duration(step.at_s):>6}: {step.what}" for step in strategy.steps)
        checks = ", ".join(strategy.checks) if strategy.checks else "none"
        lines.append(f"    checks: {checks}")
    return lines


def failures(results: Sequence[RunResult]) -> list[str]:
    """One line per failed assertion: ``smira: server_recovers_within 15s: measured none (FAIL)``."""
    return [
        f"{result.strategy}: {verdict.describe()}"
        for result in results
        for verdict in result.verdicts
        if not verdict.passed
    ]


def print_verdicts(console: Console, title: str, results: Sequence[RunResult], report: Path | None) -> None:
    """The results table, every assertion's verdict, and where the report is."""
    if not console.is_terminal:  # a file or a pipe: wide enough for the table
        console = Console(file=console.file, width=140, highlight=False)
    console.print(runs_table(results, title))
    verdicts = [(result.strategy, verdict) for result in results for verdict in result.verdicts]
    if verdicts:
        console.print(Text("Assertions", style="bold"))
        for label, verdict in verdicts:
            mark = ("  ok   ", "green") if verdict.passed else ("  FAIL ", "bold red")
            console.print(Text.assemble(mark, f"{label}: {verdict.describe()}"))
    else:
        console.print("no assertions in this scenario")
    if report is not None:
        console.print(f"report: {escape(str(report))}")
