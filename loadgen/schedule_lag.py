"""How late the load generator runs against its own plan: schedule lag and event-loop lag.

A Locust process is one gevent loop. When it is starved of CPU (saturated by its own
users, or sharing its core with other processes) every timer fires late: a user's
think time and backoff end late, an open-loop arrival is sent after its planned time,
and the users send less than they were asked to. Its CPU share need not show it (a
process that the kernel gives half a core reads 50 %); its lateness does. Each Locust
process serves two histograms, in seconds, over :data:`LAG_BUCKETS_S`
(:mod:`retrystorm.loadgen.metrics` builds them):

* ``retrystorm_client_schedule_lag_seconds{strategy, wait}``: how late each planned
  start came, ``max(0, actual - planned)`` on the monotonic clock. ``wait="think"``
  (closed loop): a logical request's start minus (its think time's start + the think
  time); ``wait="arrival"`` (open loop): the moment its greenlet runs minus its planned
  arrival on the schedule (:func:`retrystorm.loadgen.think.open_arrival_wait`);
  ``wait="backoff"``: the end of a backoff's sleep minus (its start + the delay).
* ``retrystorm_client_loop_lag_seconds{process}``: a watcher in each process sleeps
  :data:`LOOP_TICK_S` again and again and observes how late each wake-up is
  (:func:`watch_loop`): the loop's own lag, read even when no user wakes (every user
  waiting on a frozen server).

A Locust master sums its workers' histograms (:mod:`retrystorm.loadgen.aggregate`), so
over an interval the difference of ``_sum`` over that of ``_count`` is the mean lateness
of every wake-up of every process. The runner reads both every second and the saturation
rule judges them (:mod:`retrystorm.experiment.analysis.validity`). Pure: the clock and the
sleep are passed in.
"""

from __future__ import annotations

import dataclasses
import enum
import random
from collections.abc import Callable

from retrystorm.loadgen.think import ThinkTime, open_arrival_wait

SCHEDULE_LAG = "retrystorm_client_schedule_lag_seconds"
LOOP_LAG = "retrystorm_client_loop_lag_seconds"
#: Upper bounds in seconds (``+Inf`` implied): 1 ms (a quiet loop) to 10 s (a generator far behind).
LAG_BUCKETS_S = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
#: How long the loop watcher sleeps between two wake-ups: ten observations a second, a negligible cost.
LOOP_TICK_S = 0.1


class Wait(enum.StrEnum):
    """What a user waited out before a planned start (the ``wait`` label)."""

    THINK = "think"
    ARRIVAL = "arrival"
    BACKOFF = "backoff"


def lateness_s(planned_s: float, now_s: float) -> float:
    """How late ``now_s`` is against ``planned_s`` (0 when on time or early)."""
    return max(0.0, now_s - planned_s)


@dataclasses.dataclass(frozen=True, slots=True)
class PlannedWait:
    """A user's next wait: the think time drawn, how long to sleep, the open-loop schedule, the planned start."""

    think_s: float
    wait_s: float
    #: The open-loop schedule's next arrival (``None``: closed loop).
    arrival_s: float | None
    #: When the next logical request should start, and what it waited for.
    start_s: float
    wait: Wait


def plan_wait(
    think: ThinkTime, rng: random.Random, *, open_loop: bool, arrival_s: float | None, now_s: float
) -> PlannedWait:
    """The next think time and when its request should start.

    Closed loop: ``now_s + think``. Open loop: the next arrival of the schedule
    (:func:`~retrystorm.loadgen.think.open_arrival_wait`), whatever the loop cost between two waits.
    """
    think_s = think.sample(rng)
    if not open_loop:
        return PlannedWait(think_s, think_s, None, now_s + think_s, Wait.THINK)
    arrival, wait_s = open_arrival_wait(arrival_s, now_s, think_s)
    return PlannedWait(think_s, wait_s, arrival, arrival, Wait.ARRIVAL)


def watch_loop(
    observe: Callable[[float], None],
    *,
    clock: Callable[[], float],
    sleep: Callable[[float], object],
    tick_s: float = LOOP_TICK_S,
) -> None:
    """Forever: sleep ``tick_s`` and ``observe`` how late the wake-up came (run it in its own greenlet)."""
    while True:
        planned_s = clock() + tick_s
        sleep(tick_s)
        observe(lateness_s(planned_s, clock()))
