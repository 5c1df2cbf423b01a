"""Overhead of the retrying user against a plain FastHttpUser, of a weighted request mix, and wrk as the ceiling.

The Locust users call ``GET /api`` back to back (think time 0; the retrying user with
``--retry-strategy none``, which never waits) on one target with zero delay
(``retrystorm target --model fixed --base-delay 0``), one Locust process each, in
alternating rounds in the same run. The figure is attempts per CPU-second of the
Locust process (attempts/s per core), with the CPU a Locust process spends starting
and stopping (measured with 0 users) taken out. The retrying user must reach at least
0.9 of the plain user's figure. The weighted mix user is the retrying user sending a mix of
three requests (``--request``: weights 6, 3 and 1, two of them with headers; every one
``GET /api``, the only route of the target that enters its model), drawn per logical
request: its figure against the single-request retrying user's, measured in the same
rounds, is the cost of the mix. ``wrk`` on the same endpoint shows the machine's ceiling.

Run: ``.venv/bin/python bench/loadgen_overhead.py [--users 100] [--seconds 15] [--rounds 3]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from benchlib import target
from loadgen_common import PLAIN_LOCUSTFILE, locust, wait_rusage_cpu, wrk_requests_per_s

RETRYING = ("retrying user", ("--retry-strategy", "none", "--think-time", "constant:0"), None)
PLAIN = ("plain FastHttpUser", (), PLAIN_LOCUSTFILE)
MIX_REQUESTS = (
    "GET /api weight=6 name=read",
    "GET /api weight=3 name=write header=Content-Type:application/json header=X-Order:1",
    "GET /api weight=1 name=search header=Accept:text/plain",
)
MIXED = (
    "weighted mix user",
    (*RETRYING[1], *(arg for request in MIX_REQUESTS for arg in ("--request", request))),
    None,
)
NAMES = {RETRYING[0]: {"/api"}, PLAIN[0]: {"/api"}, MIXED[0]: {"read", "write", "search"}}


def run_once(url: str, kind: tuple, users: int, seconds: int, workdir: Path) -> tuple[int, float]:
    """Attempts made and CPU seconds used by one headless Locust run."""
    name, flags, locustfile = kind
    prefix = workdir / f"stats-{id(kind)}-{users}-{seconds}"
    args = ["--headless", "--host", url, "-u", str(users), "-r", "1000", "-t", f"{seconds}s"]
    args += ["--only-summary", "--json-file", str(prefix), *flags]
    process = locust(*args, **({"locustfile": locustfile} if locustfile else {}))
    cpu_s = wait_rusage_cpu(process, timeout_s=seconds + 60)
    if users == 0:
        return 0, cpu_s
    stats = json.loads(prefix.with_suffix(".json").read_text())
    attempts = sum(entry["num_requests"] for entry in stats if entry["name"] in NAMES[name])
    return attempts, cpu_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, target("--model", "fixed", "--base-delay", "0") as server:
        url = server.url("")
        workdir = Path(tmp)
        fixed_cpu = {kind[0]: run_once(url, kind, 0, 1, workdir)[1] for kind in (RETRYING, PLAIN, MIXED)}
        per_cpu: dict[str, list[float]] = {RETRYING[0]: [], PLAIN[0]: [], MIXED[0]: []}
        print(f"target {url}, {args.users} users, {args.seconds} s per run, {args.rounds} rounds")
        print(f"{'run':<22} {'attempts/s':>11} {'CPU s':>7} {'attempts/CPU-s':>15}")
        for _ in range(args.rounds):
            for kind in (PLAIN, RETRYING, MIXED):
                attempts, cpu_s = run_once(url, kind, args.users, args.seconds, workdir)
                busy_s = max(cpu_s - fixed_cpu[kind[0]], 1e-9)
                per_cpu[kind[0]].append(attempts / busy_s)
                print(f"{kind[0]:<22} {attempts / args.seconds:>11.0f} {cpu_s:>7.2f} {attempts / busy_s:>15.0f}")
        ceiling = wrk_requests_per_s(url + "/api", connections=args.users, duration_s=10)
    retrying, plain = statistics.median(per_cpu[RETRYING[0]]), statistics.median(per_cpu[PLAIN[0]])
    mixed = statistics.median(per_cpu[MIXED[0]])
    taken = ", ".join(f"{fixed_cpu[kind[0]]:.2f} s ({kind[0]})" for kind in (RETRYING, PLAIN, MIXED))
    print(f"start/stop CPU taken out: {taken}")
    print(f"attempts per CPU-second (median): retrying {retrying:.0f}, plain {plain:.0f}, weighted mix {mixed:.0f}")
    print(f"ratio retrying / plain: {retrying / plain:.2f} (target >= 0.9)")
    print(f"ratio weighted mix / retrying (single request): {mixed / retrying:.2f}")
    print(f"wrk, {args.users} connections, 10 s: {ceiling:.0f} requests/s (the machine's ceiling)")


if __name__ == "__main__":
    main()
