"""How the workers' report interval distorts what a Locust master's counters say about recovery.

A Locust master only knows what its workers last reported; Locust's workers report
every 3 s. The runner's compose backend reads the master's sums once a second, so its
goodput is a staircase. This measures, with a report interval of 3 s and of 1 s side by
side in one run: a real target, a master with two workers (each also serving its own
``/metrics``), the users' goodput at steady load, a short ``SIGSTOP`` of the target,
and every second the target, the master and both workers read at the same moment. The
users retry with the seed client's backoff (``smira``), so they come back gradually.
From those readings, the runner's own analysis (:mod:`retrystorm.runner.series`,
:mod:`retrystorm.experiment.analysis`) computes the client recovery twice: from the master's sums and
from the workers' own counters (the truth at that moment), and the steady state's
five-second goodput windows (client recovery's yardstick) from both.

Printed per interval and round: client recovery from the workers and from the master,
their difference, and the largest deviation of a five-second window of the master's
goodput from the workers' (client recovery needs >= 90 % of steady: a window that
deviates by 10 % or more can move the verdict).

Run: ``.venv/bin/python bench/worker_reports.py [--users 100] [--rounds 2] [--intervals 3,1]``
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

from benchlib import Server, target
from loadgen_common import local_cluster

from retrystorm.experiment.analysis import recoveries
from retrystorm.experiment.scenario import OutageWindow
from retrystorm.loadgen.exposition import parse_target, samples_of
from retrystorm.loadgen.readings import Reading, client_from_samples
from retrystorm.runner.series import build_series

LOCUSTFILE = Path(__file__).with_name("report_interval_locustfile.py")
OUTAGE_AT_S, OUTAGE_S, DURATION_S = 20, 10, 70


def get(port: int, path: str) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
        return str(response.read().decode())


def one_round(server: Server, interval_s: float, users: int) -> tuple[list[Reading], list[Reading]]:
    """Readings every second of one outage run: from the master's sums and from the workers' own counters."""
    os.environ["RETRYSTORM_BENCH_REPORT_INTERVAL"] = str(interval_s)  # read by the workers' locustfile
    with local_cluster(server.url(""), 2, locustfile=LOCUSTFILE, worker_metrics=True) as (master, ports):
        form = {"user_count": str(users), "spawn_rate": str(users), "host": server.url(""), "run_time": "120s",
                "retry_strategy": "smira", "think_time": "exponential:1s"}  # fmt: skip
        body = urllib.parse.urlencode(form).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{master}/swarm", body, method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - http on loopback, above
            if not json.loads(response.read())["success"]:
                raise SystemExit("the master refused the swarm")
        time.sleep(3)  # every user spawned and reported
        t0 = time.monotonic()
        by_master, by_workers = [], []
        for tick in range(DURATION_S + 1):
            time.sleep(max(0.0, t0 + tick - time.monotonic()))
            paused = OUTAGE_AT_S <= tick < OUTAGE_AT_S + OUTAGE_S
            os.kill(server.pid, signal.SIGSTOP if paused else signal.SIGCONT)
            taken = time.monotonic() - t0
            in_target = None if paused else parse_target(get(server.port, "/metrics"))
            master_part = client_from_samples(samples_of(get(master, "/metrics")))
            worker_samples = [sample for port in ports for sample in samples_of(get(port, "/metrics"))]
            by_master.append(Reading(tick, taken, in_target, master_part))
            by_workers.append(Reading(tick, taken, in_target, client_from_samples(worker_samples)))
    return by_master, by_workers


def analyse(readings: list[Reading]) -> tuple[float | None, list[float]]:
    """Client recovery (s after the resume) and the steady state's five-second goodput windows."""
    series = build_series(readings, DURATION_S)
    samples = series.samples()
    found = recoveries(samples, [OutageWindow(OUTAGE_AT_S, OUTAGE_AT_S + OUTAGE_S, "target")])
    goodput = samples.goodput
    windows = [sum(goodput[i : i + 5]) / 5 for i in range(OUTAGE_AT_S // 2, OUTAGE_AT_S - 5)]
    return found[0].client_s, windows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--intervals", default="3,1", help="report intervals to compare, seconds")
    args = parser.parse_args()
    intervals = [float(text) for text in args.intervals.split(",")]
    print(f"{args.users} users (smira, think exponential:1s), outage {OUTAGE_S} s at {OUTAGE_AT_S} s, two workers")
    print(f"{'report':>7} {'round':>5} {'recovery: workers':>18} {'master':>7} {'diff':>6} {'worst 5-s window':>17}")
    with target() as server:
        for round_index in range(1, args.rounds + 1):
            for interval_s in intervals:
                by_master, by_workers = one_round(server, interval_s, args.users)
                truth, true_windows = analyse(by_workers)
                seen, seen_windows = analyse(by_master)
                worst = max(abs(s - t) / t for s, t in zip(seen_windows, true_windows, strict=True) if t > 0)
                diff = f"{seen - truth:+.1f}" if seen is not None and truth is not None else "n/a"
                shown = [f"{v:.0f} s" if v is not None else "never" for v in (truth, seen)]
                print(f"{interval_s:>6g}s {round_index:>5} {shown[0]:>18} {shown[1]:>7} {diff:>6} {worst:>16.0%}")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
