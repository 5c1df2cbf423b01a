"""Shared fixtures and hypothesis profiles."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

# "ci" (the default, and the test command's): the same examples on every run, so a landing
# never depends on luck; "explore": fresh random examples each run, to look for new failures
# (HYPOTHESIS_PROFILE=explore .venv/bin/pytest ...); "dev": fewer, for quick local runs.
settings.register_profile(
    "ci", max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("explore", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=60, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def victim() -> Iterator[subprocess.Popen[bytes]]:
    """A real process that would run for a minute; resumed and killed by pid at the end."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield process
    if process.poll() is None:
        os.kill(process.pid, signal.SIGCONT)
        process.kill()
        process.wait(timeout=10)
