"""Fidelity and memory at 10,000 requests in flight.

``retrystorm target --model fixed --base-delay D`` answers every request exactly D after
it arrived, so the client-side latency of each request minus D is how late the service
answers against its model. wrk opens 10,000 connections, waits START_S seconds (the
service accepting them all at once is not the steady state measured here), sends each
connection's first request at a random time within D (``latency.lua``), and from then
on keeps one request per connection in flight: a steady 10,000 after D seconds. Its
latency percentiles minus D are the figure (target: p99 < 20 ms). Midway the script reads the service's in-flight
gauge, its RSS (against the RSS before any load: memory per in-flight request) and its
CPU share. Its RSS is sampled throughout; after wrk stops, the script waits for the
requests it left in flight to drain (in flight 0, no connection open) and prints RSS
before the load, at its peak and after the drain, each against the first. Run:
``.venv/bin/python bench/fidelity.py``; ``--baseline DIR`` (repeatable) runs another
checkout's target (``git archive COMMIT | tar -x -C DIR``) the same way afterwards, for a
side by side.
"""

import argparse
import os
import re
import subprocess
import threading
import time
from pathlib import Path

from benchlib import HERE, cpu_share, ensure_wrk, raise_open_files_limit, rss_bytes, scrape, target

#: Seconds wrk holds every first request while the service accepts the connections.
START_S = 3


def run_wrk(wrk: str, url: str, args: argparse.Namespace, result: dict[str, str]) -> None:
    """wrk on one thread; each connection's first request is spread over the delay."""
    connections, seconds, delay_s = args.connections, args.seconds, args.delay
    spread = {"START_MS": str(START_S * 1000), "SPREAD_MS": str(int(delay_s * 1000))}
    env = {**os.environ, **spread, "CONNECTIONS_PER_THREAD": str(connections)}
    out = subprocess.run(
        [
            wrk,
            "-t1",
            f"-c{connections}",
            f"-d{seconds}s",
            f"--timeout={delay_s * 3:g}s",
            "-s",
            str(HERE / "latency.lua"),
            url,
        ],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout
    result["out"] = out


def parse(out: str) -> dict[str, float]:
    figures = {}
    for key in ("p0", "p50", "p90", "p99", "p99.9", "p100", "requests", "mean"):
        match = re.search(rf"^{re.escape(key)} ([\d.]+)$", out, re.MULTILINE)
        if match:
            figures[key] = float(match.group(1))
    errors = re.search(r"^errors (.*)$", out, re.MULTILINE)
    figures["errors"] = sum(int(x) for x in errors.group(1).split()) if errors else -1
    return figures


class RssSampler(threading.Thread):
    """The largest RSS of ``pid`` seen, sampled every 100 ms until stopped."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = rss_bytes(pid)
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.1):
            self.peak = max(self.peak, rss_bytes(self.pid))


def wait_drained(port: int, timeout_s: float) -> bool:
    """Wait (at most ``timeout_s``) until nothing is in flight and no connection is open."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        samples = scrape(port)  # the scrape's own connection is closed before the next
        if samples["retrystorm_target_in_flight_requests"] == 0 and samples["retrystorm_target_open_connections"] <= 1:
            return True
        time.sleep(0.5)
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=10_000)
    parser.add_argument("--delay", type=float, default=10.0, help="the fixed model's delay, seconds")
    parser.add_argument("--seconds", type=int, default=START_S + 45)
    parser.add_argument(
        "--baseline",
        type=Path,
        action="append",
        default=[],
        help="another checkout's tree, run afterwards (repeatable)",
    )
    args = parser.parse_args()
    print(f"open-files limit: {raise_open_files_limit()}")
    wrk = ensure_wrk()
    memory = {"this checkout": measure(wrk, args, None)}
    for baseline in args.baseline:
        memory[f"baseline {baseline}"] = measure(wrk, args, baseline)
    print(f"\nRSS of the target, wrk -c{args.connections} against fixed:base_delay={args.delay:g}s, then drained:")
    for name, (before, peak, after, drained) in memory.items():
        note = "" if drained else " (not drained within the wait)"
        print(
            f"{name}: before {before / 2**20:.1f} MiB, peak {peak / 2**20:.1f} MiB ({peak / before:.2f}x), "
            f"after the drain {after / 2**20:.1f} MiB ({after / before:.2f}x){note}"
        )


def measure(wrk: str, args: argparse.Namespace, source: Path | None) -> tuple[int, int, int, bool]:
    """One run; prints its figures and returns RSS before, at peak and after the drain, and whether it drained."""
    with target("--model", "fixed", "--base-delay", f"{args.delay:g}s", source=source) as service:
        time.sleep(1.0)
        idle_rss = rss_bytes(service.pid)
        sampler = RssSampler(service.pid)
        sampler.start()
        result: dict[str, str] = {}
        load = threading.Thread(
            target=run_wrk,
            args=(wrk, service.url(), args, result),
        )
        load.start()
        time.sleep(START_S + args.delay * 1.5)  # every connection has a request in flight
        in_flight = scrape(service.port)["retrystorm_target_in_flight_requests"]
        busy_rss = rss_bytes(service.pid)
        cpu = cpu_share(service.pid, args.delay)
        load.join()
        drained = wait_drained(service.port, args.delay * 3 + 10)
        time.sleep(2.0)  # a second's housekeeping after the drain (the target's sweep runs once a second)
        sampler.done.set()
        sampler.join()
        after_rss = rss_bytes(service.pid)
    report(result, args, in_flight=in_flight, idle_rss=idle_rss, busy_rss=busy_rss, cpu=cpu)
    return idle_rss, sampler.peak, after_rss, drained


def report(
    result: dict[str, str], args: argparse.Namespace, *, in_flight: float, idle_rss: int, busy_rss: int, cpu: float
) -> None:
    """Print one run's lateness, memory per request and CPU."""
    figures = parse(result["out"])
    delay_us = args.delay * 1e6
    print(f"wrk -t1 -c{args.connections} -d{args.seconds}s against fixed:base_delay={args.delay:g}s")
    print(f"requests answered: {figures['requests']:.0f}, wrk errors: {figures['errors']:.0f}")
    print(f"in flight (server gauge, mid-run): {in_flight:.0f}")
    for key in ("p50", "p90", "p99", "p99.9", "p100"):
        print(f"actual - modelled completion, {key}: {(figures[key] - delay_us) / 1000:.1f} ms")
    print(f"RSS idle {idle_rss / 2**20:.1f} MiB, at {in_flight:.0f} in flight {busy_rss / 2**20:.1f} MiB")
    print(f"memory per in-flight request: {(busy_rss - idle_rss) / max(in_flight, 1) / 1024:.1f} KiB")
    rate = args.connections / args.delay
    print(f"server CPU at {in_flight:.0f} in flight ({rate:.0f} req/s): {cpu:.0%} of one core")


if __name__ == "__main__":
    main()
