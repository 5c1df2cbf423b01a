"""Fidelity of the live target: latency against the seed's per-request rule, and memory at 10,000 in flight.

``--seed-shaped`` compares the live target with the seed's behaviour where the issue
measured it: ``wrk -t2 -c60`` and ``-c100`` for 10 s against the default exponential
model, which holds 60 or 100 requests in flight (110 and 126 ms of delay: each
request's third check, at 150 ms, passes). The reference is the seed's goroutines, every
request checking on its own grid (:class:`retrystorm.target.models.reference.GoroutineServer`),
driven by the same closed loop in virtual time (``closed_loop.py``); its p99 is what a
faithful server gives. The script prints, for each connection count, the reference's
p99, the live target's p99 (median of ``--repeat`` runs) and their difference (target:
within 10 ms), and this tree's model in the same virtual loop. ``--baseline DIR`` adds
another checkout's target (live, and its model in the virtual loop; a model that names
the next grid point after the time it is asked, rather than a check that came due while
the live clock task was writing answers, is exact in the virtual loop, which asks on
time, and a tick late live); ``--seed-server
CMD`` adds a server started by ``CMD`` that prints ``listening on
http://127.0.0.1:PORT`` on stderr: the seed's ``server.go`` built with Go after
changing its last line to listen on ``127.0.0.1:0`` and print that line (the seed's
code is not part of this repository).

Without ``--seed-shaped``: fidelity and memory at 10,000 requests in flight.

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
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from benchlib import HERE, Server, cpu_share, ensure_wrk, raise_open_files_limit, rss_bytes, scrape, target
from closed_loop import latencies, p99_ms

from retrystorm.target.models import parse_model
from retrystorm.target.models.reference import GoroutineServer

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
    parser.add_argument("--seed-shaped", action="store_true", help="p99 at wrk -c60/-c100 against the reference")
    parser.add_argument("--repeat", type=int, default=3, help="--seed-shaped: wrk runs per figure (the median)")
    parser.add_argument("--seed-server", help="--seed-shaped: also this server command (the seed's Go server)")
    args = parser.parse_args()
    print(f"open-files limit: {raise_open_files_limit()}")
    wrk = ensure_wrk()
    if args.seed_shaped:
        seed_shaped(wrk, args)
        return
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


#: The issue's measurement: wrk -t2 -cC -d10s.
SEED_CONNECTIONS = (60, 100)
SEED_SECONDS = 10
#: How far the live p99 may be from the reference's.
WITHIN_MS = 10.0


def wrk_p99_ms(wrk: str, url: str, connections: int) -> float:
    """wrk -t2 -cC -d10s, as the issue ran it; its p99 in ms."""
    env = {**os.environ, "START_MS": "0", "SPREAD_MS": "0", "CONNECTIONS_PER_THREAD": str(connections // 2)}
    argv = [wrk, "-t2", f"-c{connections}", f"-d{SEED_SECONDS}s", "-s", str(HERE / "latency.lua"), url]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, env=env).stdout
    return parse(out)["p99"] / 1000


def live_p99s(wrk: str, server: Server, repeat: int) -> dict[int, float]:
    """The median over ``repeat`` wrk runs of the p99 at each connection count."""
    time.sleep(1.0)
    return {
        count: statistics.median(wrk_p99_ms(wrk, server.url(), count) for _ in range(repeat))
        for count in SEED_CONNECTIONS
    }


def virtual_p99s(source: Path | None) -> dict[int, float]:
    """A tree's default model in the virtual closed loop (another tree: in a process of its own)."""
    if source is None:
        model = parse_model("exponential")
        return {count: p99_ms(latencies(model.start(0.0), count)) for count in SEED_CONNECTIONS}
    argv = [sys.executable, str(HERE / "closed_loop.py"), *map(str, SEED_CONNECTIONS)]
    env = {**os.environ, "PYTHONPATH": str(source)}
    out = subprocess.run(argv, capture_output=True, text=True, check=True, env=env)
    return {int(count): value for count, value in json.loads(out.stdout).items()}


def seed_shaped(wrk: str, args: argparse.Namespace) -> None:
    """The issue's comparison: p99 at 60 and 100 connections, live and virtual, against the reference."""
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (noise: p99 moves with it)")
    model = parse_model("exponential")
    reference = {
        count: p99_ms(latencies(GoroutineServer(model.delay_at, model.tick_s), count)) for count in SEED_CONNECTIONS
    }
    rows: list[tuple[str, dict[int, float], dict[int, float] | None]] = []
    with target() as service:
        rows.append(("this checkout", live_p99s(wrk, service, args.repeat), virtual_p99s(None)))
    for baseline in args.baseline:
        with target(source=baseline) as service:
            rows.append((f"baseline {baseline}", live_p99s(wrk, service, args.repeat), virtual_p99s(baseline)))
    if args.seed_server:
        with Server(shlex.split(args.seed_server)) as server:
            rows.append(("seed Go server", live_p99s(wrk, server, args.repeat), None))
    print(f"\np99 of wrk -t2 -cC -d{SEED_SECONDS}s, default exponential model, median of {args.repeat} runs")
    print("reference: the seed's goroutines, each request on its own grid, in the same closed loop in virtual time")
    for count in SEED_CONNECTIONS:
        print(f"\n-c{count}: reference p99 {reference[count]:.1f} ms")
        for name, live, virtual in rows:
            off = live[count] - reference[count]
            verdict = "within" if abs(off) <= WITHIN_MS else "NOT within"
            line = f"  {name}: live {live[count]:.1f} ms ({off:+.1f} ms, {verdict} {WITHIN_MS:g} ms)"
            if virtual is not None:
                line += f"; its model in the virtual loop {virtual[count]:.1f} ms"
            print(line)
        if args.seed_server:  # side by side, in the same noise
            print(f"  this checkout - seed Go server: {rows[0][1][count] - rows[-1][1][count]:+.1f} ms")


if __name__ == "__main__":
    main()
