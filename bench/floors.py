"""The benchmarks at a small size, each ratio against its documented floor; a ratio more than 2x worse fails.

``scripts/test`` (the full run, as CI runs it) runs ``.venv/bin/python bench/floors.py`` after the tests. Every
figure is a ratio measured side by side in this run, so the machine's speed and its load from elsewhere mostly cancel
out: the simulator's CPU against a fixed pure-Python event loop (heap pushes and pops, ``bench/sim_bench.py``), the
target's requests/s against a hello-world on the same HTTP stack (``bench/throughput.py``, ``wrk`` on 127.0.0.1).
Each pair is measured in alternation, and the median of the pairs' ratios is kept.

A floor is the worse end of what the project's development machine measures (docs/research/benchmarks.md quotes
each, with the run it came from). A ratio more than :data:`SLACK` times worse than its floor fails, exit 1: that
catches a 4x regression (as the simulator's latency series was, 8.2 CPU-s against 2.0 s) and stays loose enough for
a shared, noisy machine. About 45 s in all.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable

#: How much worse than its floor a ratio may be before the run fails.
SLACK = 2.0


@dataclasses.dataclass(frozen=True, slots=True)
class Floor:
    """A ratio's documented floor: the worse end of what it measures; ``higher_is_better`` says which way is worse."""

    name: str
    what: str
    floor: float
    higher_is_better: bool

    def limit(self) -> float:
        """The value past which the run fails: :data:`SLACK` times worse than the floor."""
        return self.floor / SLACK if self.higher_is_better else self.floor * SLACK

    def holds(self, ratio: float) -> bool:
        """Whether ``ratio`` is at most :data:`SLACK` times worse than the floor."""
        return ratio >= self.limit() if self.higher_is_better else ratio <= self.limit()

    def line(self, ratio: float) -> str:
        """One line: the ratio, its floor and limit, and whether it holds."""
        sign = ">=" if self.higher_is_better else "<="
        verdict = "ok" if self.holds(ratio) else f"FAILED: more than {SLACK:g}x worse than its floor"
        return (
            f"{self.name}: {ratio:.2f} ({self.what}; floor {self.floor:g}, must be {sign} {self.limit():g}): {verdict}"
        )


#: Every ratio checked, by name (docs/research/benchmarks.md quotes the same floors).
FLOORS = {
    floor.name: floor
    for floor in (
        Floor("sim wyegelwel", "CPU, x the heap baseline", 16.0, higher_is_better=False),
        Floor("sim smira", "CPU, x the heap baseline", 7.0, higher_is_better=False),
        Floor("target", "requests/s, x the hello-world", 0.4, higher_is_better=True),
    )
}


def paired_median(measure: Callable[[], float], baseline: Callable[[], float], pairs: int) -> float:
    """The median of ``pairs`` ratios ``measure() / baseline()``, each pair measured back to back, in turns."""
    ratios = []
    for number in range(pairs):
        if number % 2:  # each goes first in turn
            base = baseline()
            ratios.append(measure() / base)
        else:
            value = measure()
            ratios.append(value / baseline())
    ratios.sort()
    return ratios[len(ratios) // 2]


def simulator_ratios(pairs: int) -> dict[str, float]:
    """The simulator's experiments' CPU as multiples of the heap baseline's."""
    # imported here: the benches' helpers are on the path when this runs from bench/, and a test loads only the floors
    from sim_bench import baseline, cpu

    from retrystorm.sim.experiments import smira, wyegelwel

    def heap_s() -> float:
        return cpu(baseline, 3)[0]

    return {
        "sim wyegelwel": paired_median(lambda: cpu(wyegelwel.run, 1)[0], heap_s, pairs),
        "sim smira": paired_median(lambda: cpu(smira.run, 1)[0], heap_s, pairs),
    }


def target_ratio(pairs: int, seconds: int) -> float:
    """The target's requests/s (model ``fixed``, no delay) as a multiple of the hello-world's."""
    from benchlib import ensure_wrk, hello, raise_open_files_limit, target
    from throughput import requests_per_second

    raise_open_files_limit()
    wrk = ensure_wrk()
    with target("--model", "fixed", "--base-delay", "0") as served, hello() as bare:
        for server in (served, bare):  # warm up
            requests_per_second(wrk, server.url(), 1, 50)
        return paired_median(
            lambda: requests_per_second(wrk, served.url(), seconds, 50),
            lambda: requests_per_second(wrk, bare.url(), seconds, 50),
            pairs,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3, help="side-by-side pairs per ratio; the median is kept")
    parser.add_argument("--seconds", type=int, default=2, help="wrk's duration for each target measurement")
    args = parser.parse_args(argv)
    ratios = simulator_ratios(args.pairs)
    ratios["target"] = target_ratio(args.pairs, args.seconds)
    failed = 0
    for name, ratio in ratios.items():
        print(FLOORS[name].line(ratio))
        failed += not FLOORS[name].holds(ratio)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
