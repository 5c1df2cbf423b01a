"""The seed outage against the built-in target's gRPC front: grpcio's own retries beside their emulation.

For each mode and policy, a fresh ``retrystorm target --grpc-port`` with the seed's model (limit 30,
x1.05 per 15, base 100 ms, every 50 ms), one Locust process of 300 gRPC users thinking exp(3 s)
(about 100 calls/s) with a 2 s deadline, frozen with SIGSTOP at 20 s for 11 s, run to 60 s. Read
every second from the target: in flight, and attempts arrived by number. Printed per run: logical
calls and their outcomes (Locust's totals), attempts that reached the target and the amplification
(attempts / calls), the largest in-flight count after the resume, and the seconds from the resume
until in flight is back under 1.5 x its largest steady reading (10-20 s) and stays there 5 s.

Run: ``cd bench && ../.venv/bin/python grpc_outage.py`` (about 5 minutes).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from loadgen_common import ROOT, locust, stop

GRPC_LOCUSTFILE = ROOT / "loadgen" / "grpc_locustfile.py"
MODEL = "exponential:base_delay=100ms,limit=30,factor=1.05,k=15,tick=50ms"
RUNS = (
    ("real", "grpc-retry"),
    ("real", "grpc-retry:max_tokens=10,token_ratio=0.1"),
    ("emulated", "grpc-retry"),
    ("emulated", "grpc-retry:max_tokens=10,token_ratio=0.1"),
)
PAUSE_AT_S, PAUSE_FOR_S, DURATION_S = 20, 11, 60


def start_target() -> tuple[subprocess.Popen[str], str, str]:
    argv = [sys.executable, "-m", "retrystorm", "target", "--port", "0", "--grpc-port", "0", "--report-interval", "0"]
    process = subprocess.Popen([*argv, "--model", MODEL], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    line = process.stderr.readline() if process.stderr else ""
    found = re.search(r"listening on (http://127\.0\.0\.1:\d+) and gRPC on (127\.0\.0\.1:\d+)", line)
    if not found:
        raise SystemExit(f"the target did not start: {line!r}")
    return process, found.group(1), found.group(2)


def read(url: str) -> tuple[float, float]:
    """In flight and attempts arrived so far."""
    with urllib.request.urlopen(url + "/metrics", timeout=5) as response:  # noqa: S310 - loopback
        text = response.read().decode()
    in_flight = attempts = 0.0
    for line in text.splitlines():
        if line.startswith("retrystorm_target_in_flight_requests "):
            in_flight = float(line.split()[-1])
        elif line.startswith("retrystorm_target_grpc_attempts_total{"):
            attempts += float(line.split()[-1])
    return in_flight, attempts


def one_run(mode: str, strategy: str, workdir: Path) -> dict[str, float | str]:
    target, url, grpc = start_target()
    prefix = workdir / f"stats-{mode}-{abs(hash(strategy))}"
    args = ["--headless", "--host", grpc, "-u", "300", "-r", "300", "-t", f"{DURATION_S}s", "--only-summary"]
    args += ["--json-file", str(prefix), "--think-time", "exponential:3s", "--attempt-timeout", "2s"]
    process = locust(*args, "--grpc-mode", mode, "--retry-strategy", strategy, locustfile=GRPC_LOCUSTFILE)
    samples: list[tuple[float, float]] = []
    start = time.monotonic()
    try:
        for second in range(DURATION_S + 2):
            time.sleep(max(0.0, start + second - time.monotonic()))
            if second == PAUSE_AT_S:
                os.kill(target.pid, signal.SIGSTOP)
            if second == PAUSE_AT_S + PAUSE_FOR_S:
                os.kill(target.pid, signal.SIGCONT)
            if PAUSE_AT_S <= second < PAUSE_AT_S + PAUSE_FOR_S:
                samples.append(samples[-1] if samples else (0.0, 0.0))
            else:
                samples.append(read(url))
        process.wait(timeout=120)
    finally:
        os.kill(target.pid, signal.SIGCONT)
        stop(process)
        stop(target)
    stats = json.loads(prefix.with_suffix(".json").read_text())
    logical = next(entry for entry in stats if entry["name"].endswith("(logical)"))
    steady = max(in_flight for in_flight, _ in samples[10:PAUSE_AT_S])
    resume = PAUSE_AT_S + PAUSE_FOR_S
    after = [in_flight for in_flight, _ in samples[resume:]]
    back = next((n for n in range(len(after) - 5) if all(v <= 1.5 * steady + 1 for v in after[n : n + 5])), None)
    return {
        "mode": mode,
        "strategy": strategy,
        "calls": logical["num_requests"],
        "failed": logical["num_failures"],
        "attempts": samples[-1][1],
        "amplification": samples[-1][1] / max(logical["num_requests"], 1),
        "peak_after_resume": max(after),
        "server_back_s": "never" if back is None else back,
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        results = [one_run(mode, strategy, Path(tmp)) for mode, strategy in RUNS]
    print(f"seed outage: {MODEL}; 300 users, exp(3 s), 2 s deadline; SIGSTOP at {PAUSE_AT_S} s for {PAUSE_FOR_S} s")
    print(f"{'mode':<9} {'strategy':<42} {'calls':>6} {'failed':>6} {'attempts':>8} {'ampl.':>6} {'peak':>6} back")
    for row in results:
        print(
            f"{row['mode']:<9} {row['strategy']:<42} {row['calls']:>6} {row['failed']:>6} {row['attempts']:>8.0f} "
            f"{row['amplification']:>6.2f} {row['peak_after_resume']:>6.0f} {row['server_back_s']}"
        )


if __name__ == "__main__":
    main()
