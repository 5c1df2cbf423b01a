"""``retrystorm strategies``: list the retry strategies and budgets, plot their delays."""

from __future__ import annotations

from pathlib import Path

import click

from loadgen.strategies import BUDGETS, STRATEGIES, RetryStrategy
from retrystorm.cli_types import DURATION, SpecType
from retrystorm.console import out
from retrystorm.listing import registry_table


@click.group(invoke_without_command=True)
@click.pass_context
def strategies(ctx: click.Context) -> None:
    """List retry strategies and budgets with their parameters and defaults.

    A strategy is written as a spec: NAME or NAME:key=value,... for example
    exponential:base=100ms,factor=2.718,max=5m,jitter=normal:0.1
    """
    if ctx.invoked_subcommand is None:
        out.print(registry_table(STRATEGIES, "Retry strategies (--retry-strategy SPEC)"))
        out.print(registry_table(BUDGETS, "Retry budgets (--retry-budget SPEC), shared by a process's users"))


@strategies.command("plot")
@click.argument("specs", nargs=-1, required=True, type=SpecType(STRATEGIES))
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
    from loadgen.strategy_plot import plot_strategies

    plot_strategies(list(specs), output, retries=retries, draws=draws, think_time_s=think_time, seed=seed)
    out.print(f"wrote {output}")
