"""Shared fixtures, hypothesis profiles, and the test tiers (their hooks are in ``tests/support/tiers.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from tests.support.cgroups import throttle_groups
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


@pytest.fixture(autouse=True)
def _no_cut_left_behind(request: pytest.FixtureRequest) -> Iterator[None]:
    """A live test that leaves a CPU cut's group behind fails, naming it (a cut is undone on every exit path).

    On when ``RETRYSTORM_CHECK_LEFTOVERS=1`` (the full suite's live phase sets it: one test at a time, so a group
    that appears during a test is that test's); off elsewhere, where other runs on the machine may cut CPUs too.
    """
    if request.node.get_closest_marker("live") is None or os.environ.get("RETRYSTORM_CHECK_LEFTOVERS") != "1":
        yield
        return
    before = throttle_groups()
    yield
    left = sorted(group.name for group in throttle_groups() - before)
    assert not left, f"the test left CPU-cut groups behind: {left}"
