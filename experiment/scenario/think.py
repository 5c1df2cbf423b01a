"""Think time: how long a closed-loop user waits before its next logical request.

Written ``exponential:MEAN``, ``constant:T`` or ``between:MIN,MAX`` (Locust's
``between``), durations with units. The seed's Go client draws ``exp(mean 10 s)``.
"""

from __future__ import annotations

import dataclasses
import math
import random
from typing import Literal

from retrystorm.durations import format_duration, parse_duration
from retrystorm.errors import SpecError

ThinkKind = Literal["exponential", "constant", "between"]
ACCEPTED = "exponential:MEAN, constant:T or between:MIN,MAX (durations with a unit, e.g. exponential:10s)"


@dataclasses.dataclass(frozen=True, slots=True)
class ThinkTime:
    """A think-time distribution.

    ``exponential``: ``Exp(mean = low_s)``; ``constant``: ``low_s``;
    ``between``: ``U(low_s, high_s)``.
    """

    kind: ThinkKind
    low_s: float
    high_s: float = 0.0

    def __post_init__(self) -> None:
        values = (self.low_s, self.high_s) if self.kind == "between" else (self.low_s,)
        if not all(0 <= value < math.inf for value in values):
            # a user that never sends again is no user: the sampler would divide by inf
            shown = ",".join(format_duration(value) if value >= 0 else f"{value:g}s" for value in values)
            raise SpecError(f"think time: got {self.kind}:{shown}, expected finite durations >= 0: {ACCEPTED}")
        if self.kind == "between" and self.high_s < self.low_s:
            raise SpecError(f"think time: got {self.text()}, expected MIN <= MAX")

    @property
    def mean_s(self) -> float:
        """The mean think time in seconds."""
        return (self.low_s + self.high_s) / 2 if self.kind == "between" else self.low_s

    def sample(self, rng: random.Random) -> float:
        """One think time drawn from ``rng``."""
        if self.kind == "constant":
            return self.low_s
        if self.kind == "between":
            return rng.uniform(self.low_s, self.high_s)
        return rng.expovariate(1.0 / self.low_s) if self.low_s > 0 else 0.0

    def text(self) -> str:
        """The spec text: ``exponential:10s``, ``between:1s,3s``."""
        if self.kind == "between":
            return f"between:{format_duration(self.low_s)},{format_duration(self.high_s)}"
        return f"{self.kind}:{format_duration(self.low_s)}"

    @classmethod
    def parse(cls, text: object) -> ThinkTime:
        """Parse ``exponential:10s``, ``constant:1s`` or ``between:1s,3s``."""
        if isinstance(text, ThinkTime):
            return text
        if not isinstance(text, str):
            raise SpecError(f"got {text!r}; expected {ACCEPTED}")
        kind, _, body = text.strip().partition(":")
        if kind not in ("exponential", "constant", "between") or not body:
            raise SpecError(f"got {text!r}; expected {ACCEPTED}")
        parts = body.split(",")
        if len(parts) != (2 if kind == "between" else 1):
            raise SpecError(f"got {text!r}; expected {ACCEPTED}")
        values = [parse_duration(part.strip(), what="think time") for part in parts]
        if kind == "between":
            return cls("between", values[0], values[1])
        return cls("exponential" if kind == "exponential" else "constant", values[0])
