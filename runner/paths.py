"""Names on disk: a strategy label as a file name, and the default run folder."""

from __future__ import annotations

import datetime
import re
from pathlib import Path


def slug(label: str) -> str:
    """A file-name-safe form of a strategy label: ``fixed-100ms``."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-") or "strategy"


def default_folder(scenario_name: str, now: datetime.datetime | None = None) -> Path:
    """``runs/<scenario>-<UTC timestamp>`` under the current directory."""
    now = now or datetime.datetime.now(datetime.UTC)
    return Path("runs") / f"{slug(scenario_name)}-{now.strftime('%Y%m%dT%H%M%SZ')}"
