"""Throughput of ``retrystorm target --model fixed --base-delay 0`` against the floor of
its HTTP stack (``bench/hello.py``), measured by wrk on loopback, side by side.

Rounds alternate target and hello-world so both see the same machine load; the figure
is the ratio of the medians. Run: ``.venv/bin/python bench/throughput.py``.
"""

import argparse
import re
import subprocess

from benchlib import ensure_wrk, hello, median, raise_open_files_limit, target


def requests_per_second(wrk: str, url: str, seconds: int, connections: int) -> float:
    out = subprocess.run(
        [wrk, "-t1", f"-c{connections}", f"-d{seconds}s", url], capture_output=True, text=True, check=True
    ).stdout
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if not match:
        raise SystemExit(f"unexpected wrk output:\n{out}")
    if "Non-2xx" in out or "Socket errors" in out:
        print(f"  note: wrk reported errors:\n{out}")
    return float(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=50)
    args = parser.parse_args()
    raise_open_files_limit()
    wrk = ensure_wrk()
    with target("--model", "fixed", "--base-delay", "0") as service, hello() as floor:
        for server in (service, floor):  # warm up
            requests_per_second(wrk, server.url(), 1, args.connections)
        figures: dict[str, list[float]] = {"target": [], "hello": []}
        for round_ in range(args.rounds):
            for name, server in (("target", service), ("hello", floor)):
                figures[name].append(requests_per_second(wrk, server.url(), args.seconds, args.connections))
            last = {name: values[-1] for name, values in figures.items()}
            print(f"round {round_ + 1}: target {last['target']:,.0f} req/s, hello {last['hello']:,.0f} req/s")
    target_rps, hello_rps = median(figures["target"]), median(figures["hello"])
    print(f"median: target {target_rps:,.0f} req/s, hello-world {hello_rps:,.0f} req/s")
    setup = f"wrk -t1 -c{args.connections}, {args.seconds}s x {args.rounds} rounds"
    print(f"ratio target / hello-world: {target_rps / hello_rps:.2f}  ({setup})")


if __name__ == "__main__":
    main()
