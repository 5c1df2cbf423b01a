"""Delay-against-retry plots of strategies: median and 5-95 % band over many draws."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from retrystorm.figures import plain_text
from retrystorm.loadgen.strategies import RetryStrategy
from retrystorm.loadgen.strategies.stats import retries_shown


def delay_samples(
    strategy: RetryStrategy, *, retries: int, draws: int, think_time_s: float, rng: random.Random
) -> np.ndarray:
    """A ``draws x retries`` array of delays, each row one client's retry sequence.

    Each sequence starts after an exponentially distributed think time (the previous
    delay of retry 1, which only ``smira`` reads) and feeds each delay to the next.
    """
    samples = np.empty((draws, retries))
    for row in range(draws):
        previous = rng.expovariate(1 / think_time_s) if think_time_s > 0 else 0.0
        for column in range(retries):
            previous = strategy.delay(column + 1, previous, rng)
            samples[row, column] = previous
    return samples


def strategies_figure(
    strategies: list[RetryStrategy], *, retries: int, draws: int, think_time_s: float, seed: int
) -> Figure:
    """A linear and a log panel: median line, 5-95 % band per strategy, each drawn up to its last retry (a preset's
    attempt cap ends it, :func:`~retrystorm.loadgen.strategies.stats.retries_shown`, and its legend entry says so);
    the legend sits below both panels, covering neither."""
    rng = random.Random(seed)
    figure = Figure(figsize=(13, 5.6), layout="constrained")
    axes = figure.subplots(1, 2)
    for strategy in strategies:
        allowed = retries_shown(strategy, retries)
        capped = f" (at most {allowed + 1} attempts)" if allowed < retries else ""
        attempts = np.arange(1, allowed + 1)
        samples = delay_samples(strategy, retries=allowed, draws=draws, think_time_s=think_time_s, rng=rng)
        low, median, high = np.percentile(samples, [5, 50, 95], axis=0) if allowed else ([], [], [])
        for axis in axes:
            (line,) = axis.plot(attempts, median, marker="o", markersize=3, label=strategy.spec() + capped)
            axis.fill_between(attempts, low, high, color=line.get_color(), alpha=0.2)
    axes[0].set_title("delay before retry n (median, 5-95 % band)")
    axes[1].set_title("same, log scale")
    axes[1].set_yscale("symlog", linthresh=0.01)
    for axis in axes:
        axis.set_xlabel("retry number n")
        axis.set_ylabel("delay (s)")
        axis.set_xlim(0.5, retries + 0.5)
        axis.grid(True, alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    columns = 1 if any(len(label) > 60 for label in labels) else 2  # long specs one per line, within the page
    figure.legend(handles, labels, loc="outside lower center", ncols=columns, fontsize=7)
    figure.suptitle(f"{draws} draws per strategy, think time exp(mean {think_time_s:g} s)", fontsize=9)
    return figure


def plot_strategies(
    strategies: list[RetryStrategy], output: Path, *, retries: int, draws: int, think_time_s: float, seed: int
) -> None:
    """Write :func:`strategies_figure` as a PNG to ``output``."""
    figure = strategies_figure(strategies, retries=retries, draws=draws, think_time_s=think_time_s, seed=seed)
    output.parent.mkdir(parents=True, exist_ok=True)
    plain_text(figure).savefig(output, dpi=110)
