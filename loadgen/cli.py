"""``retrystorm strategies``: list the retry strategies, presets and budgets; show and plot their delays."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from retrystorm.cli_types import DURATION
from retrystorm.console import out
from retrystorm.errors import SpecError
from retrystorm.listing import registry_table
from retrystorm.loadgen.strategies import BUDGETS, STRATEGIES, RetryStrategy, channel_of
from retrystorm.loadgen.strategies.presets import Preset, resolve
from retrystorm.loadgen.strategies.stats import RetryDelayStats, delay_stats


class StrategySpec(click.ParamType):  # type: ignore[type-arg]
    """A strategy or preset spec, or ``grpc-service-config:PATH``."""

    name = "strategy"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> RetryStrategy:
        if isinstance(value, RetryStrategy):
            return value
        from retrystorm.loadgen.service_config import read_strategy

        try:
            return read_strategy(value)
        except SpecError as error:
            self.fail(str(error), param, ctx)


STRATEGY = StrategySpec()


@click.group(invoke_without_command=True)
@click.pass_context
def strategies(ctx: click.Context) -> None:
    """List retry strategies, client-library presets and budgets with their parameters and defaults.

    A strategy is written as a spec: NAME or NAME:key=value,... for example
    exponential:base=100ms,factor=2.718,max=5m,jitter=normal:0.1 or envoy:num_retries=2.
    A preset brings its library's attempt cap, retry conditions and budget.
    """
    if ctx.invoked_subcommand is None:
        out.print(
            registry_table(
                STRATEGIES, "Retry strategies (--retry-strategy SPEC)", include=lambda cls: not cls.is_preset
            )
        )
        out.print(
            registry_table(
                STRATEGIES,
                "Client-library presets (--retry-strategy SPEC; also grpc-service-config:FILE.json): "
                "delays, attempt cap, retry conditions and budget of a real client",
                include=lambda cls: cls.is_preset,
            )
        )
        out.print(registry_table(BUDGETS, "Retry budgets (--retry-budget SPEC), shared by a process's users"))


@strategies.command("show")
@click.argument("spec", type=STRATEGY)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout, nothing else.")
@click.option(
    "--draws",
    type=click.IntRange(10, 1_000_000),
    default=10_000,
    show_default=True,
    help="Independent retry sequences drawn.",
)
@click.option("--seed", type=int, default=1, show_default=True, help="Random seed.")
@click.option(
    "--think-time",
    type=DURATION,
    default="10s",
    show_default=True,
    help="Mean of the exponential think time before each sequence (what smira grows from).",
)
def show(*, spec: RetryStrategy, as_json: bool, draws: int, seed: int, think_time: float) -> None:
    """The delay before each retry (up to 10, or the attempt cap) over many draws; the cap and the budget.

    Per retry number: the delay's 5th percentile, median, 95th percentile and mean,
    in seconds. JSON: {"spec", "max_attempts", "budget", "retries": [{"retry", "p5",
    "median", "p95", "mean"}, ...]}, null where there is none.
    """
    policy, budget = resolve(spec)
    rows = delay_stats(spec, draws=draws, rng=random.Random(seed), think_time_s=think_time)
    channel = channel_of(spec, random.Random(seed))
    connections = channel.text() if channel is not None else None
    if as_json:
        document = {
            "spec": spec.spec(),
            "max_attempts": policy.max_attempts,
            "budget": budget.spec() if budget is not None else None,
            "connections": connections,
            "retries": [dataclass_row(row) for row in rows],
        }
        click.echo(json.dumps(document, indent=2))
        return
    cap = policy.max_attempts if policy.max_attempts is not None else "none (retries forever)"
    lines = [f"[bold]{escape(spec.spec())}[/bold]"]
    if isinstance(spec, Preset):
        lines.append(f"library: {escape(spec.library)}")
        lines.append(f"retries on: {escape(spec.conditions().text())}; Retry-After: {spec.retry_after().value}")
    lines.append(f"max attempts: {cap}")
    lines.append(f"budget: {escape(budget.spec()) if budget is not None else 'none'}")
    if connections is not None:
        lines.append(f"connections: {escape(connections)}")
    for line in lines:
        out.print(line)
    out.print(delay_table(rows, draws))


def dataclass_row(row: RetryDelayStats) -> dict[str, float]:
    """One retry's figures for JSON."""
    return {"retry": row.retry, "p5": row.p5, "median": row.median, "p95": row.p95, "mean": row.mean}


def delay_table(rows: list[RetryDelayStats], draws: int) -> Table | str:
    """The delays as a table, durations in readable units."""
    if not rows:
        return "no retries: the first attempt is the only one"
    table = Table(title=f"delay before retry n, seconds, over {draws:,} draws", title_justify="left")
    for column in ("retry", "p5", "median", "p95", "mean"):
        table.add_column(column, justify="right")
    for row in rows:
        table.add_row(str(row.retry), *(f"{value:.4g}" for value in (row.p5, row.median, row.p95, row.mean)))
    return table


@strategies.command("plot")
@click.argument("specs", nargs=-1, required=True, type=STRATEGY)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("strategies.png"),
    show_default=True,
    help="PNG file to write.",
)
@click.option(
    "--retries", type=click.IntRange(1, 100), default=12, show_default=True, help="Retry numbers on the x axis."
)
@click.option(
    "--draws",
    type=click.IntRange(10, 1_000_000),
    default=2000,
    show_default=True,
    help="Independent retry sequences drawn per strategy.",
)
@click.option(
    "--think-time",
    type=DURATION,
    default="10s",
    show_default=True,
    help="Mean of the exponential think time before each sequence (what smira grows from).",
)
@click.option("--seed", type=int, default=1, show_default=True, help="Random seed.")
def plot(
    *, specs: tuple[RetryStrategy, ...], output: Path, retries: int, draws: int, think_time: float, seed: int
) -> None:
    """Draw delay against retry number for each SPEC, linear and log scale.

    Shows the median and the 5-95 % band over many independent retry sequences, as
    in the seed article's figures.
    """
    from retrystorm.loadgen.strategy_plot import plot_strategies

    plot_strategies(list(specs), output, retries=retries, draws=draws, think_time_s=think_time, seed=seed)
    out.print(f"wrote {output}")
