"""A sliding-window counter in virtual time, as Finagle's ``WindowedAdder``."""

from __future__ import annotations

import math


class SlidingWindow:
    """Sum of what was added during the last ``window_s`` seconds.

    The window is cut into ``slices`` equal slices; a slice expires as a whole, so the
    sum covers between ``window_s * (1 - 1/slices)`` and ``window_s`` seconds. Adding
    and reading are O(1) amortised; time must not go backwards.
    """

    __slots__ = ("_counts", "_current", "_slice_s", "_total")

    def __init__(self, window_s: float, slices: int = 10) -> None:
        if window_s <= 0 or slices < 1:
            raise ValueError("window_s must be > 0 and slices >= 1")
        self._counts = [0.0] * slices
        self._slice_s = window_s / slices
        self._current: int | None = None
        self._total = 0.0

    def add(self, now_s: float, amount: float = 1.0) -> None:
        """Add ``amount`` at time ``now_s``."""
        self._advance(now_s)
        self._counts[self._index(now_s)] += amount
        self._total += amount

    def total(self, now_s: float) -> float:
        """The sum over the window that ends at ``now_s``."""
        self._advance(now_s)
        return self._total

    def _index(self, now_s: float) -> int:
        return math.floor(now_s / self._slice_s) % len(self._counts)

    def _advance(self, now_s: float) -> None:
        slot = math.floor(now_s / self._slice_s)
        if self._current is None:
            self._current = slot
            return
        if slot <= self._current:
            return
        size = len(self._counts)
        for step in range(self._current + 1, min(slot, self._current + size) + 1):
            index = step % size
            self._total -= self._counts[index]
            self._counts[index] = 0.0
        self._current = slot
        if abs(self._total) < 1e-9:
            self._total = 0.0
