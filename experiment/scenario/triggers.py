"""The triggers a scenario's ``faults:`` lists: one kind per entry, on the timeline rules of a pause.

::

    faults:
      - {pause: target, at: 20s, for: 10s}                                 # freeze the target
      - {slow: target, capacity: 0.4, at: 60s, for: 10s}                   # 40 % of its capacity
      - {spike: load, factor: 2, at: 20s, for: 5s}                         # twice the load
      - {errors: target, status: 503, probability: 0.5, at: 30s, for: 5s} # half the attempts fail
      - {delay: target, latency: 200ms, at: 20s, for: 10s}                 # and loss, hang, reset, partition

Every kind takes ``at``, ``for``, ``repeat`` and ``random_start``
(:class:`~retrystorm.experiment.scenario.timeline.FaultPlan`); an entry without a kind is a pause
of ``target``. Each kind has ceilings: ``capacity`` from 0.001 to 1, ``factor`` from 1 to
:data:`MAX_SPIKE_FACTOR`, ``status`` 429 or 5xx, ``probability`` in (0, 1], ``for`` at
most :data:`MAX_TRIGGER_S`. What a kind does, live and simulated, is in
:mod:`retrystorm.experiment.scenario.timeline` and docs/concepts/triggers.md; the network kinds (``delay``,
``loss``, ``hang``, ``reset``, ``partition``) in :mod:`retrystorm.experiment.scenario.network`.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, Tag, field_validator

from retrystorm.chaos.network.toxics import MAX_LATENCY_S  # the fault proxy's ceiling: one for both
from retrystorm.experiment.scenario.fields import Duration, PositiveDuration
from retrystorm.experiment.scenario.network import NETWORK_WINDOW_TYPES
from retrystorm.experiment.scenario.timeline import WINDOW_TYPES, FaultPlan
from retrystorm.loadgen.spikes import MAX_SPIKE_FACTOR  # the load generator's ceiling: one for both
from retrystorm.target.faults import is_injectable_status
from retrystorm.target.models.capacity import MIN_CAPACITY  # the target's floor: one for both

#: The longest any one trigger lasts (a pause is undone by its deadline: one hour at most).
MAX_TRIGGER_S = 3600.0
#: The most windows a timeline holds once repeats are expanded.
MAX_WINDOWS = 10_000
#: The longest target name.
MAX_TARGET_CHARS = 200
#: The kinds of trigger, as the key that names each one's target.
KINDS = ("pause", "slow", "spike", "errors", "delay", "loss", "hang", "reset", "partition")
#: The fields every kind takes.
TIMING = ("at", "for", "repeat", "random_start")
EXAMPLE = "{slow: target, capacity: 0.4, at: 60s, for: 10s}"


class _Strict(BaseModel):
    # each field's docstring is its description: the scenario reference is generated from them
    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True, use_attribute_docstrings=True)


class Repeat(_Strict):
    """Start the fault again every ``every``, ``times`` times in all (default: until the end)."""

    every: PositiveDuration
    """The time from one start to the next."""
    times: int | None = Field(default=None, ge=1, le=MAX_WINDOWS)
    """How many times in all; none: until the run ends."""


class _Timed(_Strict):
    """``for`` seconds from ``at``; optionally repeated, optionally at a random start within
    ``random_start`` after each nominal start."""

    kind: ClassVar[str] = "pause"

    at: Duration
    """When the trigger starts, from the load's start."""
    for_s: PositiveDuration = Field(alias="for", le=MAX_TRIGGER_S)
    """How long it lasts (at most 1h)."""
    repeat: Repeat | None = None
    """Start it again every ``every``, ``times`` times in all."""
    random_start: Duration = 0.0
    """Each start is drawn uniformly from ``[start, start + random_start)``."""

    @property
    def target(self) -> str:
        """What the trigger acts on: a target's name, or ``load``."""
        return str(getattr(self, self.kind))

    def settings(self) -> dict[str, float | int]:
        """The kind's own fields, as its window takes them."""
        return {}

    def plan(self) -> FaultPlan:
        """This fault in seconds, for :func:`~retrystorm.experiment.scenario.timeline.expand_faults`."""
        every = self.repeat.every if self.repeat else None
        times = self.repeat.times if self.repeat else None
        settings = tuple(self.settings().items())
        window = {**WINDOW_TYPES, **NETWORK_WINDOW_TYPES}[self.kind]
        return FaultPlan(self.target, self.at, self.for_s, every, times, self.random_start, window, settings)


class Fault(_Timed):
    """Pause target ``pause`` (``SIGSTOP``, ``docker pause``): it does nothing until the resume."""

    kind: ClassVar[str] = "pause"
    pause: str = Field(default="target", min_length=1, max_length=MAX_TARGET_CHARS)
    """What to pause: ``target`` (the scenario's target)."""


class SlowFault(_Timed):
    """Run target ``slow`` at ``capacity`` of its capacity: its work takes ``1 / capacity`` as long."""

    kind: ClassVar[str] = "slow"
    slow: str = Field(min_length=1, max_length=MAX_TARGET_CHARS)
    """What to slow: ``target``."""
    capacity: float = Field(ge=MIN_CAPACITY, le=1)
    """The fraction of its capacity it runs at, from 0.001 to 1: 0.4 is 40 %."""

    def settings(self) -> dict[str, float | int]:
        return {"capacity": self.capacity}


class SpikeFault(_Timed):
    """Multiply the load by ``factor``: ``users * (factor - 1)`` extra users, or arrival streams in open loop."""

    kind: ClassVar[str] = "spike"
    spike: Literal["load"]
    """Always ``load``."""
    factor: float = Field(ge=1, le=MAX_SPIKE_FACTOR)
    """The load in force over the run's: ``users * (factor - 1)`` extra users (open loop: the rate times ``factor``);
    1 to 100.
    """

    def settings(self) -> dict[str, float | int]:
        return {"factor": self.factor}


class ErrorsFault(_Timed):
    """Answer each attempt reaching target ``errors`` at once with ``status``, with ``probability``."""

    kind: ClassVar[str] = "errors"
    errors: str = Field(min_length=1, max_length=MAX_TARGET_CHARS)
    """What fails: ``target``."""
    status: int = 503
    """The status each failed attempt gets: 429 or 500 to 599."""
    probability: float = Field(default=1.0, gt=0, le=1)
    """The chance an attempt reaching the target fails, in (0, 1]."""

    @field_validator("status")
    @classmethod
    def _status(cls, status: int) -> int:
        if not is_injectable_status(status):
            raise ValueError(f"got {status}; expected 429 or 500 to 599 (what a retrying client retries)")
        return status

    def settings(self) -> dict[str, float | int]:
        return {"status": self.status, "probability": self.probability}


class DelayFault(_Timed):
    """Answers from target ``delay`` reach their clients ``latency`` ± ``jitter`` later (a fault proxy's delay)."""

    kind: ClassVar[str] = "delay"
    delay: str = Field(min_length=1, max_length=MAX_TARGET_CHARS)
    """Whose answers are delayed: ``target``."""
    latency: PositiveDuration = Field(le=MAX_LATENCY_S)
    """The time added to each answer."""
    jitter: Duration = Field(default=0.0, le=MAX_LATENCY_S)
    """Each answer's added time varies by up to this, either way."""

    def settings(self) -> dict[str, float | int]:
        return {"latency_s": self.latency, "jitter_s": self.jitter}


class LossFault(_Timed):
    """Segments to and from target ``loss`` are lost with ``probability`` and come after TCP's retransmissions."""

    kind: ClassVar[str] = "loss"
    loss: str = Field(min_length=1, max_length=MAX_TARGET_CHARS)
    """Whose segments are lost: ``target``."""
    probability: float = Field(gt=0, lt=1)
    """The chance a segment (request or answer) is lost and waits for TCP's retransmissions, in (0, 1)."""

    def settings(self) -> dict[str, float | int]:
        return {"probability": self.probability}


class HangFault(_Timed):
    """A share ``probability`` of the connections to target ``hang`` is accepted and never answered."""

    kind: ClassVar[str] = "hang"
    hang: str = Field(min_length=1, max_length=MAX_TARGET_CHARS)
    """Whose connections hang: ``target``."""
    probability: float = Field(default=1.0, gt=0, le=1)
    """The share of connections accepted and never answered while the hang lasts, in (0, 1]."""

    def settings(self) -> dict[str, float | int]:
        return {"probability": self.probability}


class ResetFault(_Timed):
    """A share ``probability`` of the connections to target ``reset`` is reset."""

    kind: ClassVar[str] = "reset"
    reset: str = Field(min_length=1, max_length=MAX_TARGET_CHARS)
    """Whose connections are reset: ``target``."""
    probability: float = Field(default=1.0, gt=0, le=1)
    """The share of connections reset (a connection error at once), in (0, 1]."""

    def settings(self) -> dict[str, float | int]:
        return {"probability": self.probability}


class PartitionFault(_Timed):
    """The host of target ``partition`` is cut off from the hosts that send it load (routes, by its agent)."""

    kind: ClassVar[str] = "partition"
    partition: str = Field(min_length=1, max_length=MAX_TARGET_CHARS)
    """Whose host is cut off from the hosts that send it load: ``target``."""


#: Each kind's scenario model.
TRIGGER_TYPES: dict[str, type[_Timed]] = {
    model.kind: model
    for model in (
        Fault, SlowFault, SpikeFault, ErrorsFault, DelayFault, LossFault, HangFault, ResetFault, PartitionFault,
    )
}  # fmt: skip


def _kind_of(raw: Any) -> str | None:
    """The kind an entry names (a pause when it names none); ``None`` for what is no entry."""
    if isinstance(raw, _Timed):
        return raw.kind
    if isinstance(raw, dict):
        kinds = [kind for kind in KINDS if kind in raw]
        return kinds[0] if len(kinds) == 1 else "pause"
    return None


def _one_kind(raw: Any) -> Any:
    """Refuse an entry of two kinds, or one whose unknown key is no kind, with the kinds accepted."""
    if isinstance(raw, _Timed):
        return raw
    if not isinstance(raw, dict):
        raise ValueError(f"got {raw!r}; expected a trigger, e.g. {EXAMPLE}")  # noqa: TRY004 - pydantic wants ValueError
    kinds = [kind for kind in KINDS if kind in raw]
    if len(kinds) > 1:
        raise ValueError(f"names {' and '.join(kinds)}: one trigger per entry; kinds: {', '.join(KINDS)}")
    if not kinds:
        unknown = [str(key) for key in raw if key not in TIMING]
        if unknown:
            raise ValueError(
                f"{unknown[0]!r} is no kind of trigger; kinds: {', '.join(KINDS)} (each with {', '.join(TIMING)}), "
                f"e.g. {EXAMPLE}"
            )
    return raw


Trigger = Annotated[
    Annotated[
        Annotated[Fault, Tag("pause")]
        | Annotated[SlowFault, Tag("slow")]
        | Annotated[SpikeFault, Tag("spike")]
        | Annotated[ErrorsFault, Tag("errors")]
        | Annotated[DelayFault, Tag("delay")]
        | Annotated[LossFault, Tag("loss")]
        | Annotated[HangFault, Tag("hang")]
        | Annotated[ResetFault, Tag("reset")]
        | Annotated[PartitionFault, Tag("partition")],
        Discriminator(_kind_of),
    ],
    BeforeValidator(_one_kind),
]
"""One entry of ``faults:``: a pause, a slow, a spike, errors, or a fault in the network."""
