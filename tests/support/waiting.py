"""Waiting in tests and benchmarks: :mod:`retrystorm.polling` with the tests' conventions.

A test waits for something it cannot be told about (a child's log line, a server that answers, a process that
stopped). ``check`` is called at once and then every ``every_s``; its first true answer is returned. Errors listed
in ``ignore`` (a server that does not listen yet: ``OSError``) count as "not yet". After ``timeout_s`` the wait
raises :class:`WaitTimeoutError` naming ``what`` it waited for. Deadlines are generous: they only decide how long a
broken test takes to fail, never whether a working one passes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from retrystorm.polling import poll_until, poll_until_sync

T = TypeVar("T")

#: The pause between two checks when the caller gives none.
EVERY_S = 0.02


class WaitTimeoutError(AssertionError):
    """A wait of a test ran out of time (an ``AssertionError``: pytest reports it as the test's failure)."""


def _timed_out(what: str, timeout_s: float) -> Callable[[], Exception]:
    return lambda: WaitTimeoutError(f"timed out after {timeout_s:g} s waiting for {what}")


def wait_until(
    check: Callable[[], T],
    *,
    timeout_s: float = 20.0,
    what: str = "a condition",
    every_s: float = EVERY_S,
    ignore: tuple[type[BaseException], ...] = (),
) -> T:
    """``check()``'s first true answer; :class:`WaitTimeoutError` after ``timeout_s``."""

    def attempt() -> T | None:
        try:
            found = check()
        except ignore:
            return None
        return found or None

    return poll_until_sync(attempt, timeout_s=timeout_s, every_s=every_s, on_timeout=_timed_out(what, timeout_s))


async def wait_until_async(
    check: Callable[[], T | Awaitable[T]],
    *,
    timeout_s: float = 20.0,
    what: str = "a condition",
    every_s: float = EVERY_S,
    ignore: tuple[type[BaseException], ...] = (),
) -> T:
    """:func:`wait_until` inside an event loop: ``check`` may be a plain function or a coroutine function."""

    async def attempt() -> T | None:
        try:
            found = check()
            if isinstance(found, Awaitable):
                found = await found
        except ignore:
            return None
        return found or None

    return await poll_until(attempt, timeout_s=timeout_s, every_s=every_s, on_timeout=_timed_out(what, timeout_s))
