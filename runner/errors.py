"""The live runner's errors, shared by both backends (local processes and the compose stack)."""

from __future__ import annotations

from retrystorm.errors import EnvironmentFailureError


class RunFailedError(EnvironmentFailureError):
    """A run could not go on: a process did not start, died, or could not be paused (exit 3)."""


class SteadyStateError(RunFailedError):
    """A strategy's steady window did not show the service working: the run is not valid, and stops before any
    trigger (exit 3)."""
