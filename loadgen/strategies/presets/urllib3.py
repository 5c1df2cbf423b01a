"""``urllib3``: urllib3's ``Retry``, what ``requests`` users get through it."""

from __future__ import annotations

import dataclasses
import random
from typing import ClassVar

from retrystorm.loadgen.strategies.base import MAX_DELAY_S, register_strategy
from retrystorm.loadgen.strategies.controls import RetryAfter
from retrystorm.loadgen.strategies.presets.base import Preset
from retrystorm.loadgen.strategies.presets.params import BOOLEAN, STATUSES
from retrystorm.loadgen.strategies.retry_on import RetryOn
from retrystorm.spec import DURATION, INTEGER, NUMBER, param

#: ``Retry.RETRY_AFTER_STATUS_CODES``: retried without a forcelist when they carry ``Retry-After``.
RETRY_AFTER_STATUS_CODES = frozenset({413, 429, 503})


@register_strategy("urllib3")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Urllib3Retry(Preset):
    """urllib3 Retry: retry n waits 0 for n = 1, else min(backoff_max, backoff_factor * 2^(n-1) + U(0, backoff_jitter)).

    urllib3 2.8.0 ``src/urllib3/util/retry.py``: ``get_backoff_time`` (0 until two
    consecutive errors, then ``backoff_factor * 2 ** (errors - 1)``, plus
    ``random.random() * backoff_jitter`` when that is not 0, capped at ``backoff_max``,
    ``DEFAULT_BACKOFF_MAX`` 120 s), ``is_retry``, ``sleep_for_retry``.

    **What "the default" means.** The defaults here are ``Retry.DEFAULT = Retry(3)``,
    what a urllib3 ``PoolManager`` retries with when given nothing: 3 retries, no
    backoff, no status forcelist. ``requests`` does not use it: its ``HTTPAdapter``
    makes ``Retry(0, read=False)`` (requests v2.34.2 ``src/requests/adapters.py``,
    ``DEFAULT_RETRIES`` 0): no retry at all, ``urllib3:total=0``. Users who want
    retries mount an adapter with a ``Retry`` of their own; a common configured form
    (a choice, not a library default) is
    ``urllib3:total=5,backoff_factor=0.5,status_forcelist=[429,500,502,503,504]``.

    * **Attempts**: ``total`` + 1 (the per-kind counters ``connect``, ``read``,
      ``status`` are left at ``None``: ``total`` decides).
    * **Retry conditions**: timeouts and connection errors (read errors are retried for
      idempotent methods: the user's ``GET`` is one), the ``status_forcelist``, and
      without it 413, 429 and 503 only when they carry ``Retry-After`` (with
      ``respect_retry_after_header``).
    * ``Retry-After`` above 0 replaces the backoff (``sleep_for_retry``; urllib3's 6 h
      ``retry_after_max`` is not applied: the target sends at most a day).
    """

    library: ClassVar[str] = "urllib3 2.8.0"
    total: int = param("total", INTEGER, 3, "retries in all", at_least=0)
    backoff_factor: float = param(
        "backoff_factor", NUMBER, 0.0, "backoff_factor, seconds", at_least=0, at_most=MAX_DELAY_S
    )
    backoff_max_s: float = param("backoff_max", DURATION, 120.0, "backoff_max", at_least=0)
    backoff_jitter_s: float = param("backoff_jitter", DURATION, 0.0, "backoff_jitter", at_least=0)
    status_forcelist: tuple[int, ...] = param("status_forcelist", STATUSES, (), "statuses always retried")
    respect_retry_after_header: bool = param(
        "respect_retry_after_header", BOOLEAN, True, "retry 413/429/503 with Retry-After; wait what it says"
    )

    def delay(self, attempt: int, previous_delay_s: float, rng: random.Random) -> float:
        if attempt <= 1:
            return 0.0
        value = 0.0
        if self.backoff_factor:
            try:
                value = self.backoff_factor * float(2 ** (attempt - 1))
            except OverflowError:
                value = float("inf")
        if self.backoff_jitter_s != 0.0:
            value += rng.random() * self.backoff_jitter_s
        return float(max(0.0, min(self.backoff_max_s, value)))

    @property
    def max_delay_s(self) -> float:
        return self.backoff_max_s

    def attempt_cap(self) -> int:
        return self.total + 1

    def conditions(self) -> RetryOn:
        after = RETRY_AFTER_STATUS_CODES if self.respect_retry_after_header and self.total else frozenset()
        forced = frozenset(s for s in self.status_forcelist if s >= 400)
        return RetryOn(timeout=True, connection=True, statuses=forced, with_retry_after=after - forced)

    def retry_after(self) -> RetryAfter:
        return RetryAfter.EXACT if self.respect_retry_after_header else RetryAfter.IGNORE
