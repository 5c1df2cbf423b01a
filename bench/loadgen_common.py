"""Shared pieces of the load-generator benchmarks: Locust processes, ports, metrics, wrk.

Builds on :mod:`benchlib` (the target, ``wrk``, ``/proc`` readings). Everything runs on
127.0.0.1, bounded in time; every process started here is stopped here, by its pid.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from benchlib import ensure_wrk, free_port, stop, wait_until
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
LOCUSTFILE = ROOT / "loadgen" / "locustfile.py"
PLAIN_LOCUSTFILE = ROOT / "bench" / "plain_locustfile.py"


def locust(*args: str, locustfile: Path = LOCUSTFILE) -> subprocess.Popen[bytes]:
    """Start a Locust process (output discarded)."""
    argv = [str(BIN / "locust"), "-f", str(locustfile), *args]
    return subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_workers(master_url: str, workers: int, timeout_s: float = 60) -> None:
    """Wait until the Locust master at ``master_url`` counts ``workers`` workers (``GET /worker-count``)."""

    def connected() -> bool:
        with urllib.request.urlopen(master_url + "/worker-count", timeout=5) as response:  # noqa: S310
            return bool(json.loads(response.read())["worker_count"] == workers)

    # the web UI may not listen yet: OSError and a half-written answer count as "not yet"
    wait_until(connected, timeout_s=timeout_s, what=f"{workers} workers to connect to {master_url}", every_s=0.2,
               ignore=(OSError, ValueError))  # fmt: skip


@contextlib.contextmanager
def local_cluster(
    host: str, workers: int, *, locustfile: Path = LOCUSTFILE, worker_metrics: bool = False
) -> Iterator[tuple[int, list[int]]]:
    """A local Locust master and ``workers`` workers on 127.0.0.1, all stopped by pid at the end.

    Yields the master's web port and, with ``worker_metrics``, each worker's own
    ``/metrics`` port (``--metrics-port``; otherwise none).
    """
    web, bind = free_port(), free_port()
    started = [
        locust("--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(bind), "--host", host,
               "--web-host", "127.0.0.1", "--web-port", str(web), locustfile=locustfile)
    ]  # fmt: skip
    ports = [free_port() for _ in range(workers)] if worker_metrics else []
    try:
        for index in range(workers):
            metrics = ["--metrics-port", str(ports[index])] if worker_metrics else []
            started.append(
                locust("--worker", "--master-host", "127.0.0.1", "--master-port", str(bind), *metrics,
                       locustfile=locustfile)
            )  # fmt: skip
        wait_workers(f"http://127.0.0.1:{web}", workers)
        yield web, ports
    finally:
        for process in reversed(started):
            stop(process)


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


def scrape_labelled(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
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


def wrk_requests_per_s(url: str, *, connections: int, duration_s: int) -> float:
    """Requests/s that ``wrk`` (2 threads) reaches on ``url``."""
    argv = [ensure_wrk(), "-t2", f"-c{connections}", f"-d{duration_s}s", url]
    output = subprocess.run(argv, check=True, capture_output=True, text=True, timeout=duration_s + 60).stdout
    found = re.search(r"Requests/sec:\s+([\d.]+)", output)
    if not found:
        raise RuntimeError(f"unexpected wrk output:\n{output}")
    return float(found.group(1))


#: The benches import the shared helpers from here too.
__all__ = [
    "free_port", "local_cluster", "locust", "scrape_labelled", "stop", "total", "wait_rusage_cpu", "wait_workers",
    "wrk_requests_per_s",
]  # fmt: skip
