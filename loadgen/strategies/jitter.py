"""Jitter modes applied to a base delay ``d``.

===============  ==========================  ==========================================
mode             formula                     source
===============  ==========================  ==========================================
``none``         ``d``                       plain exponential backoff
``full``         ``U(0, d)``                 AWS Architecture Blog, "Exponential
                                             Backoff And Jitter" (2015)
``equal``        ``d/2 + U(0, d/2)``         same post
``proportional`` ``d * (1 + U(-j, j))``      gRPC connection-backoff spec (j = 0.2)
``normal``       ``d + N(0, j*d)``, clipped  the seed article's pseudo-code; clipped to
                 to ``[0, 2d]``               ``[0, 2d]``, which keeps the mean at ``d``
===============  ==========================  ==========================================
"""

from __future__ import annotations

import dataclasses
import math
import random

from retrystorm.errors import SpecError, shown
from retrystorm.spec import ParamType

MODES = ("none", "full", "equal", "proportional", "normal")
_NEEDS_AMOUNT = ("proportional", "normal")
#: The ceiling of ``normal:J``: clipped to ``[0, 2d]``, a normal jitter with J above 3 or so
#: is already a coin toss between 0 and 2d; a hundred stops absurd input, and keeps
#: ``J * d`` finite for every delay a strategy takes.
MAX_NORMAL_JITTER = 100.0
ACCEPTED = "none, full, equal, proportional:J (0 < J <= 1) or normal:J (0 < J <= 100)"


@dataclasses.dataclass(frozen=True, slots=True)
class Jitter:
    """A jitter mode and, for ``proportional`` and ``normal``, its relative amount."""

    mode: str = "none"
    amount: float = 0.0

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise SpecError(f"jitter: got {shown(self.mode)}, expected {ACCEPTED}")
        if self.mode in _NEEDS_AMOUNT:
            upper = 1.0 if self.mode == "proportional" else MAX_NORMAL_JITTER
            if not (0 < self.amount <= upper and math.isfinite(self.amount)):
                raise SpecError(f"jitter: got {self.text()}, expected {ACCEPTED}")
        elif self.amount != 0:
            raise SpecError(f"jitter: {self.mode} takes no amount; expected {ACCEPTED}")

    def apply(self, delay_s: float, rng: random.Random) -> float:
        """The jittered delay; within ``[0, delay_s * self.bound_factor]``."""
        if self.mode == "none":
            return delay_s
        # U(0, x) as x * random(): what rng.uniform(0, x) computes, without its call
        if self.mode == "full":
            return delay_s * rng.random()
        if self.mode == "equal":
            half = delay_s / 2
            return half + half * rng.random()
        if self.mode == "proportional":
            return delay_s * (1 + rng.uniform(-self.amount, self.amount))
        jittered = delay_s + rng.gauss(0.0, self.amount * delay_s)
        return min(max(jittered, 0.0), 2 * delay_s)

    @property
    def bound_factor(self) -> float:
        """The largest jittered delay as a multiple of the base delay."""
        if self.mode == "proportional":
            return 1 + self.amount
        return 2.0 if self.mode == "normal" else 1.0

    def text(self) -> str:
        """``full``, ``proportional:0.2``..."""
        return f"{self.mode}:{self.amount!r}" if self.mode in _NEEDS_AMOUNT else self.mode

    @classmethod
    def parse(cls, text: str, what: str = "jitter") -> Jitter:
        """Parse ``none``, ``full``, ``equal``, ``proportional:0.2``, ``normal:0.1``."""
        mode, _, amount = text.strip().partition(":")
        if mode not in MODES:
            raise SpecError(f"{what}: got {shown(text)}, expected {ACCEPTED}")
        if mode in _NEEDS_AMOUNT and not amount:
            raise SpecError(f"{what}: {mode} needs an amount, like {mode}:0.1")
        try:
            value = float(amount) if amount else 0.0
        except ValueError:
            raise SpecError(f"{what}: got {shown(text)}, expected {ACCEPTED}") from None
        try:
            return cls(mode, value)
        except SpecError as error:
            raise SpecError(f"{what}: got {shown(text)}, expected {ACCEPTED}") from error


def _jitter_from_value(value: object, what: str) -> Jitter:
    if isinstance(value, Jitter):
        return value
    if not isinstance(value, str):
        raise SpecError(f"{what}: got {shown(value)}, expected {ACCEPTED}")
    return Jitter.parse(value, what)


JITTER = ParamType(
    "jitter: none|full|equal|proportional:J|normal:J",
    f"a jitter mode: {ACCEPTED}",
    Jitter.parse,
    _jitter_from_value,
    Jitter.text,
)
