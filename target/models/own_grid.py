"""Requests that each check on their own grid, as the seed server's goroutines do.

In the seed's Go server (``server.go`` of github.com/smira/exponential-backoff, lines
35-47) every request is a goroutine that sleeps a tick, compares its age with the delay
at the current concurrency, and loops until the age exceeds it. So a request admitted at
``a`` checks at ``a + n * tick`` (n >= 1) and leaves at the first check where
``n * tick >= delay(c)``, ``c`` being the count at that instant, whatever older requests
are doing. Checks at the same instant run oldest first, each seeing the count left by
those before it (each goroutine sees the count left by those that finished before it).
An instant is ``a + n * tick`` to the nanosecond (:func:`check_time`): two requests share
one when their grids meet, as a freeze's accept queue admitted at once does. An
admission comes after the checks of its own instant.

Checking every request every tick would cost O(in flight) per tick. This server only
visits checks that can pass. With ``m`` the fewest checks that reach the current delay,
no request leaves before its ``m``-th check, and requests reach their ``m``-th checks in
arrival order, so the oldest waiting request's is the first that can pass; except for a
request already past its ``m``-th check (*ripe*: a release lowered the delay since, or
an evaluation came late), which leaves at its next check, wherever its phase puts it. So:

* waiting requests stay in arrival order (a deque; those that fell back, see below, in
  a heap by arrival, all older than the deque's);
* ripe requests are in a heap by next check ``(time, arrival order)``;
* the next check that can pass is the earlier of the heap's top and the oldest waiting
  request's ``m``-th check: :meth:`next_wakeup_s`, and the next step of :meth:`advance`.
  Before either, the oldest waiting requests that became ripe move to the heap; a ripe
  request whose check fails (admissions raised the delay) falls back to waiting.

While the delay holds, a request leaves from the deque's head at its ``m``-th check,
O(1); one that becomes ripe enters the heap once and leaves it once, O(log n); one that
falls back, once per fall. Never a scan. Only a release lowers the count, and the delay
grows with the count, so a skipped check could not have passed; the exception is a delay
that overflows to negative values (``exponential:overflow=go``): past that point every
check passes, so the next check is the next one of any request. For that case the
server also keeps every request by the phase of its grid
(:class:`~retrystorm.target.models.phase_index.PhaseIndex`), which finds that check in O(log n)
without visiting the checks that fail; and an admission that crosses the point brings
the next wake-up forward (:attr:`admission_hastens`).

:meth:`advance` replays the checks due since the previous evaluation in time order,
each decided at its own instant with its own age; the releases are reported at the
evaluation. A clock task that wakes a little late, or a server resumed after a freeze,
gets the decisions an on-time server would have made (nothing is admitted while a
server is frozen).
"""

from __future__ import annotations

import math
import random
from abc import abstractmethod
from collections import deque
from heapq import heapify, heappop, heappush
from operator import itemgetter
from typing import TypeVar

from retrystorm.target.models.base import GRID_SLACK_S, Completion, ModelServer, Outcome
from retrystorm.target.models.grid import (
    FELL_BACK,
    GONE,
    RIPE,
    WAITING,
    Request,
    check_time,
    first_pending,
    required_checks,
)
from retrystorm.target.models.phase_index import PhaseIndex

P = TypeVar("P")

#: Dead entries tolerated in a queue before it is rebuilt without them.
_COMPACT_AT = 64
#: Counts whose delay is remembered (the delay is a function of the count alone).
_MEMO_COUNTS = 65_536
_by_admission = itemgetter(2)


class OwnGridServer(ModelServer[P]):
    """Each request checks at ``admitted + n * tick`` and leaves at the first check that reaches
    :meth:`_delay` of the count at that instant; subclasses give the delay."""

    def __init__(self, tick_s: float, start_s: float, *, overflows: bool) -> None:
        self._tick_s = tick_s
        self._overflows = overflows
        self._count = 0
        self._seq = 0
        self._waiting: deque[Request[P]] = deque()
        self._fell_back: list[tuple[float, int, Request[P]]] = []  # heap by arrival
        self._ripe: list[tuple[float, int, int, Request[P]]] = []  # heap of (check time, seq, n, request)
        self._dead = 0  # dead entries left in _waiting and _fell_back
        # Checks at (time, seq) <= (_settled_s, _settled_seq) are decided.
        self._settled_s = start_s
        self._settled_seq = math.inf
        self._cached_count = -1
        self._cached_delay_s = 0.0
        self._cached_required = 1
        self._by_count: dict[int, tuple[float, int]] = {}  # the delay is a function of the count
        # Overflowing delays only: every request by phase; when the count last crossed the overflow point.
        self._phases: PhaseIndex[P] | None = PhaseIndex(tick_s) if overflows else None
        self._overflow_from_s = -math.inf

    @abstractmethod
    def _delay(self, in_flight: int) -> float:
        """The delay with ``in_flight`` requests in flight; negative past an overflow."""

    # -- the interface --------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        return self._count

    @property
    def admission_hastens(self) -> bool:
        """Past the overflow point an admission makes every pending check pass."""
        return self._overflows

    def admit(self, now_s: float, payload: P) -> None:
        request = Request(now_s, payload, self._seq)
        self._seq += 1
        self._count += 1
        self._waiting.append(request)
        if self._phases is not None:
            self._phases.admit(request)
            if self._delay(self._count) < 0 <= self._delay(self._count - 1):
                self._overflow_from_s = now_s  # checks before this admission failed

    def next_wakeup_s(self, now_s: float) -> float | None:
        if not self._count:
            return None
        if self._overflowed():
            found = self._next_check_of_any()
            return None if found is None else found[0]
        required = self._required()
        waiting = self._extend(required)
        top = self._ripe_top()
        if waiting is None:
            return None if top is None else top[0]
        waiting_s = check_time(waiting.admitted_s, required, self._tick_s)
        return waiting_s if top is None or waiting_s < top[0] else top[0]

    def advance(self, now_s: float, rng: random.Random) -> list[Completion[P]]:
        released: list[Completion[P]] = []
        tick_s = self._tick_s
        while self._count:
            if self._overflowed():
                found = self._next_check_of_any()
                if found is None or found[0] > now_s:
                    break
                self._settled_s, self._settled_seq, request = found
                self._release(request, released)
                continue
            required = self._required()
            waiting = self._extend(required)
            top = self._ripe_top()
            waiting_s, waiting_seq = (
                (math.inf, 0) if waiting is None else (check_time(waiting.admitted_s, required, tick_s), waiting.seq)
            )
            if top is not None and (top[0] < waiting_s or (top[0] == waiting_s and top[1] < waiting_seq)):
                at_s, seq, n, request = top
                if at_s > now_s:
                    break
                heappop(self._ripe)
                self._settled_s, self._settled_seq = at_s, seq
                if n * tick_s >= self._cached_delay_s - GRID_SLACK_S:
                    self._release(request, released)
                else:  # the count rose since it became ripe: wait again, by arrival
                    request.place = FELL_BACK
                    heappush(self._fell_back, (request.admitted_s, seq, request))
            elif waiting is not None:
                if waiting_s > now_s:
                    break
                self._take_oldest_waiting(waiting)
                self._settled_s, self._settled_seq = waiting_s, waiting.seq
                self._release(waiting, released, taken=True)
            else:
                break
        # every check up to now is decided: those not visited could not pass
        self._settled_s, self._settled_seq = max(now_s, self._settled_s), math.inf
        if self._phases is not None:
            self._phases.catch_up(self._settled_s)
        if len(released) > 1:
            released.sort(key=_by_admission)  # decided in check order, reported oldest first
        return released

    def withdraw(self, payload: P) -> bool:
        # A scan, used only with --cancel-on-disconnect (the count drops; the delay with it).
        for request in self._alive():
            if request.payload is payload:
                self._kill(request)
                return True
        return False

    def drain(self) -> list[tuple[float, P]]:
        alive = sorted(self._alive(), key=lambda request: request.seq)
        for request in alive:
            self._kill(request)
        self._restart()
        return [(request.admitted_s, request.payload) for request in alive]

    # -- the delay ------------------------------------------------------------------

    def _refresh(self) -> None:
        count = self._count
        if count != self._cached_count:
            self._cached_count = count
            known = self._by_count.get(count)
            if known is None:
                delay_s = self._delay(count)
                known = (delay_s, required_checks(delay_s, self._tick_s) if delay_s >= 0 else 1)
                if len(self._by_count) >= _MEMO_COUNTS:
                    self._by_count.clear()
                self._by_count[count] = known
            self._cached_delay_s, self._cached_required = known

    def _required(self) -> int:
        if self._count != self._cached_count:
            self._refresh()
        return self._cached_required

    def _overflowed(self) -> bool:
        if self._phases is None:
            return False
        self._refresh()
        return self._cached_delay_s < 0

    def _forget_delay(self) -> None:
        """The delay function changed (a reconfigured model)."""
        self._cached_count = -1
        self._by_count = {}

    # -- waiting and ripe requests --------------------------------------------------

    def _oldest_waiting(self) -> Request[P] | None:
        waiting, fell_back = self._waiting, self._fell_back
        while waiting and waiting[0].place != WAITING:
            waiting.popleft()
            self._dead -= 1
        while fell_back and fell_back[0][2].place != FELL_BACK:
            heappop(fell_back)
            self._dead -= 1
        # a request that fell back was ripe before anything now in the deque arrived
        if fell_back:
            return fell_back[0][2]
        return waiting[0] if waiting else None

    def _take_oldest_waiting(self, request: Request[P]) -> None:
        if request.place == FELL_BACK:
            heappop(self._fell_back)
        else:
            self._waiting.popleft()

    def _extend(self, required: int) -> Request[P] | None:
        """Move the oldest waiting requests that are past their ``required``-th check (ripe) to the
        heap; the oldest left waiting."""
        tick_s, settled_s, ripe = self._tick_s, self._settled_s, self._ripe
        while True:
            oldest = self._oldest_waiting()
            if oldest is None:
                return None
            admitted_s = oldest.admitted_s
            ticks = (settled_s - admitted_s) / tick_s
            if ticks < required - 2:  # clearly short of its required check
                return oldest
            whole = math.floor(ticks)
            if 1e-6 < ticks - whole < 1 - 1e-6:  # clear of any check's rounding: the next one
                n = whole + 1 if whole >= 0 else 1
            else:
                n = first_pending(admitted_s, oldest.seq, tick_s, settled_s, self._settled_seq)
            if n <= required:  # its next pass is its required check: in arrival order, the head's first
                return oldest
            self._take_oldest_waiting(oldest)
            oldest.place = RIPE
            heappush(ripe, (check_time(admitted_s, n, tick_s), oldest.seq, n, oldest))

    def _ripe_top(self) -> tuple[float, int, int, Request[P]] | None:
        ripe = self._ripe
        while ripe and ripe[0][3].place != RIPE:
            heappop(ripe)
        return ripe[0] if ripe else None

    def _release(self, request: Request[P], released: list[Completion[P]], *, taken: bool = False) -> None:
        """Answer ``request``; ``taken``: the caller popped it from its waiting queue."""
        released.append((request.payload, Outcome.OK, request.admitted_s))
        if taken or request.place == RIPE:  # in no waiting queue (a ripe one's heap entry is popped or skipped)
            self._gone(request)
        else:
            self._kill(request)

    def _gone(self, request: Request[P]) -> None:
        request.place = GONE
        self._count -= 1
        if self._phases is not None:
            self._phases.remove(request)

    def _kill(self, request: Request[P]) -> None:
        """Take ``request`` out of flight; the waiting queues drop it when it reaches their head."""
        if request.place in (WAITING, FELL_BACK):
            self._dead += 1
        self._gone(request)
        if self._dead > _COMPACT_AT and 2 * self._dead > len(self._waiting) + len(self._fell_back):
            self._compact()

    def _compact(self) -> None:
        self._waiting = deque(request for request in self._waiting if request.place == WAITING)
        self._fell_back = [item for item in self._fell_back if item[2].place == FELL_BACK]
        heapify(self._fell_back)
        self._dead = 0

    def _alive(self) -> list[Request[P]]:
        found = [request for request in self._waiting if request.place == WAITING]
        found += [item[2] for item in self._fell_back if item[2].place == FELL_BACK]
        found += [item[3] for item in self._ripe if item[3].place == RIPE]
        return found

    def _restart(self, tick_s: float | None = None, *, overflows: bool | None = None) -> None:
        """Rebuild the queues from what is alive (after a drain, or for new parameters)."""
        alive = sorted(self._alive(), key=lambda request: request.seq)
        self._tick_s = self._tick_s if tick_s is None else tick_s
        self._overflows = self._overflows if overflows is None else overflows
        self._waiting, self._fell_back, self._ripe, self._dead = deque(), [], [], 0
        self._phases = PhaseIndex(self._tick_s) if self._overflows else None
        for request in alive:
            request.place, request.phase = WAITING, None
            self._waiting.append(request)
            if self._phases is not None:
                self._phases.admit(request)
        self._overflow_from_s = self._settled_s
        self._forget_delay()

    def _next_check_of_any(self) -> tuple[float, int, Request[P]] | None:
        """The first check of any request after what is decided (overflowing delays only)."""
        settled_s, settled_seq = self._settled_s, self._settled_seq
        if self._overflow_from_s >= settled_s:  # checks up to the crossing admission failed
            settled_s, settled_seq = self._overflow_from_s, math.inf
        return None if self._phases is None else self._phases.next_check(settled_s, settled_seq)
