"""Shared fixtures and hypothesis profiles."""

from __future__ import annotations

import os

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
