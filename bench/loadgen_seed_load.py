"""The seed's load from one Locust process, steady and in a storm, with its CPU.

* Steady: 1000 users, exponential think time with mean 10 s, against the seed model
  (``retrystorm target``, defaults): they must hold 100 +- 5 logical requests/s.
* Storm: the same users with fixed 100 ms retries against a frozen target (SIGSTOP,
  resumed at the end), so every attempt times out at 2 s: each user sends one
  attempt per 2.1 s, 1000 / 2.1 = 476 attempts/s if Locust keeps up.

Rates and the Locust process's CPU are measured over a window after the ramp, from
the ``/metrics`` counters and ``/proc/PID/stat``. A user joins the storm after its
first think time, so the storm's window starts later (by 30 s, 95 % have joined).

Run: ``.venv/bin/python bench/loadgen_seed_load.py [--users 1000] [--window 45]``
"""

from __future__ import annotations

import argparse
import os
import signal
import time

from benchlib import cpu_seconds, target, wait_until
from loadgen_common import free_port, locust, scrape_labelled, stop, total

ATTEMPTS = "retrystorm_client_attempts_total"
REQUESTS = "retrystorm_client_requests_total"


def measure(url: str, users: int, warmup_s: float, window_s: float, *flags: str) -> dict[str, float]:
    """Rates and CPU of one Locust process over ``window_s`` after ``warmup_s`` (counted from its first answer)."""
    port = free_port()
    run_s = int(warmup_s + window_s + 60)  # a bound: the process is stopped after the window
    process = locust(
        "--headless", "--host", url, "-u", str(users), "-r", "200", "-t", f"{run_s}s",
        "--metrics-port", str(port), "--exit-code-on-error", "0", "--only-summary", *flags,
    )  # fmt: skip
    try:
        what = f"Locust's /metrics on port {port}"
        wait_until(lambda: scrape_labelled(port), timeout_s=50, what=what, every_s=0.2, ignore=(OSError,))
        time.sleep(warmup_s)
        before, cpu_before, t_before = scrape_labelled(port), cpu_seconds(process.pid), time.monotonic()
        time.sleep(window_s)
        after, cpu_after, t_after = scrape_labelled(port), cpu_seconds(process.pid), time.monotonic()
    finally:
        stop(process)
    elapsed = t_after - t_before
    return {
        name: (total(after, metric, **labels) - total(before, metric, **labels)) / elapsed
        for name, metric, labels in (
            ("ok requests/s", REQUESTS, {"outcome": "ok"}),
            ("gave up/s", REQUESTS, {"outcome": "gave_up"}),
            ("attempts/s", ATTEMPTS, {}),
            ("timeouts/s", ATTEMPTS, {"outcome": "timeout"}),
        )
    } | {"CPU %": 100 * (cpu_after - cpu_before) / elapsed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--warmup", type=float, default=15.0, help="seconds before the steady window (ramp)")
    parser.add_argument(
        "--storm-warmup",
        type=float,
        default=30.0,
        help="seconds before the storm window: a user joins the storm after its first think time (mean 10 s)",
    )
    parser.add_argument("--window", type=float, default=45.0, help="seconds measured")
    args = parser.parse_args()
    with target() as server:
        steady = measure(server.url(""), args.users, args.warmup, args.window, "--retry-strategy", "fixed:100ms")
    with target() as frozen:
        os.kill(frozen.pid, signal.SIGSTOP)
        try:
            storm = measure(
                frozen.url(""), args.users, args.storm_warmup, args.window, "--retry-strategy", "fixed:100ms"
            )
        finally:
            os.kill(frozen.pid, signal.SIGCONT)
    expected_storm = args.users / 2.1
    print(f"{args.users} users, exponential think time (mean 10 s), 2 s attempt timeout, fixed 100 ms retries")
    print(
        f"window {args.window:.0f} s after {args.warmup:.0f} s (steady) or {args.storm_warmup:.0f} s (storm); "
        "one Locust process"
    )
    print(f"{'':<14} {'steady':>9} {'storm':>9}")
    for key in steady:
        print(f"{key:<14} {steady[key]:>9.1f} {storm[key]:>9.1f}")
    offered = args.users / 10
    print(f"steady: {steady['ok requests/s']:.1f} logical requests/s (target {offered:.0f} +- {offered / 20:.0f})")
    print(f"storm: {storm['attempts/s']:.0f} attempts/s of {expected_storm:.0f} possible ({args.users} users / 2.1 s)")


if __name__ == "__main__":
    main()
