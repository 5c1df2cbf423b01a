"""The cost of the load generator's own OpenTelemetry export: attempts per CPU-second with it off and on.

The retrying user calls ``GET /api`` back to back (think time 0, ``--retry-strategy none``) on one target with zero
delay (``retrystorm target --model fixed --base-delay 0``), one headless Locust process per run, in alternating
rounds of the same run: export off, then on (``--otel-endpoint`` to a real OTLP/gRPC receiver in this process,
``tests/support/otlp.py``, which decodes every export). Each run is measured over a window after its ramp, as
``loadgen_seed_load.py`` measures: attempts from the process's ``/metrics`` counter, CPU from ``/proc/PID/stat``, so
start-up and shutdown are left out. The figure is attempts per CPU-second of the Locust process; the ratio on / off
is the share of the generator's capacity the export leaves. With the export on, every attempt records one more
counter and one histogram, every logical request one more counter and two histograms, and the SDK's reader
collects and sends them every second from its own thread.

Run: ``.venv/bin/python bench/otel_cost.py [--users 50] [--warmup 5] [--window 15] [--rounds 3]``
"""

from __future__ import annotations

import argparse
import os
import statistics

from benchlib import target
from loadgen_seed_load import measure

from tests.support.otlp import GrpcReceiver  # importable once benchlib has put the checkout on the path

FLAGS = ("--retry-strategy", "none", "--think-time", "constant:0")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds before the window (ramp)")
    parser.add_argument("--window", type=float, default=15.0, help="seconds measured per run")
    parser.add_argument("--rounds", type=int, default=3, help="pairs of runs, off then on")
    args = parser.parse_args()
    os.environ.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)  # off means off: only the flag turns it on
    receiver = GrpcReceiver()
    per_cpu_s: dict[str, list[float]] = {"off": [], "on": []}
    try:
        with target("--model", "fixed", "--base-delay", "0") as server:
            url = server.url("")
            print(f"target {url}, {args.users} users, {args.window:g} s window per run, {args.rounds} rounds")
            print(f"{'export':<8} {'attempts/s':>11} {'CPU %':>7} {'attempts/CPU-s':>15}")
            for _ in range(args.rounds):
                for mode, flags in (("off", FLAGS), ("on", (*FLAGS, "--otel-endpoint", receiver.endpoint))):
                    rates = measure(url, args.users, args.warmup, args.window, *flags)
                    per_cpu_s[mode].append(rates["attempts/s"] / (rates["CPU %"] / 100))
                    print(f"{mode:<8} {rates['attempts/s']:>11.0f} {rates['CPU %']:>7.1f} {per_cpu_s[mode][-1]:>15.0f}")
    finally:
        receiver.stop()
    exported = sum(receiver.received.last_values("retrystorm.client.attempts").values())
    if not exported:
        raise SystemExit("the receiver got no retrystorm.client.attempts: the 'on' runs did not export")
    off, on = statistics.median(per_cpu_s["off"]), statistics.median(per_cpu_s["on"])
    print(f"exports received: {len(receiver.received.metrics)}; last run's exported attempts: {exported:.0f}")
    print(f"attempts per CPU-second (median): off {off:.0f}, on {on:.0f}")
    print(f"ratio on / off: {on / off:.3f}")


if __name__ == "__main__":
    main()
