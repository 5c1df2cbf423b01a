"""Shared helpers of the target benchmarks: processes, wrk, /proc readings.

Benchmarks print figures; they never assert. Everything runs on 127.0.0.1, is bounded
in time, and stops the processes it started by their pid.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The benches share the tests' helpers (tests/support: ports, waiting, processes): the repository on the path.
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))
from tests.support.ports import free_port  # noqa: E402 - after the path is set
from tests.support.processes import stop  # noqa: E402
from tests.support.waiting import wait_until  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def raise_open_files_limit() -> int:
    """Soft limit on open files up to the hard limit; returns the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def ensure_wrk() -> str:
    """The path of ``wrk``, installed from Debian's packages when missing."""
    found = shutil.which("wrk")
    if found:
        return found
    print("wrk not found: installing it with apt-get", file=sys.stderr)
    apt = ["apt-get"] if os.geteuid() == 0 else ["sudo", "apt-get"]
    subprocess.run([*apt, "update", "-qq"], check=True)
    subprocess.run([*apt, "install", "-y", "-qq", "wrk"], check=True)
    found = shutil.which("wrk")
    if not found:
        raise SystemExit("wrk is still missing after apt-get install")
    return found


class Server:
    """A server process that prints ``listening on http://127.0.0.1:PORT`` on stderr."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
        environment = {**os.environ, **env} if env else None
        self.proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=environment, cwd=cwd
        )
        line = self.proc.stderr.readline() if self.proc.stderr else ""
        match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if not match:
            self.stop()
            raise SystemExit(f"server did not start: {line!r}")
        self.port = int(match.group(1))
        self.pid = self.proc.pid

    def url(self, path: str = "/api") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def stop(self) -> None:
        stop(self.proc, grace_s=15)

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def target(*args: str, source: Path | None = None) -> Server:
    """``retrystorm target`` on a free port, without the periodic report; ``source``: run the
    code of another checkout (a folder from ``git archive COMMIT | tar -x -C DIR``) instead."""
    env = {"PYTHONPATH": str(source)} if source is not None else None
    argv = [sys.executable, "-m", "retrystorm", "target", "--port", "0", "--report-interval", "0", *args]
    # -m puts the working folder first on the import path: run in the other tree, or this one's code runs
    return Server(argv, env, cwd=source)


def hello() -> Server:
    """The minimal hello-world on the same HTTP stack (asyncio + httptools)."""
    return Server([sys.executable, str(HERE / "hello.py")])


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of ``pid``, from ``/proc/PID/stat``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def rss_bytes(pid: int) -> int:
    """Resident set size of ``pid``."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def scrape(port: int) -> dict[str, float]:
    """Unlabelled samples and ``name{labels}`` samples of a target's /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as response:
        text = response.read().decode()
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    return samples


def cpu_share(pid: int, seconds: float) -> float:
    """Fraction of one core ``pid`` used over the next ``seconds``."""
    start_cpu, start = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return (cpu_seconds(pid) - start_cpu) / (time.monotonic() - start)


def median(values: list[float]) -> float:
    return statistics.median(values)


#: What the benches take from here (the shared helpers of tests/support among them).
__all__ = [
    "HERE", "Server", "cpu_seconds", "cpu_share", "ensure_wrk", "free_port", "hello", "median",
    "raise_open_files_limit", "rss_bytes", "scrape", "stop", "target", "wait_until",
]  # fmt: skip
