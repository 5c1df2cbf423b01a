"""Shared pieces of the load-generator benchmarks: processes, ports, CPU, metrics, wrk.

Everything runs on 127.0.0.1, bounded in time; every process started here is stopped
here, by its pid.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
LOCUSTFILE = ROOT / "loadgen" / "locustfile.py"
PLAIN_LOCUSTFILE = ROOT / "bench" / "plain_locustfile.py"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of process ``pid`` so far (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGCONT (in case it is frozen), SIGTERM, then SIGKILL after 10 s; by pid."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGCONT)
            os.kill(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


@contextlib.contextmanager
def target(*flags: str) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """Run ``retrystorm target --port 0 FLAGS``; yield the process and its base URL."""
    argv = [str(BIN / "retrystorm"), "target", "--port", "0", "--report-interval", "0", *flags]
    process = subprocess.Popen(argv, cwd=ROOT, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    try:
        assert process.stderr is not None  # noqa: S101 - set by Popen above
        line = process.stderr.readline().decode()
        found = re.search(r"listening on (http://[\d.]+:\d+)", line)
        if not found:
            raise RuntimeError(f"the target did not start: {line}{process.stderr.read().decode()}")
        yield process, found.group(1)
    finally:
        stop(process)


def locust(*args: str, locustfile: Path = LOCUSTFILE) -> subprocess.Popen[bytes]:
    """Start a Locust process (output discarded)."""
    argv = [str(BIN / "locust"), "-f", str(locustfile), *args]
    return subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_rusage_cpu(process: subprocess.Popen[bytes], timeout_s: float) -> float:
    """Wait for ``process`` to exit; its total CPU seconds (user + system)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pid, _status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            process.returncode = 0
            return usage.ru_utime + usage.ru_stime
        time.sleep(0.05)
    stop(process)
    raise RuntimeError(f"Locust (pid {process.pid}) did not finish within {timeout_s:.0f} s")


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """A Prometheus endpoint's samples by (name, sorted labels)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def total(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    """Sum of the samples called ``name`` whose labels include ``labels``."""
    wanted = set(labels.items())
    return sum(
        value for (sample, sample_labels), value in samples.items() if sample == name and wanted <= set(sample_labels)
    )


def ensure_wrk() -> str:
    """The path of ``wrk``, installed from Debian's packages when missing."""
    found = shutil.which("wrk")
    if found:
        return found
    print("installing wrk (apt-get)...", flush=True)
    subprocess.run(["apt-get", "install", "-y", "-q", "wrk"], check=False, capture_output=True)
    found = shutil.which("wrk")
    if found:
        return found
    subprocess.run(["apt-get", "update", "-q"], check=True, capture_output=True)
    subprocess.run(["apt-get", "install", "-y", "-q", "wrk"], check=True, capture_output=True)
    return shutil.which("wrk") or "wrk"


def wrk_requests_per_s(url: str, *, connections: int, duration_s: int) -> float:
    """Requests/s that ``wrk`` (2 threads) reaches on ``url``."""
    argv = [ensure_wrk(), "-t2", f"-c{connections}", f"-d{duration_s}s", url]
    output = subprocess.run(argv, check=True, capture_output=True, text=True, timeout=duration_s + 60).stdout
    found = re.search(r"Requests/sec:\s+([\d.]+)", output)
    if not found:
        raise RuntimeError(f"unexpected wrk output:\n{output}")
    return float(found.group(1))
