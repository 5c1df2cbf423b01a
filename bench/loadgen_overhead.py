"""Overhead of the retrying user against a plain FastHttpUser, and wrk as the ceiling.

Both Locust users call ``GET /api`` back to back (think time 0; the retrying user with
``--retry-strategy none``, which never waits) on one target with zero delay
(``retrystorm target --model fixed --base-delay 0``), one Locust process each, in
alternating rounds in the same run. The figure is attempts per CPU-second of the
Locust process (attempts/s per core), with the CPU a Locust process spends starting
and stopping (measured with 0 users) taken out. The retrying user must reach at least
0.9 of the plain user's figure. ``wrk`` on the same endpoint shows the machine's ceiling.

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


def run_once(url: str, kind: tuple, users: int, seconds: int, workdir: Path) -> tuple[int, float]:
    """Attempts made and CPU seconds used by one headless Locust run."""
    _name, flags, locustfile = kind
    prefix = workdir / f"stats-{id(kind)}-{users}-{seconds}"
    args = ["--headless", "--host", url, "-u", str(users), "-r", "1000", "-t", f"{seconds}s"]
    args += ["--only-summary", "--json-file", str(prefix), *flags]
    process = locust(*args, **({"locustfile": locustfile} if locustfile else {}))
    cpu_s = wait_rusage_cpu(process, timeout_s=seconds + 60)
    if users == 0:
        return 0, cpu_s
    stats = json.loads(prefix.with_suffix(".json").read_text())
    attempts = next(entry["num_requests"] for entry in stats if entry["name"] == "/api")
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
        fixed_cpu = {kind[0]: run_once(url, kind, 0, 1, workdir)[1] for kind in (RETRYING, PLAIN)}
        per_cpu: dict[str, list[float]] = {RETRYING[0]: [], PLAIN[0]: []}
        print(f"target {url}, {args.users} users, {args.seconds} s per run, {args.rounds} rounds")
        print(f"{'run':<22} {'attempts/s':>11} {'CPU s':>7} {'attempts/CPU-s':>15}")
        for _ in range(args.rounds):
            for kind in (PLAIN, RETRYING):
                attempts, cpu_s = run_once(url, kind, args.users, args.seconds, workdir)
                busy_s = max(cpu_s - fixed_cpu[kind[0]], 1e-9)
                per_cpu[kind[0]].append(attempts / busy_s)
                print(f"{kind[0]:<22} {attempts / args.seconds:>11.0f} {cpu_s:>7.2f} {attempts / busy_s:>15.0f}")
        ceiling = wrk_requests_per_s(url + "/api", connections=args.users, duration_s=10)
    retrying, plain = statistics.median(per_cpu[RETRYING[0]]), statistics.median(per_cpu[PLAIN[0]])
    print(f"start/stop CPU taken out: {fixed_cpu[RETRYING[0]]:.2f} s (retrying), {fixed_cpu[PLAIN[0]]:.2f} s (plain)")
    print(f"attempts per CPU-second (median): retrying {retrying:.0f}, plain {plain:.0f}")
    print(f"ratio retrying / plain: {retrying / plain:.2f} (target >= 0.9)")
    print(f"wrk, {args.users} connections, 10 s: {ceiling:.0f} requests/s (the machine's ceiling)")


if __name__ == "__main__":
    main()
