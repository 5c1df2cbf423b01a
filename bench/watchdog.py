"""The dead-man switch's cost per pause: start-to-armed latency of ``arm()``, the watchdog's RSS, ``disarm()``.

For each backend, arms N watchdogs in turn, each with a deadline a minute ahead, reads the
watchdog's VmRSS from ``/proc`` once armed, then disarms it. The process watchdogs guard a
sleeping process of the benchmark's own (nothing is paused: arming does not need it); the
docker ones a container id that no engine is asked about until the deadline, so no engine is
needed. A docker watchdog imports the Docker SDK 2 s before its deadline: one more reading
takes its RSS then. Beside them, the floor: this interpreter started as a process watchdog
is (``-P -S``) to run ``pass``. Prints medians and ranges; asserts nothing.

    .venv/bin/python bench/watchdog.py [N]
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from retrystorm.chaos.backends.process import process_ident
from retrystorm.chaos.watchdog import WatchdogOrder, arm
from retrystorm.chaos.watchdog.guards import DOCKER_PREPARE_S


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def summary(values: list[float], unit: str) -> str:
    ordered = sorted(values)
    return f"median {statistics.median(ordered):6.1f} {unit} (min {ordered[0]:.1f}, max {ordered[-1]:.1f})"


def order(backend: str, ident: str, journal: Path, ahead_s: float) -> WatchdogOrder:
    return WatchdogOrder(
        backend=backend,
        ident=ident,
        target="bench",
        outage="o1",
        deadline_monotonic=time.monotonic() + ahead_s,
        journal=journal,
    )


def measure(backend: str, ident: str, journal: Path, runs: int) -> None:
    armed_ms, disarm_ms, rss = [], [], []
    for _ in range(runs):
        start = time.monotonic()
        watchdog = arm(order(backend, ident, journal, 60))
        armed_ms.append((time.monotonic() - start) * 1000)
        rss.append(rss_mib(watchdog.pid))
        start = time.monotonic()
        watchdog.disarm()
        disarm_ms.append((time.monotonic() - start) * 1000)
    print(f"{backend:7}  arm() start to armed  {summary(armed_ms, 'ms')}")
    print(f"{backend:7}  RSS once armed        {summary(rss, 'MiB')}")
    print(f"{backend:7}  disarm() to reaped    {summary(disarm_ms, 'ms')}")


def docker_rss_with_sdk(journal: Path) -> float:
    watchdog = arm(order("docker", "c0ffee", journal, DOCKER_PREPARE_S + 1.0))
    time.sleep(1.5)  # past the import, before the deadline
    try:
        return rss_mib(watchdog.pid)
    finally:
        watchdog.disarm()


def floor_ms(runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.monotonic()
        subprocess.run([sys.executable, "-P", "-S", "-c", "pass"], check=True)
        times.append((time.monotonic() - start) * 1000)
    return times


def main(runs: int) -> None:
    print(f"python {sys.version.split()[0]}, PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}")
    target = subprocess.Popen(["sleep", "600"])
    try:
        with tempfile.TemporaryDirectory() as scratch:
            journal = Path(scratch) / "journal.jsonl"
            measure("process", process_ident(target.pid), journal, runs)
            measure("docker", "c0ffee", journal, runs)
            print(f"docker   RSS with the SDK imported  {docker_rss_with_sdk(journal):.1f} MiB")
    finally:
        os.kill(target.pid, signal.SIGKILL)
        target.wait()
    print(f"floor    python -P -S -c pass      {summary(floor_ms(runs), 'ms')}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
