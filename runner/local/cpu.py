"""How busy local processes are: each one's share of a core between two readings, from /proc (psutil).

``share = (user + system CPU seconds since the last reading) / (wall seconds since it)``:
1.0 is one full core. A Locust process runs one event loop, so near 1.0 it is behind
whatever its users ask. Read by the runner from outside the process, so a generator too
busy to answer its own ``/metrics`` is still measured.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

import psutil


class CpuMeter:
    """Shares of a core of named processes, between consecutive calls of :meth:`read`."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._last: dict[int, tuple[float, float]] = {}
        self._processes: dict[int, psutil.Process] = {}

    def _cpu_seconds(self, pid: int) -> float | None:
        process = self._processes.get(pid)
        try:
            if process is None:
                process = self._processes[pid] = psutil.Process(pid)
            times = process.cpu_times()
        except psutil.Error:  # gone, or not ours to read
            return None
        return float(times.user + times.system)

    def read(self, pids: Mapping[str, int]) -> dict[str, float] | None:
        """``name -> share of a core`` since the previous call for each pid; ``None`` on the first call."""
        now = self.clock()
        shares: dict[str, float] = {}
        first = not self._last
        for name, pid in pids.items():
            used = self._cpu_seconds(pid)
            if used is None:
                continue
            before = self._last.get(pid)
            self._last[pid] = (used, now)
            if before is not None and now > before[1]:
                shares[name] = max(0.0, (used - before[0]) / (now - before[1]))
        return None if first or not shares else shares
