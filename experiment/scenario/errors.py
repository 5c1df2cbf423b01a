"""The scenario format's error: a file that cannot be found, read, parsed or validated."""

from __future__ import annotations

from retrystorm.errors import UserError


class ScenarioError(UserError):
    """A scenario file that cannot be found, read, parsed or validated."""
