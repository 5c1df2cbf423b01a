"""``retrystorm sim``: the built-in experiments, scenario files and ad-hoc runs in virtual time.

Every command prints a table (or ``--json`` / ``--csv`` on stdout, nothing else there),
can write results, time series and PNG plots to ``--out DIR``, and exits 0, or 1 when an
assertion or a published finding does not hold, or 2 on bad input.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from retrystorm.cli_types import DURATION, SpecType
from retrystorm.console import err, out
from retrystorm.errors import did_you_mean
from retrystorm.sim.cli_options import (
    CLIENT_RANGE,
    OPTIONAL_DURATION,
    OUTAGE,
    STRATEGY,
    LabelledStrategy,
    adhoc_scenario,
    output_options,
)
from retrystorm.sim.experiments.base import Report
from retrystorm.target.models import MODELS

EXPERIMENTS = ("wyegelwel", "smira", "contention", "edge", "osdi22", "brooker", "run")


class ExperimentGroup(click.Group):
    """A group whose unknown subcommand error lists the experiments."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            hint = did_you_mean(name, EXPERIMENTS)
            raise click.UsageError(f"unknown experiment {name!r}{hint}; valid: {', '.join(EXPERIMENTS)}", ctx)
        return super().resolve_command(ctx, args)


@click.group(cls=ExperimentGroup)
def sim() -> None:
    """Simulate retry strategies against an overload model in virtual time (seeded, deterministic).

    \b
    retrystorm sim wyegelwel            the seed simulation (Yegelwel 2016)
    retrystorm sim smira                the seed outage (smira/exponential-backoff)
    retrystorm sim contention           AWS "Exponential Backoff And Jitter" (2015)
    retrystorm sim edge [SCENARIO]      the shortest outage each strategy does not recover from
    retrystorm sim osdi22               OSDI'22 retry experiment: a capacity cut, immediate resends
    retrystorm sim brooker              Brooker's collapse simulation: a load spike, with and without backoff
    retrystorm sim run SCENARIO         a shipped scenario's name or a file, or flags for an ad-hoc run
    """


def _progress(message: str) -> None:
    if err.is_terminal:
        err.print(f"[dim]{message}[/dim]")


def emit(report: Report, *, as_json: bool, as_csv: bool, folder: Path | None, cpu_s: float) -> None:
    """Write the results into ``folder``, print ``report`` as asked, then draw the figures; exit 1 unless
    everything held. A figure that cannot be drawn is one line on stderr: the results and the verdicts stand."""
    from retrystorm.sim.report import csv_text, print_report, write_tables

    written = write_tables(report, folder) if folder is not None else []
    if as_json:
        click.echo(json.dumps(report.document(), indent=2))
    elif as_csv:
        click.echo(csv_text(report.rows), nl=False)
    else:
        print_report(report, out)
        out.print(f"[dim]{cpu_s:.2f} s of CPU[/dim]")
    if folder is not None:
        written += _figures(report, folder)
        err.print(f"wrote {', '.join(str(path) for path in written)}", markup=False, soft_wrap=True)
    if not report.ok:
        click.get_current_context().exit(1)


def _figures(report: Report, folder: Path) -> list[Path]:
    from retrystorm.sim.report import write_figures

    try:
        return write_figures(report, folder)
    except Exception as error:  # whatever drawing raises, the results and the verdicts stand
        problem = " ".join(f"{type(error).__name__}: {error}".split())
        err.print(f"retrystorm: the figures could not be drawn ({problem})", markup=False, soft_wrap=True)
        return []


def _timed(build: Callable[[], Report]) -> tuple[Report, float]:
    start = time.process_time()
    report = build()
    return report, time.process_time() - start


def _with_strategies(scenario: Any, extra: tuple[LabelledStrategy, ...], *, replace: bool = False) -> Any:
    """``scenario`` with ``extra`` strategies added (or replacing its own)."""
    from retrystorm.experiment.scenario import StrategyEntry

    if not extra:
        return scenario
    entries = [StrategyEntry(label=item.label, strategy=item.strategy) for item in extra]
    return scenario.model_copy(update={"strategies": entries if replace else [*scenario.strategies, *entries]})


seed_option = click.option("--seed", type=int, default=None, help="Random seed (default: the scenario's).")
strategy_option = click.option(
    "-s", "--strategy", "strategies", type=STRATEGY, multiple=True, metavar="[LABEL=]SPEC",
    help="A strategy to simulate, e.g. EB=exponential:base=2s or smira (repeatable).",
)  # fmt: skip


@sim.command()
@seed_option
@strategy_option
@output_options
def wyegelwel(*, seed: int | None, strategies: tuple[LabelledStrategy, ...], **output: Any) -> None:
    """The seed simulation: 800 clients, a burst, a 5-worker queue service; NB CB URB EB REB.

    Checks the article's findings and prints the choices it left unstated. --strategy
    adds strategies to the five.
    """
    from retrystorm.sim.experiments import wyegelwel as experiment

    scenario = _with_strategies(experiment.load(seed), strategies)
    report, cpu = _timed(lambda: experiment.run(scenario, _progress))
    emit(report, cpu_s=cpu, **output)


@sim.command()
@seed_option
@strategy_option
@click.option(
    "--overflow", type=click.Choice(["clamp", "go"]), default="clamp", show_default=True,
    help="go: the Go server's delay, which overflows above 7,792 in flight (its plateau); clamp: stop at 10 min.",
)  # fmt: skip
@output_options
def smira(*, seed: int | None, strategies: tuple[LabelledStrategy, ...], overflow: str, **output: Any) -> None:
    """The seed outage: 1000 clients, the Go server's model frozen 30 s; fixed:100ms against smira.

    --strategy adds strategies to the two. --overflow go reproduces the Go server's
    overflowing delay, which holds its in-flight count at 7,792.
    """
    from retrystorm.sim.experiments import smira as experiment

    scenario = _with_strategies(experiment.load(seed, overflow), strategies)
    report, cpu = _timed(lambda: experiment.run(scenario, _progress))
    emit(report, cpu_s=cpu, **output)


@sim.command()
@click.option(
    "--clients", type=CLIENT_RANGE, default="10-190/10", show_default=True,
    help="Numbers of contending clients: a list (10,50,100) or a range FROM-TO/STEP.",
)  # fmt: skip
@click.option("--repetitions", type=click.IntRange(1, 10_000), default=100, show_default=True, help="Runs per point.")
@click.option("--seed", type=int, default=1, show_default=True, help="Random seed.")
@strategy_option
@output_options
def contention(
    *,
    clients: tuple[int, ...],
    repetitions: int,
    seed: int,
    strategies: tuple[LabelledStrategy, ...],
    **output: Any,
) -> None:
    """N clients update one row with optimistic concurrency (AWS Architecture Blog, 2015).

    No backoff, exponential without jitter, full, equal and decorrelated jitter (base 5 ms,
    cap 2 s); writes and completion time per N. --strategy replaces the five.
    """
    from retrystorm.sim.experiments import contention as experiment

    chosen = {item.label: item.strategy.spec() for item in strategies} or None
    report, cpu = _timed(lambda: experiment.run(chosen, clients, repetitions, seed))
    emit(report, cpu_s=cpu, **output)


@sim.command()
@click.argument("scenario_file", metavar="[SCENARIO]", required=False, type=click.Path(path_type=Path))
@click.option("--horizon", type=DURATION, default="60s", show_default=True, help="Time allowed to recover.")
@click.option("--max-outage", type=DURATION, default="120s", show_default=True, help="Longest outage tried.")
@click.option("--resolution", type=DURATION, default="1s", show_default=True, help="Precision of each edge.")
@click.option(
    "--curve-points", type=click.IntRange(1, 200), default=12, show_default=True, help="Outage lengths sampled."
)
@seed_option
@strategy_option
@output_options
def edge(
    *,
    scenario_file: Path | None,
    horizon: float,
    max_outage: float,
    resolution: float,
    curve_points: int,
    seed: int | None,
    strategies: tuple[LabelledStrategy, ...],
    **output: Any,
) -> None:
    """For each strategy, the shortest outage after which the server does not recover.

    Uses SCENARIO's model, load and strategies (default: the shipped smira-sigstop);
    --strategy replaces the strategies.
    """
    from retrystorm.experiment.scenario import load_scenario, shipped_scenario
    from retrystorm.sim.experiments import edge as experiment

    if not resolution > 0 or not max_outage > resolution:
        raise click.BadParameter("expected 0 < --resolution < --max-outage", param_hint="--resolution")
    overrides = {"seed": seed} if seed is not None else None
    scenario = load_scenario(scenario_file or shipped_scenario("smira-sigstop"), overrides=overrides)
    scenario = _with_strategies(scenario, strategies, replace=True)
    report, cpu = _timed(
        lambda: experiment.run(
            scenario,
            horizon_s=horizon,
            max_outage_s=max_outage,
            resolution_s=resolution,
            curve_points=curve_points,
            progress=_progress,
        )
    )
    emit(report, cpu_s=cpu, **output)


@sim.command()
@seed_option
@output_options
def osdi22(*, seed: int | None, **output: Any) -> None:
    """The retry experiment of "Metastable Failures in the Wild" (OSDI'22): the four published runs.

    Immediate resends (up to 4, 3 s timeout) against a server cut to 0.45 or 0.40 of its
    2 CPUs for 10 or 9 s, at full or 75 % load; checks each published verdict.
    """
    from retrystorm.sim.experiments import osdi22 as experiment

    report, cpu = _timed(lambda: experiment.run(seed, _progress))
    emit(report, cpu_s=cpu, **output)


@sim.command()
@seed_option
@strategy_option
@output_options
def brooker(*, seed: int | None, strategies: tuple[LabelledStrategy, ...], **output: Any) -> None:
    """Marc Brooker's collapse simulation: a 5 s spike from 40 to 80 requests/s, with and without backoff.

    Checks over 10 seeds that no backoff collapses and stays down and that backoff with
    jitter recovers. --strategy adds strategies to the two.
    """
    from retrystorm.sim.experiments import brooker as experiment

    scenario = _with_strategies(experiment.load(seed), strategies)
    report, cpu = _timed(lambda: experiment.run(scenario, _progress))
    emit(report, cpu_s=cpu, **output)


@sim.command("run")
@click.argument("scenario_file", metavar="[SCENARIO]", required=False, type=click.Path(path_type=Path))
@click.option("--model", type=SpecType(MODELS), default=None, help="Overload model spec (default: exponential).")
@strategy_option
@click.option("--budget", default=None, metavar="SPEC", help="Retry budget shared by the users, e.g. tokens.")
@click.option(
    "--users", type=click.IntRange(1), default=None, help="Users (default 1000); in open loop they share --rate."
)
@click.option(
    "--think-time", default=None, metavar="DIST", help="exponential:10s (or just 10s), constant:1s or between:1s,3s."
)
@click.option("--timeout", type=OPTIONAL_DURATION, default=None, help="Attempt timeout, or none (default 2s).")
@click.option("--duration", type=DURATION, default=None, help="Run length (default 140s).")
@click.option(
    "--outage", "outages", type=OUTAGE, multiple=True, metavar="FOR@AT", help="Freeze the server, e.g. 30s@20s."
)
@click.option("--arrival", type=click.Choice(["closed", "open"]), default=None, help="Closed loop or open loop.")
@click.option("--rate", type=click.FloatRange(min=0, min_open=True), default=None, help="Open loop: requests/s.")
@click.option("--max-attempts", type=click.IntRange(1), default=None, help="Attempts per request, first included.")
@click.option("--deadline", type=DURATION, default=None, help="Per-request deadline from its first attempt.")
@click.option("--sample-every", type=DURATION, default=None, help="Time-series resolution (default 1s).")
@seed_option
@output_options
def run_command(*, scenario_file: Path | None, **options: Any) -> None:
    """Simulate a scenario (a shipped one's name, or a file), or an ad-hoc run from flags; flags override it.

    Without SCENARIO at least one --strategy is needed; the rest defaults to the seed
    setting (exponential model, 1000 users, think time exp(10 s), 2 s timeout, 140 s).
    """
    from retrystorm.sim.experiments.scenario_runs import run_scenario

    output = {key: options.pop(key) for key in ("as_json", "as_csv", "folder")}
    scenario = adhoc_scenario(scenario_file, **options)
    report, cpu = _timed(lambda: run_scenario(scenario, _progress))
    emit(report, cpu_s=cpu, **output)
