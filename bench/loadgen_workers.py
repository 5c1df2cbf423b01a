"""The largest seed-style storm one Locust process and N worker processes sustain here.

Seed-style users (exponential think time, mean 10 s; 2 s attempt timeout; fixed 100 ms
retries) against a frozen target (SIGSTOP, resumed at the end): every attempt times
out, so each user sends one attempt per 2.1 s and ``users / 2.1`` attempts/s are
demanded. That is the load a retry storm puts on the generator. For each user count,
a single headless Locust process and a master with N workers (``retrystorm run
--workers N`` starts the same) are measured side by side over the same window: the
attempts/s they sent (``retrystorm_client_attempts_started_total``, the master's sum),
that against the demand, and each process's share of a core (``/proc``).

"Sustained" means at least 90 % of the demand sent. On a machine with 2 cores N = 2
leaves the master and the frozen target to share what is left; figures are ratios
measured in one run, not absolute capacities.

Run: ``.venv/bin/python bench/loadgen_workers.py [--workers 2] [--users 2000 4000 6000 8000] [--window 20]``
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator

import psutil
from benchlib import cpu_seconds, target
from loadgen_common import free_port, locust, scrape_labelled, stop, total

STARTED = "retrystorm_client_attempts_started_total"
STORM = ("--retry-strategy", "fixed:100ms", "--attempt-timeout", "2s", "--think-time", "exponential:10s")


@contextlib.contextmanager
def generators(url: str, users: int, workers: int, run_s: int) -> Iterator[tuple[int, list[int]]]:
    """Headless Locust for ``users``: one process (``workers`` 1) or a master and ``workers`` workers.

    Yields the ``/metrics`` port and every process's pid; stops them all by pid.
    """
    port = free_port()
    common = ["--headless", "--host", url, "-u", str(users), "-r", str(users), "-t", f"{run_s}s",
              "--metrics-port", str(port), "--exit-code-on-error", "0", "--only-summary", *STORM]  # fmt: skip
    started: list[subprocess.Popen[bytes]] = []
    try:
        if workers == 1:
            started.append(locust(*common))
        else:
            bind = free_port()
            started.append(
                locust(*common, "--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(bind),
                       "--expect-workers", str(workers))
            )  # fmt: skip
            worker = ("--worker", "--master-host", "127.0.0.1", "--master-port", str(bind))
            started.extend(locust(*worker) for _ in range(workers))
        wait_users(port, users)
        yield port, [process.pid for process in started]
    finally:
        for process in started:
            stop(process)


def wait_users(port: int, users: int, timeout_s: float = 90.0) -> None:
    """Wait until the generators count ``users`` active users (the master's sum over its workers)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            if total(scrape_labelled(port), "retrystorm_client_active_users") >= users:
                return
        time.sleep(0.5)
    raise SystemExit(f"{users} users were not running within {timeout_s:.0f} s")


def measure(url: str, users: int, workers: int, warmup_s: float, window_s: float) -> dict[str, float]:
    """Attempts/s sent over ``window_s`` after ``warmup_s``, and the busiest process's share of a core."""
    with generators(url, users, workers, int(warmup_s + window_s + 120)) as (port, pids):
        time.sleep(warmup_s)
        before, t0 = scrape_labelled(port), time.monotonic()
        cpu0 = {pid: cpu_seconds(pid) for pid in pids}
        psutil.cpu_percent()  # the machine's busy share from here
        time.sleep(window_s)
        machine = psutil.cpu_percent() / 100
        after, t1 = scrape_labelled(port), time.monotonic()
        cpu1 = {pid: cpu_seconds(pid) for pid in pids}
    elapsed = t1 - t0
    sent = (total(after, STARTED) - total(before, STARTED)) / elapsed
    shares = [(cpu1[pid] - cpu0[pid]) / elapsed for pid in pids]
    return {"sent": sent, "demanded": users / 2.1, "busiest": max(shares), "all": sum(shares), "machine": machine}


def _cpu(row: dict[str, float]) -> str:
    return f"{row['busiest']:.2f}/{row['all']:.2f}/{row['machine']:.0%}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2, help="worker processes beside the single process")
    parser.add_argument("--users", type=int, nargs="+", default=[2000, 4000, 6000, 8000])
    parser.add_argument("--warmup", type=float, default=30.0, help="s before the window: every user in the storm")
    parser.add_argument("--window", type=float, default=20.0, help="seconds measured")
    args = parser.parse_args()
    rows = []
    with target() as frozen:
        os.kill(frozen.pid, signal.SIGSTOP)
        try:
            for users in args.users:
                one = measure(frozen.url(""), users, 1, args.warmup, args.window)
                many = measure(frozen.url(""), users, args.workers, args.warmup, args.window)
                rows.append((users, one, many))
        finally:
            os.kill(frozen.pid, signal.SIGCONT)
    print(f"seed-style storm against a frozen target; {os.cpu_count()} cores; window {args.window:.0f} s")
    print("CPU: the busiest Locust process's share of a core / all of them / the machine's busy share of all cores")
    print(f"{'users':>6} {'demanded/s':>10} | {'1 process: sent':>15} {'of demand':>9} {'CPU':>16} | "
          f"{f'{args.workers} workers: sent':>17} {'of demand':>9} {'CPU':>16} | {'N/1':>5}")  # fmt: skip
    for users, one, many in rows:
        print(
            f"{users:>6} {one['demanded']:>10.0f} | {one['sent']:>15.0f} {one['sent'] / one['demanded']:>9.0%} "
            f"{_cpu(one):>16} | {many['sent']:>17.0f} {many['sent'] / many['demanded']:>9.0%} "
            f"{_cpu(many):>16} | {many['sent'] / one['sent']:>5.2f}"
        )
    for label, index in (("1 process", 1), (f"{args.workers} workers", 2)):
        held = [users for users, *both in rows if both[index - 1]["sent"] >= 0.9 * both[index - 1]["demanded"]]
        print(f"{label}: largest load sustained (>= 90 % of demand): {max(held, default=0):,} users")


if __name__ == "__main__":
    main()
