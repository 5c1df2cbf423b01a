"""Shared fixtures, hypothesis profiles, and the test tiers (their hooks are in ``tests/support/tiers.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from tests.support.processes import stop
from tests.support.tiers import (  # the tiers' hooks: which tests are live, and none other starts a process
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_runtest_makereport,
    pytest_runtest_protocol,
)

# Tests never depend on the terminal they run in: a test that wants a width sets COLUMNS itself. (GNU readline,
# which pytest's debugger imports, exports COLUMNS=80 and LINES=24 into the process's environment, so every child
# of pytest, xdist's workers included, would see a terminal 80 columns wide.)
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)

# "ci" (the default, and the full test command's): the same examples on every run, so a landing
# never depends on luck; "fast" (scripts/test --fast): the same, a quarter as many; "explore": fresh random
# examples each run, to look for new failures (HYPOTHESIS_PROFILE=explore .venv/bin/pytest ...); "dev": fewer.
settings.register_profile(
    "ci", max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "fast", max_examples=50, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("explore", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=60, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def victim() -> Iterator[subprocess.Popen[bytes]]:
    """A real process that would run for a minute; resumed and killed by pid at the end."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield process
    stop(process, grace_s=10)


__all__ = ["pytest_collection_modifyitems", "pytest_configure", "pytest_runtest_makereport", "pytest_runtest_protocol"]
