"""Simulator benchmark: CPU per experiment, events per second, scaling from 1k to 100k clients.

Run from a checkout: ``.venv/bin/python bench/sim_bench.py`` (``--quick`` for a short
run; ``--profile EXPERIMENT`` to print, after the figures, where one experiment's time
goes: ``wyegelwel``, ``smira`` (the default), ``contention`` or ``edge``). CPU times are
process CPU seconds (``time.process_time``), the best of ``--repeat`` runs. The machine
is small and shared, so every figure is also given as a multiple of a fixed pure-Python
baseline (heap push/pop churn) measured in the same run: those ratios compare across
machines.

Targets (the project's): wyegelwel (5 strategies) < 1 s, smira (2 strategies) < 5 s,
contention (N = 10..190, 100 repetitions) < 30 s; run time close to linear in clients.
"""

from __future__ import annotations

import argparse
import cProfile
import heapq
import pstats
import random
import time
from collections.abc import Callable
from typing import Any

from retrystorm.experiment.scenario import Fault, Scenario
from retrystorm.sim.config import RunConfig
from retrystorm.sim.engine import simulate
from retrystorm.sim.experiments import contention, edge, smira, wyegelwel


def cpu(function: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """The best process CPU time of ``repeat`` calls, and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.process_time()
        result = function()
        best = min(best, time.process_time() - start)
    return best, result


def baseline() -> None:
    """A fixed pure-Python workload: 300,000 heap pushes and pops of random floats."""
    rng = random.Random(0)
    heap: list[float] = []
    for _ in range(300_000):
        heapq.heappush(heap, rng.random())
        if len(heap) > 1000:
            heapq.heappop(heap)


def events_of(report: Any) -> int:
    return sum(run.counts["events"] for run in report.runs)


def scaled(users: int) -> Scenario:
    """The seed outage scaled to ``users``: the server's limit and k grow with the load, 10 s outage, 60 s."""
    base = smira.load()
    factor = users / 1000
    model = base.model.__class__(limit=round(30 * factor), k=15 * factor)
    load = base.load.model_copy(update={"users": users, "duration": 60.0})
    fault = Fault.model_validate({"at": 20, "for": 10})
    strategies = [entry for entry in base.strategies if entry.label == "smira"]
    return base.model_copy(update={"model": model, "load": load, "faults": [fault], "strategies": strategies})


def run_scaled(users: int, repeat: int = 1) -> tuple[float, int]:
    """Best CPU time of ``repeat`` runs of :func:`scaled`, and its events."""
    scenario = scaled(users)
    entry = scenario.strategies[0]
    config = RunConfig.from_scenario(scenario, entry, tuple(scenario.outages()))
    seconds, output = cpu(lambda: simulate(config), repeat)
    return seconds, output.counts["events"]


#: The experiments ``--profile`` takes.
EXPERIMENTS = ("wyegelwel", "smira", "contention", "edge")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="10 contention repetitions, scaling to 30k clients")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure; the best is kept")
    parser.add_argument(
        "--profile",
        nargs="?",
        const="smira",
        choices=EXPERIMENTS,
        help="also print this experiment's top functions by own time (default: smira)",
    )
    args = parser.parse_args()

    base_s, _ = cpu(baseline, args.repeat)
    print(f"baseline (300k heap push/pop): {base_s:.3f} s CPU")
    print()
    print(f"{'experiment':<34}{'CPU s':>8}{'x baseline':>12}{'target':>9}{'events':>11}{'events/s':>12}")
    repetitions = 10 if args.quick else 100
    experiments: dict[str, Callable[[], Any]] = {
        "wyegelwel": wyegelwel.run,
        "smira": smira.run,
        "contention": lambda: contention.run(repetitions=repetitions),
        "edge": lambda: edge.run(smira.load()),
    }
    rows = [
        ("wyegelwel (5 strategies)", experiments["wyegelwel"], 1.0, True),
        ("smira (2 strategies)", experiments["smira"], 5.0, True),
        (f"contention (N 10..190 x {repetitions})", experiments["contention"], 30.0, False),
        ("edge (smira-sigstop, defaults)", experiments["edge"], None, False),
    ]
    contention_s = 0.0
    for name, function, target, has_events in rows:
        repeat = args.repeat if has_events else 1
        seconds, report = cpu(function, repeat)
        contention_s = seconds if report.experiment == "contention" else contention_s
        events = events_of(report) if has_events else 0
        shown_target = f"< {target:g}" if target else "-"
        rate = f"{events / seconds:,.0f}" if events else "-"
        print(f"{name:<34}{seconds:>8.2f}{seconds / base_s:>12.1f}{shown_target:>9}{events or '-':>11}{rate:>12}")
    if args.quick:
        print(f"(contention at 100 repetitions: about {contention_s * 10:.0f} s by extrapolation)")
    print()
    print("scaling: the seed outage (smira, 60 s, limit and k scaled with the clients)")
    print(f"{'clients':>9}{'CPU s':>9}{'events':>11}{'events/s':>12}{'CPU ratio':>11}{'clients ratio':>15}")
    print("(best of --repeat runs each; on a busy machine the ratios move by +-30 %)")
    sizes = (1_000, 3_000, 10_000, 30_000) if args.quick else (1_000, 10_000, 100_000)
    first: tuple[float, int] | None = None
    for users in sizes:
        seconds, events = run_scaled(users, args.repeat)
        first = first or (seconds, users)
        print(
            f"{users:>9,}{seconds:>9.2f}{events:>11,}{events / seconds:>12,.0f}"
            f"{seconds / first[0]:>11.1f}{users / first[1]:>15.0f}"
        )
    if args.profile:
        profile = cProfile.Profile()
        profile.runcall(experiments[args.profile])
        print()
        print(f"profile of {args.profile}:")
        pstats.Stats(profile).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    main()
