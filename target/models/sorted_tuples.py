"""A sorted collection of tuples: add, remove, and the first at or after a key, in O(log n).

The items are kept in short sorted lists (at most ``2 * LOAD`` items each), with the
largest item of each list beside it: a lookup bisects the list of largest items, then
one short list. Adding or removing moves at most ``2 * LOAD`` pointers (one ``memmove``),
whatever the size, so every operation is O(log n) comparisons plus O(LOAD). The layout
of the ``sortedcontainers`` package, cut down to what the exponential model needs (the
requests of a server ordered by the phase of their checks) and kept free of a dependency.

Items must be distinct and totally ordered; a key is a tuple that compares with them
(``(phase, seq)`` against items ``(phase, seq, request)``).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from typing import Any

#: Half the longest list: short enough that an insert's memmove is cheap, long enough that the
#: list of largest items stays small.
LOAD = 256


class SortedTuples:
    """Distinct tuples in ascending order."""

    __slots__ = ("_lists", "_maxes", "_size")

    def __init__(self) -> None:
        self._lists: list[list[tuple[Any, ...]]] = []
        self._maxes: list[tuple[Any, ...]] = []
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def add(self, item: tuple[Any, ...]) -> None:
        """Insert ``item``."""
        self._size += 1
        lists, maxes = self._lists, self._maxes
        if not maxes:
            lists.append([item])
            maxes.append(item)
            return
        index = bisect_left(maxes, item)
        if index == len(maxes):  # beyond every item: the end of the last list
            index -= 1
            lists[index].append(item)
            maxes[index] = item
        else:
            insort(lists[index], item)
        chunk = lists[index]
        if len(chunk) > 2 * LOAD:
            upper = chunk[LOAD:]
            del chunk[LOAD:]
            lists.insert(index + 1, upper)
            maxes[index] = chunk[-1]
            maxes.insert(index + 1, upper[-1])

    def remove(self, item: tuple[Any, ...]) -> None:
        """Remove ``item``, which must be present."""
        maxes = self._maxes
        index = bisect_left(maxes, item)
        if index == len(maxes):
            raise KeyError(item)
        chunk = self._lists[index]
        position = bisect_left(chunk, item)
        if position == len(chunk) or chunk[position] != item:
            raise KeyError(item)
        del chunk[position]
        self._size -= 1
        if not chunk:
            del self._lists[index]
            del maxes[index]
        elif position == len(chunk):
            maxes[index] = chunk[-1]

    def first(self) -> tuple[Any, ...] | None:
        """The smallest item, ``None`` when empty."""
        return self._lists[0][0] if self._lists else None

    def at_or_after(self, key: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """The smallest item not below ``key``, ``None`` when every item is below it."""
        maxes = self._maxes
        index = bisect_left(maxes, key)
        if index == len(maxes):
            return None
        chunk = self._lists[index]
        return chunk[bisect_left(chunk, key)]

    def __iter__(self) -> Any:
        for chunk in self._lists:
            yield from chunk
