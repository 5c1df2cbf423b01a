"""A load spike's schedule (the live ``spike`` trigger): how many users at each moment of a run.

Pure: no Locust, no clock. :class:`SpikeSchedule` is the run's users plus, for each
spike window ``(start_s, end_s, extra)``, ``extra`` more users while it lasts (spikes
add up), as :mod:`loadgen.shape` hands it to Locust. The runner writes it into the
environment variable :data:`SPIKES_ENV` of the Locust process as ``START:END:EXTRA``
entries separated by ``;`` (seconds from the start of the load, whole users), and only
then does the locustfile define its load shape.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from retrystorm.errors import UserError

#: The environment variable that carries the spikes to the Locust process.
SPIKES_ENV = "RETRYSTORM_SPIKES"
#: At most this many spike windows in one run.
MAX_SPIKES = 10_000


@dataclasses.dataclass(frozen=True, slots=True)
class Spike:
    """``extra`` more users from ``start_s`` to ``end_s`` (seconds from the start of the load)."""

    start_s: float
    end_s: float
    extra: int


def format_spikes(spikes: Sequence[Spike]) -> str:
    """The text of :data:`SPIKES_ENV` for ``spikes``."""
    return ";".join(f"{spike.start_s!r}:{spike.end_s!r}:{spike.extra}" for spike in spikes)


def parse_spikes(text: str) -> list[Spike]:
    """The spikes :func:`format_spikes` wrote; anything else is one line (:class:`UserError`)."""
    found = [_spike(entry) for entry in text.split(";")] if text.strip() else []
    if len(found) > MAX_SPIKES:
        raise UserError(f"{SPIKES_ENV}: {len(found):,} spikes; at most {MAX_SPIKES:,}")
    return found


def _spike(entry: str) -> Spike:
    parts = entry.split(":")
    try:
        start_s, end_s, extra = (float(parts[0]), float(parts[1]), int(parts[2])) if len(parts) == 3 else (0, 0, -1)
    except ValueError:
        start_s, end_s, extra = 0, 0, -1
    if not 0 <= start_s < end_s < float("inf") or extra < 0:
        raise UserError(f"{SPIKES_ENV}: got {entry[:40]!r}; expected START:END:EXTRA (seconds, users)")
    return Spike(start_s, end_s, extra)


@dataclasses.dataclass(frozen=True, slots=True)
class SpikeSchedule:
    """``users`` all along, plus each spike's ``extra`` while it lasts."""

    users: int
    spikes: tuple[Spike, ...]

    def users_at(self, time_s: float) -> int:
        """The users from ``time_s`` on: the run's, plus every spike with ``start_s <= time_s < end_s``."""
        return self.users + sum(spike.extra for spike in self.spikes if spike.start_s <= time_s < spike.end_s)

    def factor_at(self, time_s: float) -> float:
        """The load factor in force at ``time_s``: :meth:`users_at` over the run's users (1 outside spikes)."""
        return self.users_at(time_s) / self.users if self.users > 0 else 1.0

    def next_change_s(self, time_s: float) -> float | None:
        """The first start or end of a spike after ``time_s`` (``None``: none)."""
        later = [t for spike in self.spikes for t in (spike.start_s, spike.end_s) if t > time_s]
        return min(later, default=None)
