"""Table-based backoff: base delays indexed by retry number, each randomised."""

from __future__ import annotations

import dataclasses
import random

from retrystorm.loadgen.strategies.base import MAX_DELAY_S, RetryStrategy, register_strategy
from retrystorm.spec import DURATION_LIST, param

#: The seed article's array, in seconds: 0, 10, 10, 100, 100, 500, 500, 3000, 3000, 5000 ms.
SEED_TABLE_S = (0.0, 0.01, 0.01, 0.1, 0.1, 0.5, 0.5, 3.0, 3.0, 5.0)


@register_strategy("table")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TableBackoff(RetryStrategy):
    """Array-based backoff: ``d_n = table[min(n, len) - 1] * U(0.5, 1.5)``.

    The array-based policy of the seed article: retry ``n`` looks up the ``n``-th
    entry, saturating at the last one, and randomises it uniformly to
    ``[0.5 * d, 1.5 * d)``. Its default table is 0, 10, 10, 100, 100, 500, 500, 3000,
    3000, 5000 ms. Use it when the delays should follow a hand-tuned curve.
    """

    delays_s: tuple[float, ...] = param(
        "delays",
        DURATION_LIST,
        SEED_TABLE_S,
        "base delay of retry 1, 2, ... (the last repeats)",
        at_least=0,
        at_most=MAX_DELAY_S,
    )

    def _validate(self) -> None:
        if not self.delays_s:
            raise self._fail("delays", "needs at least one duration, like [100ms]")

    def delay(self, attempt: int, previous_delay_s: float, rng: random.Random) -> float:
        base = self.delays_s[min(max(attempt, 1), len(self.delays_s)) - 1]
        return base * rng.uniform(0.5, 1.5)

    @property
    def max_delay_s(self) -> float:
        return 1.5 * max(self.delays_s)
