"""Think times: how long a user waits before each logical request.

A think time is a spec, like a strategy: ``exponential:10s`` (the seed's clients: an
exponentially distributed wait with mean 10 s, so 1000 users offer about 100 req/s),
``constant:1s``, ``between:1s,3s`` (uniform, as Locust's ``between``). A bare
duration (``10s``) is read as the mean of an exponential think time. The one think
time of the project: the Locust user (``--think-time``), the scenario format
(``load.think_time``) and the simulator all read it, so a user waits the same live
and simulated. Pure: the caller passes the random source, as the strategies do.
"""

from __future__ import annotations

import dataclasses
import math
import random
from abc import abstractmethod
from collections.abc import Mapping

from retrystorm.durations import format_duration, parse_duration
from retrystorm.errors import SpecError, shown
from retrystorm.spec import DURATION, Registry, Spec, param

#: The ceiling of every think time: one day. The seed's users think for 10 s on average;
#: a user that waits a day between requests sends nothing within any run.
MAX_THINK_S = 86_400.0


class ThinkTime(Spec):
    """A distribution of think times; :meth:`sample` draws one in seconds."""

    __slots__ = ()

    @abstractmethod
    def sample(self, rng: random.Random) -> float:
        """One think time in seconds, ``>= 0``."""

    @property
    @abstractmethod
    def mean_s(self) -> float:
        """The mean think time; ``users / (mean_s + response time)`` is the offered load."""


THINK_TIMES: Registry[ThinkTime] = Registry("think time")


@THINK_TIMES.register("exponential")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ExponentialThink(ThinkTime):
    """Exponentially distributed: ``-mean * ln(1 - U)``, as the seed's Go client draws it.

    Each user is then a Poisson source; ``n`` users with mean ``m`` offer ``n / m``
    requests per second while responses are fast.
    """

    average_s: float = param(
        "mean", DURATION, 10.0, "mean think time", positional=True, at_least=0, at_most=MAX_THINK_S
    )

    def sample(self, rng: random.Random) -> float:
        return rng.expovariate(1.0 / self.average_s) if self.average_s > 0 else 0.0

    @property
    def mean_s(self) -> float:
        return self.average_s


#: The seed's clients: ``exponential:10s`` (1000 users offer about 100 requests/s).
SEED_THINK_TIME = ExponentialThink(average_s=10.0)


@THINK_TIMES.register("constant")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ConstantThink(ThinkTime):
    """Always the same wait (``constant:0`` makes a user send back to back)."""

    wait_s: float = param("wait", DURATION, 1.0, "the think time", positional=True, at_least=0, at_most=MAX_THINK_S)

    def sample(self, rng: random.Random) -> float:
        return self.wait_s

    @property
    def mean_s(self) -> float:
        return self.wait_s


@THINK_TIMES.register("between")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BetweenThink(ThinkTime):
    """Uniform between ``min`` and ``max``, as Locust's ``between(min, max)``."""

    low_s: float = param("min", DURATION, 1.0, "shortest think time", positional=True, at_least=0, at_most=MAX_THINK_S)
    high_s: float = param("max", DURATION, 3.0, "longest think time", positional=True, at_least=0, at_most=MAX_THINK_S)

    def _validate(self) -> None:
        if self.high_s < self.low_s:
            raise self._fail("max", f"must be at least min ({self.low_s} s)")

    def sample(self, rng: random.Random) -> float:
        return rng.uniform(self.low_s, self.high_s)

    @property
    def mean_s(self) -> float:
        return (self.low_s + self.high_s) / 2


def parse_think_time(spec: object) -> ThinkTime:
    """Parse ``exponential:10s``, ``constant:1s``, ``between:1s,3s``, a bare ``10s``, or a mapping.

    A bare duration (or a number, from YAML) is the mean of an exponential think time;
    a mapping names the kind (``{name: constant, wait: 1s}``); a :class:`ThinkTime`
    passes through. Every form must come out finite, ``>= 0`` and at most
    :data:`MAX_THINK_S` (``inf`` and ``forever`` are not think times: a user that never
    sends is no user). Every error is one line that says what was found and names the
    accepted forms.
    """
    if isinstance(spec, ThinkTime):
        think = spec
    elif isinstance(spec, int | float) and not isinstance(spec, bool):
        think = ExponentialThink(average_s=_bare_duration(spec))
    elif isinstance(spec, str):
        kind, colon, _ = spec.partition(":")
        if kind.strip() in THINK_TIMES.names():
            think = _parsed(spec)
        elif colon:
            raise SpecError(
                f"think time: got {shown(spec)}, an unknown kind {shown(kind.strip())}; expected {_ACCEPTED}"
            )
        else:
            think = ExponentialThink(average_s=_bare_duration(spec))
    elif isinstance(spec, Mapping):
        think = _parsed(spec)
    else:
        raise SpecError(f"think time: got {shown(spec)}, expected {_ACCEPTED}")
    if not 0 <= think.mean_s < math.inf:
        raise SpecError(f"think time: got {shown(spec)}, expected {_ACCEPTED}")
    return think


_FORMS = "exponential:10s, constant:1s, between:1s,3s"
_ACCEPTED = (
    f"a duration (finite, >= 0 and <= {format_duration(MAX_THINK_S)}: the mean of an exponential think time, "
    f"like 10s) or one of {_FORMS}"
)


def _parsed(spec: str | Mapping[str, object]) -> ThinkTime:
    try:
        return THINK_TIMES.parse(spec)
    except SpecError as error:
        raise SpecError(f"{error}; think times: {_FORMS}") from None


def _bare_duration(spec: str | float) -> float:
    try:
        return parse_duration(spec, what="think time", at_most=MAX_THINK_S)
    except SpecError:
        raise SpecError(f"think time: got {shown(spec)}, expected {_ACCEPTED}") from None


#: How far an open-loop schedule may fall behind before it lets go of the missed arrivals (seconds).
MAX_ARRIVAL_LAG_S = 1.0


def open_arrival_wait(planned_s: float | None, now_s: float, think_s: float) -> tuple[float, float]:
    """Open arrival on a schedule: the next arrival's planned time and how long to wait for it.

    Each arrival is planned ``think_s`` after the previous *planned* one (the first
    ``think_s`` after ``now_s``), not after the moment the wait ended, so the time the
    load generator spends between two waits (its loop, a late wake-up) does not lower
    the rate asked for: ``n`` arrivals span the sum of their think times. A schedule
    more than :data:`MAX_ARRIVAL_LAG_S` behind restarts from ``now_s - MAX_ARRIVAL_LAG_S``
    (a stalled generator sends at most that second's missed arrivals at once).
    """
    base = now_s if planned_s is None else max(planned_s, now_s - MAX_ARRIVAL_LAG_S)
    planned = base + think_s
    return planned, max(0.0, planned - now_s)
