"""Throughput of ``retrystorm target --model fixed --base-delay 0`` against the floor of
its HTTP stack (``bench/hello.py``), measured by wrk on loopback, side by side.

Rounds alternate target and hello-world so both see the same machine load; the figure
is the median over rounds of each round's ratio (the two runs of a round are seconds
apart, so load from elsewhere on the machine mostly cancels out). Run: ``.venv/bin/python bench/throughput.py``.

``--baseline DIR`` adds the target of another checkout to every round (``git archive
COMMIT | tar -x -C DIR``), to measure a change of the hot path side by side:
``.venv/bin/python bench/throughput.py --baseline /tmp/before``.
"""

import argparse
import contextlib
import re
import subprocess
from pathlib import Path

from benchlib import Server, cpu_seconds, ensure_wrk, hello, median, raise_open_files_limit, target


def requests_per_second(wrk: str, url: str, seconds: int, connections: int) -> float:
    return measure(wrk, url, seconds, connections)[0]


def measure(wrk: str, url: str, seconds: int, connections: int, pid: int | None = None) -> tuple[float, float]:
    """Requests/s, and the server's CPU microseconds per request (``pid``'s user + system time; 0 without it)."""
    cpu_before = cpu_seconds(pid) if pid is not None else 0.0
    out = subprocess.run(
        [wrk, "-t1", f"-c{connections}", f"-d{seconds}s", url], capture_output=True, text=True, check=True
    ).stdout
    cpu = cpu_seconds(pid) - cpu_before if pid is not None else 0.0
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    total = re.search(r"(\d+) requests in", out)
    if not match or not total:
        raise SystemExit(f"unexpected wrk output:\n{out}")
    if "Non-2xx" in out or "Socket errors" in out:
        print(f"  note: wrk reported errors:\n{out}")
    return float(match.group(1)), cpu * 1e6 / max(int(total.group(1)), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout's tree, measured alongside")
    args = parser.parse_args()
    raise_open_files_limit()
    wrk = ensure_wrk()
    zero = ("--model", "fixed", "--base-delay", "0")
    with contextlib.ExitStack() as stack:
        servers: dict[str, Server] = {"target": stack.enter_context(target(*zero))}
        if args.baseline is not None:
            servers["baseline"] = stack.enter_context(target(*zero, source=args.baseline))
        servers["hello"] = stack.enter_context(hello())
        for server in servers.values():  # warm up
            requests_per_second(wrk, server.url(), 1, args.connections)
        figures: dict[str, list[float]] = {name: [] for name in servers}
        cpu_us: dict[str, list[float]] = {name: [] for name in servers}
        names = list(servers)
        for round_ in range(args.rounds):
            for name in names[round_ % len(names) :] + names[: round_ % len(names)]:  # each goes first in turn
                rate, cost = measure(wrk, servers[name].url(), args.seconds, args.connections, servers[name].pid)
                figures[name].append(rate)
                cpu_us[name].append(cost)
            last = ", ".join(f"{name} {figures[name][-1]:,.0f} ({cpu_us[name][-1]:.1f} us)" for name in names)
            print(f"round {round_ + 1} (req/s, server CPU per request): {last}")
    print("median (req/s): " + ", ".join(f"{name} {median(values):,.0f}" for name, values in figures.items()))
    print("median server CPU per request: " + ", ".join(f"{n} {median(v):.2f} us" for n, v in cpu_us.items()))
    setup = f"wrk -t1 -c{args.connections}, {args.seconds}s x {args.rounds} rounds"
    for name, values in figures.items():
        if name != "hello":
            ratios = [t / h for t, h in zip(values, figures["hello"], strict=True)]
            print(f"ratio {name} / hello-world: {median(ratios):.2f} (median of the rounds' ratios; {setup})")
    if "baseline" in figures:
        ratios = [t / b for t, b in zip(figures["target"], figures["baseline"], strict=True)]
        costs = [t / b for t, b in zip(cpu_us["target"], cpu_us["baseline"], strict=True)]
        print(f"ratio target / baseline: req/s {median(ratios):.3f}, CPU per request {median(costs):.3f} (medians)")


if __name__ == "__main__":
    main()
