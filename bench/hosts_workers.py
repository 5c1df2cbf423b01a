"""Attempts per second that 1, 2 and 4 Locust workers, each on a host of its own, send to one target.

Network namespaces joined by veth pairs stand in for the hosts (``tests/support/netns.py``: the project's own
test hosts on a private /24; nothing leaves the machine): ``retrystorm target`` on one, the Locust master on
another, each worker on its own, as a run with ``hosts:`` spreads them. Closed-loop users with no think time send
as fast as their worker lets them (fixed 100 ms retries, 2 s attempt timeout), so the attempts/s measure how much
load N workers put on one target. For each N the same users are spread over N workers and measured over the same
window, side by side in one run: the rate, its ratio to one worker's, and each process's share of a core
(``/proc``). On a machine with few cores the workers share them with the target and the master: the ratios show
how far spreading the load helps *here*, not what separate machines give.

Run as root: ``.venv/bin/python bench/hosts_workers.py [--workers 1 2 4] [--users 200] [--window 10]``
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator

from benchlib import cpu_seconds, stop
from loadgen_common import LOCUSTFILE

from tests.support.netns import Lab, unavailable

TARGET_PORT, MASTER_PORT, METRICS_PORT = 8070, 5557, 9646
LOAD = ("--retry-strategy", "fixed:100ms", "--attempt-timeout", "2s", "--think-time", "constant:0s")
#: Run inside the master's host: the sum of the master's ``/metrics`` series (an ``outcome`` label kept apart as
#: ``NAME:OUTCOME``), and when it was read.
SCRAPE = """
import json, sys, time, urllib.request
from prometheus_client.parser import text_string_to_metric_families
body = urllib.request.urlopen(sys.argv[1], timeout=10).read().decode()
read_at = time.monotonic()
sums = {"t": read_at}
for family in text_string_to_metric_families(body):
    for sample in family.samples:
        key = sample.name + (":" + sample.labels["outcome"] if "outcome" in sample.labels else "")
        sums[key] = sums.get(key, 0.0) + sample.value
print(json.dumps(sums))
"""
STARTED = "retrystorm_client_attempts_started_total"
ANSWERED = "retrystorm_client_attempts_total:ok"
USERS = "retrystorm_client_active_users"


def _locust(lab: Lab, host: str, *args: str) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), *args]
    return lab[host].popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def scrape(lab: Lab) -> dict[str, float]:
    """The master's attempts started and answered 2xx, its active users, and the monotonic time they were read."""
    url = f"http://127.0.0.1:{METRICS_PORT}/metrics"
    done = lab["master"].run(sys.executable, "-c", SCRAPE, url, timeout_s=60)
    if done.returncode != 0:
        raise OSError(done.stderr.strip()[-300:])
    reading: dict[str, float] = json.loads(done.stdout)
    return {name: reading.get(name, 0.0) for name in ("t", STARTED, ANSWERED, USERS)}


@contextlib.contextmanager
def swarm(lab: Lab, workers: int, users: int, run_s: int) -> Iterator[list[int]]:
    """A headless master on host ``master`` and ``workers`` workers on hosts ``w1``...; every pid; stopped by pid."""
    master = lab["master"].address
    started = [
        _locust(lab, "master", "--master", "--headless", "--expect-workers", str(workers),
                "-u", str(users), "-r", str(users), "-t", f"{run_s}s",
                "--host", f"http://{lab['app'].address}:{TARGET_PORT}",
                "--master-bind-host", master, "--master-bind-port", str(MASTER_PORT),
                "--metrics-port", str(METRICS_PORT), "--exit-code-on-error", "0", "--only-summary", *LOAD)
    ]  # fmt: skip
    try:
        worker = ("--worker", "--master-host", master, "--master-port", str(MASTER_PORT))
        started.extend(_locust(lab, f"w{index}", *worker) for index in range(1, workers + 1))
        yield [process.pid for process in started]
    finally:
        for process in reversed(started):
            stop(process)


def wait_users(lab: Lab, users: int, timeout_s: float = 120.0) -> None:
    """Until the master counts ``users`` active users (its workers' sum)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError):
            if scrape(lab)[USERS] >= users:
                return
        time.sleep(0.5)
    raise SystemExit(f"{users} users were not running within {timeout_s:.0f} s")


def measure(
    lab: Lab, workers: int, *, users: int, warmup_s: float, window_s: float, target_pid: int
) -> dict[str, float]:
    """Attempts/s over ``window_s`` after ``warmup_s``; the busiest worker's, the master's and the target's CPU."""
    with swarm(lab, workers, users, int(warmup_s + window_s + 120)) as pids:
        wait_users(lab, users)
        time.sleep(warmup_s)
        before = scrape(lab)
        cpu0 = {pid: cpu_seconds(pid) for pid in [*pids, target_pid]}
        time.sleep(window_s)
        after = scrape(lab)
        cpu1 = {pid: cpu_seconds(pid) for pid in cpu0}
    elapsed = after["t"] - before["t"]
    share = {pid: (cpu1[pid] - cpu0[pid]) / elapsed for pid in cpu0}
    return {
        "sent": (after[STARTED] - before[STARTED]) / elapsed,
        "ok": (after[ANSWERED] - before[ANSWERED]) / elapsed,
        "worker": max(share[pid] for pid in pids[1:]),
        "master": share[pids[0]],
        "target": share[target_pid],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4], help="worker counts, each 1 to 8")
    parser.add_argument("--users", type=int, default=200, help="users, spread over the workers")
    parser.add_argument("--warmup", type=float, default=5.0, help="s after every user runs, before the window")
    parser.add_argument("--window", type=float, default=10.0, help="seconds measured")
    args = parser.parse_args()
    if (why := unavailable()) is not None or not all(1 <= n <= 8 for n in args.workers):
        raise SystemExit(why or "--workers: each count from 1 to 8")
    names = ["master", "app", *(f"w{index}" for index in range(1, max(args.workers) + 1))]
    rows = []
    load_before = os.getloadavg()[0]
    with Lab(names) as lab:  # removed on every exit path, with everything still running inside
        app = lab["app"].address
        target = lab["app"].popen(
            [sys.executable, "-m", "retrystorm", "target", "--model", "fixed:base_delay=5ms", "--host", app,
             "--port", str(TARGET_PORT), "--report-interval", "0", "--admin-token", secrets.token_hex(16)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            if not lab["master"].wait_listening(app, TARGET_PORT):
                raise SystemExit(f"the target never listened on {app}:{TARGET_PORT}")
            timing = {"users": args.users, "warmup_s": args.warmup, "window_s": args.window, "target_pid": target.pid}
            rows = [(n, measure(lab, n, **timing)) for n in args.workers]
        finally:
            stop(target)
    base = rows[0][1]["sent"]
    print(f"{args.users} closed-loop users, no think time, against one target (fixed 5 ms); {os.cpu_count()} cores;")
    print(f"window {args.window:.0f} s; each worker, the master and the target on a network namespace of its own")
    print(f"load average before and after: {load_before:.1f}, {os.getloadavg()[0]:.1f} (others share the cores)")
    print("CPU: share of one core over the window")
    print(f"{'workers':>7} {'attempts/s':>10} {'answered':>8} {'vs first':>8} | {'busiest worker':>14} {'master':>6} "
          f"{'target':>6}")  # fmt: skip
    for workers, row in rows:
        print(
            f"{workers:>7} {row['sent']:>10.0f} {row['ok'] / row['sent']:>8.0%} {row['sent'] / base:>8.2f} | "
            f"{row['worker']:>14.2f} {row['master']:>6.2f} {row['target']:>6.2f}"
        )


if __name__ == "__main__":
    main()
