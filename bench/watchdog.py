"""The dead-man switch's cost: memory and arming time with 1, 10 and 100 armed pauses, beside one process per pause.

For N in 1, 10, 100: arms N pause orders (each guarding a sleeping process of the benchmark's own, nothing
paused: arming does not need it) with the journal's supervisor, and reads the RSS and PSS of every watchdog
process from ``/proc``; then disarms them. Beside it, in the same run, the baseline of the design it replaced
(one watchdog interpreter per armed pause): N interpreters started as a watchdog was (``python -P -S``),
importing what it imported, and sleeping. Prints both and their ratio; asserts nothing.

    .venv/bin/python bench/watchdog.py
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from retrystorm.chaos.backends.process import process_ident
from retrystorm.chaos.watchdog import WatchdogOrder, arm
from retrystorm.chaos.watchdog.client import close_all

COUNTS = (1, 10, 100)
#: What a per-pause watchdog imported before it waited (the order, the guards, the journal), as it was started.
BASELINE = "import retrystorm.chaos.watchdog.guards, retrystorm.chaos.journal, json, select, time; time.sleep(600)"


def memory_mib(pid: int) -> tuple[float, float]:
    """RSS and PSS of ``pid``, in MiB."""
    rss = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
               if line.startswith("VmRSS:"))  # fmt: skip
    pss = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()
               if line.startswith("Pss:"))  # fmt: skip
    return rss / 1024, pss / 1024


def supervised(count: int, targets: list[str], journal: Path) -> tuple[float, float, int, float]:
    """Arm ``count`` orders: total RSS and PSS of the watchdog processes, their number, ms per arm."""
    started = time.monotonic()
    armed = [
        arm(WatchdogOrder(backend="process", ident=targets[n], target="bench", outage=f"o{n}",
                          deadline_monotonic=time.monotonic() + 300, journal=journal))
        for n in range(count)
    ]  # fmt: skip
    per_arm_ms = (time.monotonic() - started) * 1000 / count
    pids = {watchdog.pid for watchdog in armed}
    rss, pss = (sum(values) for values in zip(*(memory_mib(pid) for pid in pids), strict=True))
    for watchdog in armed:
        watchdog.disarm()
    return rss, pss, len(pids), per_arm_ms


def per_pause(count: int) -> tuple[float, float, float]:
    """``count`` watchdog-like interpreters, one per pause: total RSS and PSS, ms per start."""
    root = str(Path(__file__).resolve().parents[1])
    environment = os.environ | {"PYTHONPATH": root}
    started = time.monotonic()
    processes = [
        subprocess.Popen([sys.executable, "-P", "-S", "-c", f"print(1, flush=True); {BASELINE}"],
                         stdout=subprocess.PIPE, env=environment)
        for _ in range(count)
    ]  # fmt: skip
    for process in processes:
        if process.stdout is not None:
            process.stdout.readline()
    per_start_ms = (time.monotonic() - started) * 1000 / count
    time.sleep(0.5)  # their imports done
    rss, pss = (sum(values) for values in zip(*(memory_mib(p.pid) for p in processes), strict=True))
    for process in processes:
        process.kill()
        process.communicate()
    return rss, pss, per_start_ms


def main() -> None:
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    sleepers = [subprocess.Popen(["sleep", "600"]) for _ in range(max(COUNTS))]
    try:
        targets = [process_ident(process.pid) for process in sleepers]
        with tempfile.TemporaryDirectory() as scratch:
            journal = Path(scratch) / "journal.jsonl"
            print(f"{'armed':>5}  {'supervisor RSS':>14} {'PSS':>7} {'procs':>5} {'ms/arm':>7}   "
                  f"{'per-pause RSS':>13} {'PSS':>7} {'ms/start':>8}   {'RSS ratio':>9}")  # fmt: skip
            for count in COUNTS:
                rss, pss, processes, arm_ms = supervised(count, targets, journal)
                base_rss, base_pss, start_ms = per_pause(count)
                print(f"{count:5d}  {rss:11.1f} MiB {pss:7.1f} {processes:5d} {arm_ms:7.1f}   "
                      f"{base_rss:10.1f} MiB {base_pss:7.1f} {start_ms:8.1f}   {rss / base_rss:9.3f}")  # fmt: skip
            close_all()
    finally:
        for process in sleepers:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()


if __name__ == "__main__":
    main()
