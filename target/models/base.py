"""The overload-model interface and its registry.

A model is immutable spec data (``exponential:limit=30,factor=1.05``); :meth:`start`
makes a :class:`ModelServer`, the mutable state of one server that holds in-flight
requests and decides when each finishes. Shells drive it: the HTTP service calls
:meth:`ModelServer.admit` when a request arrives and :meth:`ModelServer.advance` from
one clock task at :meth:`ModelServer.next_wakeup_s`; the simulator does the same in
virtual time. Time is passed in as ``now_s``, randomness as ``rng``.
"""

from __future__ import annotations

import enum
import math
import random
from abc import ABC, abstractmethod
from typing import Generic, TypeAlias, TypeVar

from retrystorm.errors import SpecError
from retrystorm.spec import Registry, Spec

P = TypeVar("P")


class Outcome(enum.StrEnum):
    """How the server answered a request."""

    OK = "ok"
    REJECTED = "rejected"


#: A request the model released: ``(payload, outcome, admitted_s)``, its payload, how it
#: ended and when it was admitted. A plain tuple rather than a named one: the simulator
#: and the service make one per request, and building a named tuple (a Python-level
#: ``__new__``) cost 7 % of ``retrystorm sim wyegelwel``.
Completion: TypeAlias = tuple[P, Outcome, float]


class ModelServer(ABC, Generic[P]):
    """The in-flight state of one modelled server."""

    @property
    @abstractmethod
    def in_flight(self) -> int:
        """Requests admitted and not yet released."""

    @property
    @abstractmethod
    def delay_s(self) -> float:
        """The modelled delay at the current load, in seconds (for metrics)."""

    @abstractmethod
    def admit(self, now_s: float, payload: P) -> None:
        """A request arrives at ``now_s``."""

    @abstractmethod
    def advance(self, now_s: float, rng: random.Random) -> list[Completion[P]]:
        """Evaluate the model at ``now_s``; return the requests it releases, oldest first."""

    @abstractmethod
    def next_wakeup_s(self, now_s: float) -> float | None:
        """When :meth:`advance` should next run (may be ``<= now_s``); ``None`` when idle."""

    @property
    def admission_hastens(self) -> bool:
        """Whether :meth:`admit` can bring :meth:`next_wakeup_s` forward while requests are in
        flight. A shell that keeps its wake-up across admissions asks again after each one when true."""
        return False

    @abstractmethod
    def withdraw(self, payload: P) -> bool:
        """Remove ``payload`` (compared by identity) before its release, as when its
        client went away and the server stops working on it; ``True`` if it was in flight."""

    @abstractmethod
    def drain(self) -> list[tuple[float, P]]:
        """Remove and return everything in flight as ``(admitted_s, payload)``, oldest first."""

    def reconfigure(self, model: OverloadModel) -> None:
        """Switch to ``model``'s parameters in place, keeping what is in flight.

        Servers accept a model of their own kind; for another kind use
        :func:`switch_model`.
        """
        raise SpecError(f"model: a running {type(self).__name__} cannot become {model.name!r} in place")


class OverloadModel(Spec):
    """A server model: immutable spec data that starts a :class:`ModelServer`."""

    __slots__ = ()

    @abstractmethod
    def start(self, now_s: float) -> ModelServer[P]:
        """A server with nothing in flight whose clock starts at ``now_s``."""


#: Ceilings every model declares on its parameters (``param(..., at_most=)``), so the simulator,
#: a scenario file, ``retrystorm target`` and ``PUT /admin/model`` all refuse the same values.
#: A duration is at most an hour: no request waits longer for one step of a model (the seed's
#: server clamps at 10 minutes). A count of requests (a limit, workers, a threshold) is at most a
#: million, far beyond the connections one server holds (``--max-connections``, default 20,000).
MAX_DURATION_S = 3600.0
#: The shortest tick of a model: a millisecond, the grain of an event loop's timers; a shorter one only
#: multiplies the simulator's work (a tick of 1 ns made it hang).
MIN_TICK_S = 0.001
MAX_REQUESTS = 1_000_000
#: Growth of the exponential model's delay per ``k`` requests: 1,000x reaches any delay in a few steps.
MAX_FACTOR = 1000.0

MODELS: Registry[OverloadModel] = Registry("model")
register_model = MODELS.register


def parse_model(spec: object) -> OverloadModel:
    """Parse a model spec string or mapping, e.g. ``exponential:limit=30``."""
    return MODELS.parse(spec)  # type: ignore[arg-type]


#: Seconds of float rounding forgiven when a time lands on a grid point ``epoch + n * tick``.
GRID_SLACK_S = 1e-9


def ticks_since(epoch_s: float, tick_s: float, now_s: float) -> int:
    """How many points of the grid ``epoch + n * tick`` (n >= 1) have come by ``now_s``, that point included."""
    return math.floor((now_s - epoch_s) / tick_s + GRID_SLACK_S)


def next_tick_s(epoch_s: float, tick_s: float, now_s: float) -> float:
    """The first point of the grid ``epoch + n * tick`` strictly after ``now_s``."""
    return epoch_s + (ticks_since(epoch_s, tick_s, now_s) + 1) * tick_s


def switch_model(server: ModelServer[P], model: OverloadModel, now_s: float) -> ModelServer[P]:
    """``server`` with ``model``'s parameters: in place when the kind matches, else a new
    server of the new kind that re-admits everything in flight at its original time."""
    try:
        server.reconfigure(model)
    except SpecError:
        replacement: ModelServer[P] = model.start(now_s)
        for admitted_s, payload in server.drain():
            replacement.admit(admitted_s, payload)
        return replacement
    return server
