"""Wait until something holds, checking it every so often, up to a deadline.

One rule for every wait of the project (a child's log line, a master's users, a target's
health, a process's new state): call ``check`` at once and then every ``every_s``; return
its first answer that is not ``None``; when ``timeout_s`` has passed without one, raise
what ``on_timeout()`` returns. ``check`` may itself raise to end the wait early (a child
that died). The deadline is on the monotonic clock; a last check is made at the deadline,
so a wait never fails for a condition that holds when its time is up.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def poll_until(
    check: Callable[[], Awaitable[T | None]],
    *,
    timeout_s: float,
    every_s: float,
    on_timeout: Callable[[], Exception],
) -> T:
    """``check()``'s first answer that is not ``None``; ``on_timeout()`` raised after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = await check()
        if found is not None:
            return found
        left = deadline - time.monotonic()
        if left <= 0:
            raise on_timeout()
        await asyncio.sleep(min(every_s, left))


def poll_until_sync(
    check: Callable[[], T | None], *, timeout_s: float, every_s: float, on_timeout: Callable[[], Exception]
) -> T:
    """:func:`poll_until` for blocking code (a backend called in a worker thread)."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = check()
        if found is not None:
            return found
        left = deadline - time.monotonic()
        if left <= 0:
            raise on_timeout()
        time.sleep(min(every_s, left))
