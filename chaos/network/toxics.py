"""Network faults as a TCP proxy plays them: what happens to a new connection and to each chunk it carries.

Toxiproxy's toxics are the model (``toxics/*.go`` in Shopify/toxiproxy 2.x): a toxic is plain data, set on a
proxy, acting on the bytes between a client and the service. Each one here is a frozen dataclass with
two methods of one shape, taking an explicit :class:`random.Random` (the proxy's seeded source):

* :meth:`Toxic.on_connect` -- what a connection accepted while the toxic is in force meets;
* :meth:`Toxic.on_chunk` -- what one chunk (one ``read()`` of the socket, standing in for a TCP segment)
  meets, in direction ``upstream`` (client to service) or ``downstream`` (service to client).

Each returns an :class:`Action`: forward after ``delay_s``, ``hold`` (accept, never answer), or ``reset``
(close with RST). Where Toxiproxy's ``toxicity`` decides per connection whether a toxic applies at all,
``hang`` and ``reset`` take ``probability``, drawn once per connection and toxic (:class:`Proxy` does the
drawing; the toxic only says ``applies_to_connection``).

The kinds, each with its formula and what a client sees:

* :class:`Delay` -- ``delay_s = max(0, latency_s + U(-jitter_s, +jitter_s))`` per chunk in the chosen
  direction (``downstream``, the answers, by default, as Toxiproxy's ``latency``); chunks keep their order,
  so a chunk leaves no sooner than the one before it. A request answered in ``t`` takes ``t + latency_s``.
* :class:`Loss` -- packet loss as TCP shows it to an application: bytes are never lost, they come late.
  Each chunk is lost with ``probability`` and retransmitted after the retransmission timeout, which doubles
  for each further loss of the same chunk (RFC 6298, 5.5): ``delay_s = sum(rto_s * 2**i for each loss i)``,
  ``rto_s`` 200 ms (Linux's ``TCP_RTO_MIN``, ``include/net/tcp.h``, the floor a fast local path sits on). A
  connection's first segment (the SYN) lost waits the initial RTO of 1 s (RFC 6298, 2.1; Linux's
  ``TCP_TIMEOUT_INIT``), doubling the same way. Both are capped at :data:`MAX_RETRANSMIT_WAIT_S`
  (Linux's ``TCP_RTO_MAX``, 120 s).
* :class:`Hang` -- connections accepted and never answered (a service stuck after ``accept``, or a path that
  black-holes traffic after the handshake): nothing is forwarded either way. A connection that hung is closed
  when the hang ends (its stream lost bytes, so it cannot be resumed); new connections are served again.
  Toxiproxy's ``timeout`` toxic with timeout 0.
* :class:`Reset` -- a new connection is reset at once, an open one at its next chunk (Toxiproxy's
  ``reset_peer`` with timeout 0): the client reads ``ECONNRESET``.

Ceilings: latencies and jitters at most :data:`MAX_LATENCY_S`; probabilities in ``(0, 1]`` (``[0, 1)`` for
a loss, where 1 would never deliver).
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from retrystorm.errors import UserError

#: The longest added latency or jitter a toxic takes.
MAX_LATENCY_S = 60.0
#: Linux's TCP_RTO_MIN (HZ / 5): the retransmission timeout of a fast path, after a lost segment.
RTO_MIN_S = 0.2
#: RFC 6298's initial RTO (Linux's TCP_TIMEOUT_INIT): how long a lost SYN waits for its retransmission.
RTO_INITIAL_S = 1.0
#: Linux's TCP_RTO_MAX: no retransmission waits longer.
MAX_RETRANSMIT_WAIT_S = 120.0

Direction = Literal["upstream", "downstream"]
DIRECTIONS: tuple[Direction, ...] = ("upstream", "downstream")


@dataclasses.dataclass(frozen=True, slots=True)
class Action:
    """What the proxy does with a connection or a chunk: ``forward`` after ``delay_s``, ``hold``, or ``reset``."""

    verb: Literal["forward", "hold", "reset"]
    delay_s: float = 0.0


FORWARD = Action("forward")
HOLD = Action("hold")
RESET = Action("reset")


def _check_seconds(name: str, value: float) -> None:
    if not (math.isfinite(value) and 0 <= value <= MAX_LATENCY_S):
        raise UserError(f"{name}: got {value!r}, expected seconds from 0 to {MAX_LATENCY_S:g}")


def _check_probability(name: str, value: float, *, one_allowed: bool = True) -> None:
    upper_ok = value <= 1 if one_allowed else value < 1
    if not (math.isfinite(value) and value > 0 and upper_ok):
        accepted = "(0, 1]" if one_allowed else "(0, 1)"
        raise UserError(f"{name}: got {value!r}, expected a probability in {accepted}")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Toxic:
    """A network fault a proxy plays (see the module docstring); subclasses say what it does."""

    kind: ClassVar[str] = "toxic"

    def applies_to_connection(self, rng: random.Random) -> bool:
        """Whether this toxic acts on one more connection (drawn once per connection)."""
        return True

    def on_connect(self, rng: random.Random) -> Action:
        """What a connection accepted while the toxic is in force meets."""
        return FORWARD

    def on_chunk(self, direction: Direction, rng: random.Random) -> Action:
        """What one chunk meets in ``direction``."""
        return FORWARD

    def settings(self) -> dict[str, Any]:
        """The toxic's fields, as its JSON carries them (without ``kind``)."""
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}

    def to_json(self) -> dict[str, Any]:
        """``{"kind": ..., **settings}``: what the proxy's control socket and the journal carry."""
        return {"kind": self.kind, **self.settings()}


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Delay(Toxic):
    """``latency_s`` plus a uniform jitter in ``[-jitter_s, +jitter_s]`` (at least 0) per chunk of ``direction``."""

    kind: ClassVar[str] = "delay"
    latency_s: float
    jitter_s: float = 0.0
    direction: Literal["upstream", "downstream", "both"] = "downstream"

    def __post_init__(self) -> None:
        _check_seconds("latency", self.latency_s)
        _check_seconds("jitter", self.jitter_s)
        if self.direction not in ("upstream", "downstream", "both"):
            raise UserError(f"direction: got {self.direction!r}, expected upstream, downstream or both")

    def on_chunk(self, direction: Direction, rng: random.Random) -> Action:
        if self.direction not in (direction, "both"):
            return FORWARD
        jitter = rng.uniform(-self.jitter_s, self.jitter_s) if self.jitter_s else 0.0
        return Action("forward", max(0.0, self.latency_s + jitter))


def retransmit_wait_s(probability: float, first_rto_s: float, rng: random.Random) -> float:
    """How long a segment waits for its losses: ``sum(first_rto_s * 2**i)`` over its consecutive losses.

    Each transmission is lost with ``probability``; the wait is capped at :data:`MAX_RETRANSMIT_WAIT_S`.
    """
    wait_s, rto_s = 0.0, first_rto_s
    while wait_s < MAX_RETRANSMIT_WAIT_S and rng.random() < probability:
        wait_s += rto_s
        rto_s = min(rto_s * 2, MAX_RETRANSMIT_WAIT_S)
    return min(wait_s, MAX_RETRANSMIT_WAIT_S)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Loss(Toxic):
    """Each segment lost with ``probability`` arrives after its retransmissions (the module docstring's formula)."""

    kind: ClassVar[str] = "loss"
    probability: float
    rto_s: float = RTO_MIN_S

    def __post_init__(self) -> None:
        _check_probability("probability", self.probability, one_allowed=False)
        if not (math.isfinite(self.rto_s) and 0 < self.rto_s <= MAX_LATENCY_S):
            raise UserError(f"rto: got {self.rto_s!r}, expected seconds in (0, {MAX_LATENCY_S:g}]")

    def on_connect(self, rng: random.Random) -> Action:
        return Action("forward", retransmit_wait_s(self.probability, RTO_INITIAL_S, rng))

    def on_chunk(self, direction: Direction, rng: random.Random) -> Action:
        return Action("forward", retransmit_wait_s(self.probability, self.rto_s, rng))


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Hang(Toxic):
    """A share ``probability`` of the connections is accepted and never answered, until the hang ends."""

    kind: ClassVar[str] = "hang"
    probability: float = 1.0

    def __post_init__(self) -> None:
        _check_probability("probability", self.probability)

    def applies_to_connection(self, rng: random.Random) -> bool:
        return self.probability >= 1 or rng.random() < self.probability

    def on_connect(self, rng: random.Random) -> Action:
        return HOLD

    def on_chunk(self, direction: Direction, rng: random.Random) -> Action:
        return HOLD


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Reset(Toxic):
    """A share ``probability`` of the connections is reset: new ones at once, open ones at their next chunk."""

    kind: ClassVar[str] = "reset"
    probability: float = 1.0

    def __post_init__(self) -> None:
        _check_probability("probability", self.probability)

    def applies_to_connection(self, rng: random.Random) -> bool:
        return self.probability >= 1 or rng.random() < self.probability

    def on_connect(self, rng: random.Random) -> Action:
        return RESET

    def on_chunk(self, direction: Direction, rng: random.Random) -> Action:
        return RESET


#: Each kind's toxic, by the name scenarios and the control socket use.
TOXIC_TYPES: dict[str, type[Toxic]] = {toxic.kind: toxic for toxic in (Delay, Loss, Hang, Reset)}


def toxic_from_json(raw: Mapping[str, Any]) -> Toxic:
    """The toxic ``raw`` describes (``{"kind": "delay", "latency_s": 0.2, ...}``); a :class:`UserError` if none."""
    if not isinstance(raw, Mapping):
        raise UserError(f"toxic: got {raw!r:.80}, expected an object with a kind")
    kind = raw.get("kind")
    toxic_type = TOXIC_TYPES.get(kind) if isinstance(kind, str) else None
    if toxic_type is None:
        raise UserError(f"toxic kind: got {kind!r:.40}, expected one of {', '.join(TOXIC_TYPES)}")
    fields = {field.name: field for field in dataclasses.fields(toxic_type)}
    settings = {key: value for key, value in raw.items() if key != "kind"}
    unknown = sorted(set(settings) - set(fields))
    if unknown:
        raise UserError(f"{kind}: unknown field {unknown[0]!r:.40}; fields: {', '.join(fields)}")
    for key, value in settings.items():
        if key != "direction" and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise UserError(f"{kind}.{key}: got {value!r:.40}, expected a number")
    try:
        return toxic_type(**settings)
    except TypeError as error:
        raise UserError(f"{kind}: {error}") from None


def combine(actions: list[Action]) -> Action:
    """The actions of every toxic in force on one chunk, as one: a reset beats a hold beats forwarding;
    delays add up (a delayed link that also loses segments delays by both)."""
    if any(action.verb == "reset" for action in actions):
        return RESET
    if any(action.verb == "hold" for action in actions):
        return HOLD
    return Action("forward", math.fsum(action.delay_s for action in actions))
