"""A baseline: every request takes the same time, whatever the load."""

from __future__ import annotations

import dataclasses
from typing import TypeVar

from retrystorm.spec import DURATION, param
from retrystorm.target.models.base import MAX_DURATION_S, OverloadModel, register_model
from retrystorm.target.models.fifo import FifoServer

P = TypeVar("P")


@register_model("fixed")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class FixedModel(OverloadModel):
    """``delay(c) = base_delay`` for any concurrency ``c``: a server that never overloads.

    A request is released exactly ``base_delay`` after it arrived (no tick), so
    ``fixed:base_delay=0`` answers at once and measures the shell's own overhead.
    """

    base_delay_s: float = param(
        "base_delay", DURATION, 0.1, "delay of every request", at_least=0, at_most=MAX_DURATION_S
    )

    def start(self, now_s: float) -> FixedServer[P]:
        return FixedServer(self)


class FixedServer(FifoServer[P]):
    """Releases each request ``base_delay`` after its arrival."""

    def __init__(self, model: FixedModel) -> None:
        super().__init__()
        self.model = model

    @property
    def delay_s(self) -> float:
        return self.model.base_delay_s

    def _is_done(self, admitted_s: float, now_s: float, in_flight: int) -> bool:
        # The same sum as next_wakeup_s, so a wake-up at that time always releases.
        return admitted_s + self.model.base_delay_s <= now_s

    def next_wakeup_s(self, now_s: float) -> float | None:
        if not self._queue:
            return None
        return self._queue[0][0] + self.model.base_delay_s

    def reconfigure(self, model: OverloadModel) -> None:
        if not isinstance(model, FixedModel):
            super().reconfigure(model)
            return
        self.model = model
