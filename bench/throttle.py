"""Throttle: the CPU a cut process really gets, as a ratio of an uncut one measured beside it.

For each capacity, two CPU-burning processes run side by side, each in a cgroup v1 group of its
own limited to 0.8 CPU (and weighted the most v1 allows, so the rest of a small shared
machine takes little from them, while 0.4 of the 2 cores stay for the rest, the controller's
watchdogs included). One is cut to ``capacity`` through the chaos controller
(:meth:`retrystorm.chaos.controller.OutageController.throttle`; its allowance is its group's 0.8 CPU), the
other is not. Their CPU time is read from ``/proc/PID/stat`` over the same window; the ratio
cut / uncut is the measured capacity, printed beside the asked one, with the kernel's own count
of throttled periods. A row "1.0" is the same pair with no cut: the noise floor of the ratio.

Needs root and the cgroup v1 cpu hierarchy at ``/sys/fs/cgroup/cpu``. Asserts nothing; every
process is killed by its pid and every group it made is removed.

    .venv/bin/python bench/throttle.py [--capacities 0.2,0.4,0.6] [--window 5] [--repeat 2]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from retrystorm.chaos.backends import ProcessBackend
from retrystorm.chaos.cli import make_controller
from retrystorm.chaos.targets import FaultTarget

CPU = Path("/sys/fs/cgroup/cpu")
BURN = [sys.executable, "-c", "while True: pass"]


def ticks(pid: int) -> int:
    """utime + stime in clock ticks."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


@contextlib.contextmanager
def limited_group() -> Iterator[Path]:
    """A cgroup limited to 0.8 CPU with the largest weight; emptied and removed at the end."""
    group = CPU / f"retrystorm-bench-{uuid.uuid4().hex[:8]}"
    group.mkdir()
    try:
        (group / "cpu.shares").write_text("262144")
        (group / "cpu.cfs_period_us").write_text("100000")
        (group / "cpu.cfs_quota_us").write_text("80000")
        yield group
    finally:
        for pid in (group / "cgroup.procs").read_text().split():
            with contextlib.suppress(ProcessLookupError):
                (CPU / "cgroup.procs").write_text(pid)
        group.rmdir()


@contextlib.contextmanager
def burner(group: Path) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(BURN)
    try:
        (group / "cgroup.procs").write_text(str(process.pid))
        yield process
    finally:
        process.kill()
        process.wait()


async def measure(capacity: float | None, window_s: float, journal: Path) -> tuple[int, int, int]:
    """(cut ticks, uncut ticks, throttled periods) over one window; ``capacity`` None: no cut."""
    with (
        limited_group() as cut_group,
        limited_group() as free_group,
        burner(cut_group) as cut,
        burner(free_group) as free,
    ):
        await asyncio.sleep(0.5)  # both running
        backend = ProcessBackend({"burn": cut.pid})
        async with make_controller({"process": backend}, journal) as controller:
            throttle = None
            if capacity is not None:
                throttle = await controller.throttle(FaultTarget("burn", backend), capacity, window_s + 30)
            start = ticks(cut.pid), ticks(free.pid)
            await asyncio.sleep(window_s)
            cut_ticks, free_ticks = ticks(cut.pid) - start[0], ticks(free.pid) - start[1]
            throttled = 0
            if throttle is not None:
                stat = (Path(throttle.cuts[0].ref.ident) / "cpu.stat").read_text().split()
                throttled = int(stat[stat.index("nr_throttled") + 1])
                await throttle.end()
    return cut_ticks, free_ticks, throttled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capacities", default="0.2,0.4,0.6")
    parser.add_argument("--window", type=float, default=5.0, help="seconds measured per row")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    capacities: list[float | None] = [None, *(float(c) for c in args.capacities.split(","))]
    print(f"{'capacity':>8} {'cut CPU-s':>9} {'uncut CPU-s':>11} {'ratio':>6} {'throttled periods':>17}")
    with tempfile.TemporaryDirectory() as tmp:
        for capacity in capacities:
            for run in range(args.repeat):
                journal = Path(tmp) / f"journal-{capacity}-{run}.jsonl"
                cut, free, throttled = asyncio.run(measure(capacity, args.window, journal))
                ratio = cut / free if free else float("nan")
                hz = 100  # USER_HZ on Linux
                shown = "1.0 (none)" if capacity is None else f"{capacity:g}"
                print(f"{shown:>8} {cut / hz:>9.2f} {free / hz:>11.2f} {ratio:>6.2f} {throttled:>17}", flush=True)
                time.sleep(0.2)


if __name__ == "__main__":
    main()
