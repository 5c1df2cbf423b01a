"""Time series sampled on a fixed grid, as both the simulator and the live runner record them."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence


@dataclasses.dataclass(frozen=True, slots=True)
class Samples:
    """Series on the grid ``start_s + i * step_s``.

    Interval ``i`` covers ``[start_s + i*step_s, start_s + (i+1)*step_s)``. *Rates*
    (``goodput``, ``attempts``) are per second over the interval; *gauges*
    (``in_flight``, ``delay_s``) are read at the interval's end, ``None`` where no
    reading exists (a live target cannot be scraped while it is paused). The fields are
    named as the series both record them (:mod:`retrystorm.loadgen.series_names`).
    """

    step_s: float
    goodput: Sequence[float]
    in_flight: Sequence[float | None]
    delay_s: Sequence[float | None]
    attempts: Sequence[float] = ()
    start_s: float = 0.0
    #: Client-side signals of the server's state, for a service without server readings:
    #: the mean latency of the attempts that ended in each interval (``None``: none ended),
    #: and attempts timed out per second. Empty when not recorded.
    attempt_latency_s: Sequence[float | None] = ()
    timeouts: Sequence[float] = ()
    #: Fresh requests (:mod:`retrystorm.runner.fresh_probe`): 1.0 where every one sent in the interval was answered
    #: in time, 0.0 where one was not, ``None`` where none was sent. Empty when not recorded (the simulator).
    fresh_in_time: Sequence[float | None] = ()

    def __post_init__(self) -> None:
        if self.step_s <= 0:
            raise ValueError("step_s must be > 0")
        if not len(self.goodput) == len(self.in_flight) == len(self.delay_s):
            raise ValueError("goodput, in_flight and delay_s must have one value per interval")
        if len(self.attempt_latency_s) not in (0, len(self.goodput)) or len(self.timeouts) not in (
            0,
            len(self.goodput),
        ):
            raise ValueError("attempt_latency_s and timeouts must be empty or have one value per interval")
        if len(self.fresh_in_time) not in (0, len(self.goodput)):
            raise ValueError("fresh_in_time must be empty or have one value per interval")

    @property
    def has_server_gauges(self) -> bool:
        """Whether any in-flight reading exists (else the server is judged from the clients' signals)."""
        return any(value is not None for value in self.in_flight)

    def __len__(self) -> int:
        return len(self.goodput)

    def interval_start(self, index: int) -> float:
        """When interval ``index`` starts."""
        return self.start_s + index * self.step_s

    def gauge_time(self, index: int) -> float:
        """When the gauges of interval ``index`` were read (its end)."""
        return self.start_s + (index + 1) * self.step_s
