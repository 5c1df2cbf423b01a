"""The CPU-cut groups a test can see, read from the cgroup file system."""

from __future__ import annotations

import os
from pathlib import Path

from retrystorm.chaos.cgroups import GROUP_PREFIX, CgroupUnavailableError, locate


def throttle_groups() -> set[Path]:
    """The ``retrystorm-throttle-*`` groups beside this process's cgroup (each a cut not yet undone); none without a
    writable cpu controller."""
    try:
        return set(locate(os.getpid()).base().glob(f"{GROUP_PREFIX}*"))
    except (CgroupUnavailableError, OSError):
        return set()
