"""Real processes to pause: each test gets its own, stopped by pid afterwards."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from chaos.backends.process import process_state_letter


def wait_for(predicate, timeout_s: float = 20.0, what: str = "condition") -> None:
    """Poll until ``predicate()`` is true; fail the test after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    pytest.fail(f"timed out waiting for {what}")


def is_stopped(pid: int) -> bool:
    return process_state_letter(pid) in ("T", "t")


@pytest.fixture
def victim() -> Iterator[subprocess.Popen[bytes]]:
    """A real process that would run for a minute; resumed and killed by pid at the end."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield process
    if process.poll() is None:
        os.kill(process.pid, signal.SIGCONT)
        process.kill()
        process.wait(timeout=10)


@pytest.fixture
def journal_path(tmp_path, monkeypatch):
    path = tmp_path / "journal.jsonl"
    monkeypatch.setenv("RETRYSTORM_CHAOS_JOURNAL", str(path))
    return path
