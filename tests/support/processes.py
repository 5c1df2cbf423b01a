"""Child processes of tests and benchmarks: started with a log, always stopped by their pid.

Stopping is one rule everywhere: ``SIGCONT`` first (a frozen process cannot act on ``SIGTERM``), then
``SIGTERM``, then ``SIGKILL`` if it has not exited after ``grace_s``; always reaped, so no zombie is left.
Nothing is ever stopped by name.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def stop(process: subprocess.Popen[bytes] | subprocess.Popen[str], grace_s: float = 10.0) -> int:
    """Stop ``process`` (``SIGCONT``, ``SIGTERM``, ``SIGKILL`` after ``grace_s``) and reap it; its exit code."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGCONT)
            os.kill(process.pid, signal.SIGTERM)
    try:
        return process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGKILL)
        return process.wait(timeout=grace_s)


def kill_group(process: subprocess.Popen[bytes] | subprocess.Popen[str], timeout_s: float = 30.0) -> None:
    """``SIGKILL`` ``process`` and everything in its process group (it was started in a session of its own)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=timeout_s)


class Processes:
    """Processes started for one test (or module); :meth:`stop_all` stops them all, latest first, by pid.

    Each writes stdout and stderr to its own log in ``log_dir`` (``NAME-N.log``), which a test reads to find a
    port a program printed or to show why it failed.
    """

    def __init__(self, log_dir: Path, cwd: Path = ROOT) -> None:
        self.log_dir = log_dir
        self.cwd = cwd
        self.started: list[subprocess.Popen[bytes]] = []

    def start(
        self, name: str, argv: Sequence[str], env: Mapping[str, str] | None = None
    ) -> tuple[subprocess.Popen[bytes], Path]:
        """Start ``argv`` (this environment plus ``env``); the process and its log."""
        log = self.log_dir / f"{name}-{len(self.started)}.log"
        with log.open("wb") as sink:
            environment = {**os.environ, **(env or {})}
            process = subprocess.Popen(list(argv), cwd=self.cwd, stdout=sink, stderr=subprocess.STDOUT, env=environment)
        self.started.append(process)
        return process, log

    def stop_all(self) -> None:
        """Stop every process started here: signal them all first, then wait for each (so they stop together)."""
        for process in reversed(self.started):
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGCONT)
                    os.kill(process.pid, signal.SIGTERM)
        for process in self.started:
            stop(process)


@contextlib.contextmanager
def started(argv: Sequence[str], **popen: object) -> Iterator[subprocess.Popen[bytes]]:
    """``subprocess.Popen(argv, **popen)`` for the length of a ``with`` block, stopped (:func:`stop`) at its end."""
    process: subprocess.Popen[bytes] = subprocess.Popen(list(argv), **popen)  # type: ignore[call-overload]
    try:
        yield process
    finally:
        stop(process)
