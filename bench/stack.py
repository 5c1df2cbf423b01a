"""The compose stack on this machine: time to healthy, attempts/s per worker count, latency added by containers.

Needs a Docker engine and the offline images (``scripts/offline-images``). Uses the
loopback override (host networking, every service on 127.0.0.1) under its own compose
project, and local processes as the baseline, measured side by side in the same run:

1. **up to healthy**: ``docker compose up -d --wait`` from nothing (volumes removed) until
   every service's health check passes, ``--up-rounds`` times.
2. **attempts/s by worker count**: for 1, 2 and 4 Locust workers, the users call a target
   with zero delay (``fixed:base_delay=0``) back to back (think time 0, strategy
   ``none``); attempts/s over a window after a warm-up, read from the master's
   ``/metrics``. The same with a local master, local workers and a local target
   process. Does it grow with workers until the two cores run out, and what does the
   container cost?
3. **latency added**: ``GET /api`` one after another on one keep-alive connection, to
   the container's target and to a local target process, alternating in rounds:
   median and p99 of each and their difference.

Everything goes to 127.0.0.1 and is bounded in time; the stack is taken down and every
local process stopped by its pid at the end.

Run: ``.venv/bin/python bench/stack.py [--workers 1,2,4] [--users 200] [--window 15] [--up-rounds 2]``
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

from benchlib import target
from loadgen_common import local_cluster, scrape_labelled, total, wait_workers

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "stack"))
from compose import BASE_FILE, LOOPBACK_FILE, LOOPBACK_PORTS, admin_token, compose_binary  # noqa: E402

ZERO_DELAY = "fixed:base_delay=0"
SWARM_OPTIONS = {"retry_strategy": "none", "think_time": "constant:0s", "arrival": "closed"}


class Stack:
    """The loopback compose stack under a project of its own."""

    def __init__(self) -> None:
        self.project = f"rsbench{uuid.uuid4().hex[:6]}"
        self.argv = [compose_binary(), "-p", self.project, "-f", str(BASE_FILE), "-f", str(LOOPBACK_FILE)]

    def compose(self, *args: str, timeout_s: float = 300) -> None:
        subprocess.run([*self.argv, *args], cwd=ROOT, check=True, capture_output=True, timeout=timeout_s)

    def up(self, workers: int) -> float:
        """``up --wait`` with ``workers`` workers; the seconds it took."""
        started = time.monotonic()
        self.compose("up", "-d", "--no-build", "--wait", "--scale", f"locust-worker={workers}")
        return time.monotonic() - started

    def down(self) -> None:
        self.compose("down", "-v", "--timeout", "20")


def call(
    url: str, *, form: dict[str, str] | None = None, body: object = None, method: str = "GET", token: str = ""
) -> object:
    """One HTTP call; JSON answers decoded; ``token``: sent as a bearer token."""
    data, headers = None, {"Authorization": f"Bearer {token}"} if token else {}
    if form is not None:
        data = urllib.parse.urlencode(form).encode()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    elif body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(url, data=data, method=method, headers=headers)  # noqa: S310 - loopback only
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
        raw = response.read()
    return json.loads(raw) if raw[:1] in (b"{", b"[") else raw.decode()


def attempts_per_s(master_url: str, target_url: str, users: int, warmup_s: float, window_s: float) -> float:
    """Swarm ``users`` back-to-back users on the master; attempts/s over the window."""
    port = int(urllib.parse.urlsplit(master_url).port or 80)
    form = {"user_count": str(users), "spawn_rate": str(users), "host": target_url, **SWARM_OPTIONS}
    form["run_time"] = f"{int(warmup_s + window_s + 30)}s"
    answer = call(master_url + "/swarm", form=form, method="POST")
    if not (isinstance(answer, dict) and answer.get("success")):
        raise SystemExit(f"the master refused the swarm: {answer}")
    try:
        time.sleep(warmup_s)
        before = total(scrape_labelled(port), "retrystorm_client_attempts_total")
        started = time.monotonic()
        time.sleep(window_s)
        time.sleep(1.5)  # workers report every second: let the window's last report arrive
        after = total(scrape_labelled(port), "retrystorm_client_attempts_total")
        return (after - before) / (time.monotonic() - started)
    finally:
        call(master_url + "/stop", method="POST")


def latencies(url: str, count: int) -> list[float]:
    """Seconds per ``GET /api``, one after another on one keep-alive connection."""
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=10)
    found = []
    try:
        for _ in range(count):
            started = time.perf_counter()
            connection.request("GET", "/api")
            connection.getresponse().read()
            found.append(time.perf_counter() - started)
    finally:
        connection.close()
    return found


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98]


def measure_up(stack: Stack, rounds: int) -> None:
    times = []
    for _ in range(rounds):
        stack.down()
        times.append(stack.up(1))
    print(f"up to healthy (1 worker, from nothing): {', '.join(f'{t:.1f} s' for t in times)}")


def measure_scaling(stack: Stack, local_target_url: str, args: argparse.Namespace) -> None:
    container_target = f"http://127.0.0.1:{LOOPBACK_PORTS['target']}"
    master_url = f"http://127.0.0.1:{LOOPBACK_PORTS['locust-master']}"
    print(f"\nattempts/s, {args.users} users back to back, zero-delay target; window {args.window:g} s")
    print(f"{'workers':>7} {'containers':>11} {'local':>9} {'ratio':>6} {'vs 1 worker (containers)':>25}")
    first = None
    for workers in args.workers:
        stack.up(workers)
        wait_workers(master_url, workers)
        call(container_target + "/admin/model", body={"spec": ZERO_DELAY}, method="PUT", token=admin_token())
        in_containers = attempts_per_s(master_url, container_target, args.users, args.warmup, args.window)
        with local_cluster(local_target_url, workers) as (web, _):
            local = attempts_per_s(f"http://127.0.0.1:{web}", local_target_url, args.users, args.warmup, args.window)
        first = first or in_containers
        print(f"{workers:>7} {in_containers:>11.0f} {local:>9.0f} {in_containers / local:>6.2f} "
              f"{in_containers / first:>25.2f}")  # fmt: skip


def measure_latency(local_target_url: str, rounds: int, per_round: int) -> None:
    container_target = f"http://127.0.0.1:{LOOPBACK_PORTS['target']}"
    samples: dict[str, list[float]] = {"container": [], "local": []}
    for _ in range(rounds):
        samples["container"] += latencies(container_target, per_round)
        samples["local"] += latencies(local_target_url, per_round)
    print(f"\nGET /api one at a time, zero delay, {rounds} x {per_round} each (ms)")
    print(f"{'target':<10} {'median':>8} {'p99':>8}")
    for name, values in samples.items():
        print(f"{name:<10} {statistics.median(values) * 1e3:>8.3f} {p99(values) * 1e3:>8.3f}")
    added = statistics.median(samples["container"]) - statistics.median(samples["local"])
    print(f"added by the container: {added * 1e3:+.3f} ms at the median")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=lambda text: [int(n) for n in text.split(",")], default=[1, 2, 4])
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--window", type=float, default=15.0)
    parser.add_argument("--up-rounds", type=int, default=2)
    parser.add_argument("--latency-rounds", type=int, default=4)
    parser.add_argument("--latency-requests", type=int, default=500, help="requests per round and target")
    args = parser.parse_args()
    stack = Stack()
    try:
        measure_up(stack, args.up_rounds)
        with target("--model", ZERO_DELAY) as local_target:
            local_url = local_target.url("")
            measure_scaling(stack, local_url, args)
            measure_latency(local_url, args.latency_rounds, args.latency_requests)
    finally:
        stack.down()


if __name__ == "__main__":
    main()
