"""gRPC costs, side by side in one run: the gRPC user against the HTTP user, the gRPC target against bare grpcio.

1. **Users**: calls per CPU-second of one Locust process, back to back (think time 0, no retries:
   ``--retry-strategy none``), against one target with zero delay serving HTTP and gRPC at once
   (``retrystorm target --model fixed --base-delay 0 --grpc-port 0``): the HTTP retrying user, the
   gRPC user emulated (grpcio's retries off, the strategy's loop) and real (grpcio's retries from
   A6's example policy). The CPU a Locust process spends starting and stopping (0 users) is taken out.
2. **Servers**: calls per CPU-second of the server process under the same closed-loop grpc.aio load
   (``bench/grpc_load.py``): the target's gRPC front (model, fault rule, metrics) against a bare
   grpc.aio echo server (``bench/grpc_bare_server.py``).

Every figure is a median over alternating rounds, printed with the ratio to its baseline.
Run: ``.venv/bin/python bench/grpc_costs.py [--users 50] [--seconds 10] [--rounds 3]``
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import cpu_seconds
from loadgen_common import LOCUSTFILE, ROOT, locust, stop, wait_rusage_cpu

GRPC_LOCUSTFILE = ROOT / "loadgen" / "grpc_locustfile.py"
HERE = Path(__file__).resolve().parent
NONE = ("--retry-strategy", "none", "--think-time", "constant:0")
KINDS = {
    "HTTP user": (LOCUSTFILE, NONE, "/api"),
    "gRPC user, emulated": (GRPC_LOCUSTFILE, (*NONE, "--grpc-mode", "emulated"), "/retrystorm.target.v1.Target/Echo"),
    "gRPC user, real": (
        GRPC_LOCUSTFILE,
        ("--retry-strategy", "grpc-retry", "--think-time", "constant:0", "--grpc-mode", "real"),
        "/retrystorm.target.v1.Target/Echo (logical)",
    ),
}


def start_target() -> tuple[subprocess.Popen[str], str, str]:
    argv = [sys.executable, "-m", "retrystorm", "target", "--port", "0", "--grpc-port", "0", "--report-interval", "0"]
    argv += ["--model", "fixed", "--base-delay", "0"]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    line = process.stderr.readline() if process.stderr else ""
    found = re.search(r"listening on (http://127\.0\.0\.1:\d+) and gRPC on (127\.0\.0\.1:\d+)", line)
    if not found:
        raise SystemExit(f"the target did not start: {line!r}")
    return process, found.group(1), found.group(2)


def start_bare() -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, str(HERE / "grpc_bare_server.py")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = process.stderr.readline() if process.stderr else ""
    found = re.search(r"gRPC on (127\.0\.0\.1:\d+)", line)
    if not found:
        raise SystemExit(f"the bare server did not start: {line!r}")
    return process, found.group(1)


def user_run(kind: str, http: str, grpc: str, users: int, seconds: int, *, workdir: Path) -> tuple[int, float]:
    """Calls made and CPU seconds used by one headless Locust run of ``kind``."""
    locustfile, flags, name = KINDS[kind]
    prefix = workdir / f"stats-{abs(hash(kind))}-{users}"
    host = http if locustfile == LOCUSTFILE else grpc
    args = ["--headless", "--host", host, "-u", str(users), "-r", "1000", "-t", f"{seconds}s"]
    process = locust(*args, "--only-summary", "--json-file", str(prefix), *flags, locustfile=locustfile)
    cpu_s = wait_rusage_cpu(process, timeout_s=seconds + 90)
    if users == 0:
        return 0, cpu_s
    stats = json.loads(prefix.with_suffix(".json").read_text())
    return sum(entry["num_requests"] for entry in stats if entry["name"] == name), cpu_s


def server_run(pid: int, address: str, concurrency: int, seconds: int) -> float:
    """Calls per CPU-second of server ``pid`` under the closed-loop load."""
    before = cpu_seconds(pid)
    done = subprocess.run(
        [sys.executable, str(HERE / "grpc_load.py"), address, str(concurrency), str(seconds)],
        capture_output=True, text=True, check=True, timeout=seconds + 60,
    )  # fmt: skip
    return int(done.stdout.strip()) / max(cpu_seconds(pid) - before, 1e-9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    target, http, grpc = start_target()
    bare, bare_address = start_bare()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            workdir = Path(tmp)
            fixed = {kind: user_run(kind, http, grpc, 0, 1, workdir=workdir)[1] for kind in KINDS}
            per_cpu: dict[str, list[float]] = {kind: [] for kind in KINDS}
            servers: dict[str, list[float]] = {"target's gRPC front": [], "bare grpc.aio": []}
            print(f"{args.users} users, {args.seconds} s per run, {args.rounds} rounds")
            for _ in range(args.rounds):
                for kind in KINDS:
                    calls, cpu_s = user_run(kind, http, grpc, args.users, args.seconds, workdir=workdir)
                    per_cpu[kind].append(calls / max(cpu_s - fixed[kind], 1e-9))
                    print(f"  {kind:<22} {calls / args.seconds:>8.0f} calls/s {per_cpu[kind][-1]:>8.0f} calls/CPU-s")
                servers["target's gRPC front"].append(server_run(target.pid, grpc, args.users, args.seconds))
                servers["bare grpc.aio"].append(server_run(bare.pid, bare_address, args.users, args.seconds))
                time.sleep(0.5)
    finally:
        stop(bare)
        stop(target)
    http_user = statistics.median(per_cpu["HTTP user"])
    print("calls per CPU-second of the Locust process (median), and the ratio to the HTTP user:")
    for kind, values in per_cpu.items():
        print(f"  {kind:<22} {statistics.median(values):>8.0f}  {statistics.median(values) / http_user:.2f}")
    bare_calls = statistics.median(servers["bare grpc.aio"])
    print("calls per CPU-second of the server process (median), and the ratio to bare grpc.aio:")
    for name, values in servers.items():
        print(f"  {name:<22} {statistics.median(values):>8.0f}  {statistics.median(values) / bare_calls:.2f}")


if __name__ == "__main__":
    main()
