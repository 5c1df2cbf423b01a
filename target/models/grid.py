"""A request's own check grid: when its checks fall, which comes next, which reaches a delay.

A request admitted at ``a`` checks at ``a + n * tick``, n >= 1 (``server.go`` of
github.com/smira/exponential-backoff, lines 37-47: each goroutine sleeps 50 ms, then
compares its age with the delay). Pure arithmetic, and the record of one request in
flight, shared by :mod:`retrystorm.target.models.own_grid` and :mod:`retrystorm.target.models.phase_index`.
"""

from __future__ import annotations

import math
from typing import Generic, TypeVar

from retrystorm.target.models.base import GRID_SLACK_S

P = TypeVar("P")

#: Where a request in flight is kept; ``GONE`` once released or withdrawn.
WAITING, FELL_BACK, RIPE, GONE = range(4)


class Request(Generic[P]):
    """One request in flight: when it arrived, in which order, and where it is kept."""

    __slots__ = ("admitted_s", "payload", "phase", "place", "seq")

    def __init__(self, admitted_s: float, payload: P, seq: int) -> None:
        self.admitted_s = admitted_s
        self.payload = payload
        self.seq = seq  # admission order, which is arrival order
        self.place = WAITING
        self.phase: float | None = None  # its key in a PhaseIndex, while it has one


def check_time(admitted_s: float, n: int, tick_s: float) -> float:
    """The instant of a request's ``n``-th check: ``admitted + n * tick``, to the nanosecond.

    Rounded so that grids which meet in decimal meet in floating point too (``0.05 * 6``
    is 0.30000000000000004): checks that round to the same nanosecond are one instant,
    and a clock reading of 0.3 reaches the check at 0.3.
    """
    return round((admitted_s + n * tick_s) * 1e9) / 1e9


def first_pending(admitted_s: float, seq: int, tick_s: float, settled_s: float, settled_seq: float) -> int:
    """The first ``n >= 1`` whose check ``(check_time, seq)`` comes after ``(settled_s, settled_seq)``:
    checks at one instant are ordered by ``seq``, oldest first."""
    n = max(1, math.floor((settled_s - admitted_s) / tick_s) + 1)
    while n > 1:
        at_s = check_time(admitted_s, n - 1, tick_s)
        if at_s < settled_s or (at_s == settled_s and seq <= settled_seq):
            break
        n -= 1
    while True:
        at_s = check_time(admitted_s, n, tick_s)
        if at_s > settled_s or (at_s == settled_s and seq > settled_seq):
            return n
        n += 1


def required_checks(delay_s: float, tick_s: float) -> int:
    """The fewest checks ``n >= 1`` with ``n * tick >= delay`` (1 ns of slack): the check a request leaves at.

    The Go server compares ``elapsed > delay``; its timer fires just after each 50 ms, so
    the age at the n-th check just exceeds ``n * tick`` and ``n * tick == delay`` passes.
    """
    target = delay_s - GRID_SLACK_S
    if target <= tick_s:
        return 1
    n = math.ceil(target / tick_s)
    while n * tick_s < target:
        n += 1
    while n > 1 and (n - 1) * tick_s >= target:
        n -= 1
    return n
