"""A load spike's schedule (the live ``spike`` trigger): how many users at each moment of a test.

Pure: no Locust, no clock. The load generator's ``--load-spikes`` option lists spikes as
``AT+FOR:xFACTOR``, comma-separated: at ``AT`` from the test's start, for ``FOR``, the users
are multiplied by ``FACTOR``. ``60s+10s:x2, 120s+5s:x1.5`` doubles the users from 60 s to 70 s,
then adds half of them from 120 s to 125 s. :class:`SpikeSchedule` turns them into a user
count at each moment: the test's users ``N`` plus ``round(N * (factor - 1))`` for each spike
in force (spikes add up), exactly as the simulator spikes a scenario. In open loop every
user is an arrival stream, so the arrival rate is multiplied the same way.

Who plays it: :mod:`retrystorm.loadgen.spike_player`, in the single Locust process or the master. The
runner writes the option for a scenario's ``spike`` triggers (the same for the local Locust
and for a compose stack's master); people type it on the command line or in the web UI's
start form.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from retrystorm.durations import MAX_DURATION_S, format_duration, parse_duration
from retrystorm.errors import SpecError, shown

#: At most this many spikes in one test.
MAX_SPIKES = 10_000
#: The most a spike multiplies the load by (the scenario's ``factor`` has the same ceiling).
MAX_SPIKE_FACTOR = 100.0
#: The text of "no spike".
NO_SPIKES = "none"
EXPECTED = "AT+FOR:xFACTOR entries, comma-separated, like 60s+10s:x2 (FACTOR from 1 to 100), or none"


@dataclasses.dataclass(frozen=True, slots=True)
class LoadSpike:
    """The users multiplied by ``factor`` from ``start_s`` to ``end_s`` (seconds from the test's start)."""

    start_s: float
    end_s: float
    factor: float

    def added_users(self, users: int) -> int:
        """The users this spike adds to ``users`` (:func:`added_users`)."""
        return added_users(users, self.factor)


def added_users(users: int, factor: float) -> int:
    """The users a spike of ``factor`` adds to ``users``: ``round(users * (factor - 1))``, live and simulated."""
    return round(users * (factor - 1))


def format_load_spikes(spikes: Sequence[LoadSpike]) -> str:
    """The ``--load-spikes`` text of ``spikes`` (``none`` for none); :func:`parse_load_spikes` reads it back.

    Times are written in whole milliseconds (:func:`~retrystorm.durations.format_duration`).
    """
    entries = [
        f"{format_duration(spike.start_s)}+{format_duration(spike.end_s - spike.start_s)}:x{spike.factor!r}"
        for spike in spikes
    ]
    return ", ".join(entries) or NO_SPIKES


def parse_load_spikes(text: str) -> tuple[LoadSpike, ...]:
    """The spikes of a ``--load-spikes`` text; anything else is one line (:class:`SpecError`)."""
    stripped = text.strip()
    if stripped.lower() in ("", NO_SPIKES):
        return ()
    entries = stripped.split(",")
    if len(entries) > MAX_SPIKES:
        raise SpecError(f"got {len(entries):,} spikes, expected at most {MAX_SPIKES:,}")
    return tuple(_spike(entry) for entry in entries)


def _spike(entry: str) -> LoadSpike:
    when, colon, factor_text = entry.strip().partition(":")
    at_text, plus, for_text = when.partition("+")
    if not (colon and plus and factor_text.strip().lower().startswith("x")):
        raise SpecError(f"got {shown(entry.strip())}, expected {EXPECTED}")
    try:
        start_s = parse_duration(at_text, what="AT", at_most=MAX_DURATION_S)
        length_s = parse_duration(for_text, what="FOR", at_most=MAX_DURATION_S)
        factor = float(factor_text.strip()[1:])
    except (SpecError, ValueError) as error:  # a duration's own message, or a FACTOR that is not a number
        raise SpecError(f"got {shown(entry.strip())}: {error}; expected {EXPECTED}") from None
    if not length_s > 0:
        raise SpecError(f"got {shown(entry.strip())}: FOR must be > 0; expected {EXPECTED}")
    if not 1 <= factor <= MAX_SPIKE_FACTOR:
        raise SpecError(
            f"got {shown(entry.strip())}: FACTOR must be from 1 to {MAX_SPIKE_FACTOR:g}; expected {EXPECTED}"
        )
    return LoadSpike(start_s, start_s + length_s, factor)


@dataclasses.dataclass(frozen=True, slots=True)
class SpikeSchedule:
    """``users`` all along, plus each spike's :meth:`LoadSpike.added_users` while it lasts."""

    users: int
    spikes: tuple[LoadSpike, ...]

    def users_at(self, time_s: float) -> int:
        """The users from ``time_s`` on: the test's, plus every spike with ``start_s <= time_s < end_s``."""
        return self.users + sum(
            spike.added_users(self.users) for spike in self.spikes if spike.start_s <= time_s < spike.end_s
        )

    def factor_at(self, time_s: float) -> float:
        """The load factor in force at ``time_s``: :meth:`users_at` over the test's users (1 outside spikes)."""
        return self.users_at(time_s) / self.users if self.users > 0 else 1.0

    def next_change_s(self, time_s: float) -> float | None:
        """The first start or end of a spike after ``time_s`` (``None``: none)."""
        later = [t for spike in self.spikes for t in (spike.start_s, spike.end_s) if t > time_s]
        return min(later, default=None)

    def spawn_rate(self, rate: float) -> float:
        """The spawn rate that starts the largest spike's users within a second (``rate`` when faster)."""
        return max([rate, *(float(spike.added_users(self.users)) for spike in self.spikes)])


#: The longest a player waits between two steps (it also wakes at each spike's start and end).
TICK_S = 1.0


@dataclasses.dataclass(frozen=True, slots=True)
class Step:
    """What a player does at one moment: ``start`` Locust with ``(users, spawn rate)`` (``None``: nothing), show
    ``factor``, and step again after ``sleep_s``."""

    start: tuple[int, float] | None
    factor: float
    sleep_s: float


class SpikeSteps:
    """The decisions of a player of ``spikes`` (:mod:`retrystorm.loadgen.spike_player` makes the calls), one
    :meth:`step` each.

    ``users`` is the test's user count when the test starts, which Locust is already
    bringing up. A change of the test's users between steps (the web UI's edit of a running
    test, which asks Locust for them itself) moves the base the spikes multiply without a
    start of its own.
    """

    def __init__(self, spikes: tuple[LoadSpike, ...], users: int) -> None:
        self.spikes = spikes
        self.base = self.asked = users

    def step(self, now_s: float, users: int, spawn_rate: float) -> Step:
        """At ``now_s`` from the test's start, with the test's ``users`` and ``spawn_rate`` as the options say now."""
        schedule = SpikeSchedule(users, self.spikes)
        if users != self.base:
            self.base = self.asked = users
        wanted = schedule.users_at(now_s)
        start = None
        if wanted != self.asked and users > 0:
            start = (wanted, schedule.spawn_rate(spawn_rate))
            self.asked = wanted
        following = schedule.next_change_s(now_s)
        sleep_s = TICK_S if following is None else min(TICK_S, max(0.0, following - now_s))
        return Step(start, schedule.factor_at(now_s), sleep_s)
