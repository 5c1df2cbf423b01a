"""``polly``: Polly v8's retry strategy (``RetryStrategyOptions``), delays exactly as ``RetryHelper`` computes them."""

from __future__ import annotations

import dataclasses
import math
import random
from typing import ClassVar

from retrystorm.loadgen.strategies.base import register_strategy
from retrystorm.loadgen.strategies.controls import RetryAfter
from retrystorm.loadgen.strategies.presets.base import Preset
from retrystorm.loadgen.strategies.presets.params import BOOLEAN
from retrystorm.loadgen.strategies.retry_on import RETRY_ON, RetryOn
from retrystorm.spec import DURATION, INTEGER, choice, optional, param

#: ``TimeSpan.MaxValue`` less ``RetryHelper``'s 1,000 ticks of slack, in seconds (1 tick = 100 ns).
MAX_DELAY_S = (2**63 - 1 - 1000) / 1e7
_TICK_S = 1e-7
_JITTER_FACTOR = 0.5
_EXPONENTIAL_FACTOR = 2.0
_P_FACTOR = 4.0
_RP_SCALING = 1 / 1.4
#: Polly caps ``Delay`` and ``MaxDelay`` at one day (``[Range]`` on ``RetryStrategyOptions``).
ONE_DAY_S = 86_400.0


def _formula(t: float) -> float:
    """``2^t * tanh(sqrt(4 t))``: decorrelated jitter v2's cumulative curve."""
    try:
        return math.pow(_EXPONENTIAL_FACTOR, t) * math.tanh(math.sqrt(_P_FACTOR * t))
    except OverflowError:
        return math.inf


def decorrelated_jitter_v2(attempt: int, base_s: float, prev: float, r: float) -> tuple[float, float]:
    """``RetryHelper.DecorrelatedJitterBackoffV2``: the delay and the new ``prev``.

    ``attempt`` is Polly's, 0 for the first retry; ``r`` the one uniform draw.
    ``t = attempt + r``, ``next = 2^t * tanh(sqrt(4 t))``, delay ``(next - prev) / 1.4 *
    base`` truncated to whole ticks; ``prev`` becomes ``next``.
    """
    following = _formula(attempt + r)
    if math.isinf(following):
        return MAX_DELAY_S, following
    ticks = math.floor(min((following - prev) * _RP_SCALING * (base_s / _TICK_S), MAX_DELAY_S / _TICK_S))
    return ticks * _TICK_S, following


def apply_jitter(delay_s: float, r: float) -> float:
    """``RetryHelper.ApplyJitter``: ``d + d * 0.5 * r - d * 0.5 / 2``, uniform over ``[0.75 d, 1.25 d)``."""
    offset = delay_s * _JITTER_FACTOR / 2
    return delay_s + (delay_s * _JITTER_FACTOR * r - offset)


@register_strategy("polly")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PollyRetry(Preset):
    """Polly v8 retry: by default a constant 2 s, 3 retries; linear and exponential, with or without jitter.

    Polly 8.7.0 (App-vNext/Polly), ``src/Polly.Core/Retry/RetryConstants.cs``
    (``DefaultBackoffType`` Constant, ``DefaultRetryCount`` 3, ``DefaultBaseDelay``
    2 s), ``RetryStrategyOptions.TResult.cs`` (``UseJitter`` false, ``MaxDelay`` none)
    and ``RetryHelper.cs``, with Polly's ``attempt`` a = n - 1 for retry n:

    * constant: ``delay``; linear: ``(a + 1) * delay``; exponential: ``2^a * delay``;
    * with jitter, constant and linear: ``d * U(0.75, 1.25)`` (``ApplyJitter``);
      exponential: decorrelated jitter v2, ``(f(a + r) - f(a - 1 + r')) / 1.4 * delay``
      with ``f(t) = 2^t * tanh(sqrt(4 t))``, ``r`` this retry's draw and ``r'`` the
      previous one's (``f`` of the first retry's predecessor is 0), in whole ticks;
    * then at most ``max_delay``.

    The state (``prev``) lives in the retry loop of one call: a sequence that carries it
    goes through :meth:`next_delay`; :meth:`delay` alone draws retry n's delay from its
    exact distribution with both draws fresh.

    * **Attempts**: ``max_retry_attempts`` + 1.
    * **Retry conditions**: ``ShouldHandle``'s default handles every exception but
      ``OperationCanceledException`` and no result: a connection error
      (``HttpRequestException``) and an attempt timeout (``TimeoutRejectedException``
      of a timeout strategy inside the retry, as a per-attempt timeout needs) are
      retried; an HTTP error status is a result, not retried. Retrying statuses takes
      a ``ShouldHandle`` of one's own, ``retry_on=[timeout,connection,5xx,408,429]`` as
      Microsoft.Extensions.Http.Resilience's transient predicate does. ``Retry-After``
      is not read (no ``DelayGenerator`` by default); ``retry_after=true`` reads it as
      Microsoft.Extensions.Http.Resilience's ``HttpRetryStrategyOptions`` does
      (``ShouldRetryAfterHeader``, on by default there; dotnet/extensions
      ``src/Libraries/Microsoft.Extensions.Http.Resilience/Polly/HttpRetryStrategyOptions.cs``):
      its ``DelayGenerator`` returns the header's delay, which Polly then waits instead of its
      own. That handler's retry is
      ``polly:backoff=exponential,jitter=true,retry_after=true,retry_on=[timeout,connection,5xx,408,429]``
      (its circuit breaker is not modelled).
    """

    library: ClassVar[str] = "Polly 8.7.0"
    stateful: ClassVar[bool] = True
    max_retry_attempts: int = param("max_retry_attempts", INTEGER, 3, "retries after the first attempt", at_least=1)
    backoff: str = param("backoff", choice("constant", "linear", "exponential"), "constant", "BackoffType")
    delay_s: float = param("delay", DURATION, 2.0, "Delay, the base delay", at_least=0, at_most=ONE_DAY_S)
    jitter: bool = param("jitter", BOOLEAN, False, "UseJitter")
    max_delay_cap_s: float | None = param(
        "max_delay", optional(DURATION), None, "MaxDelay (none: no cap)", at_least=0, at_most=ONE_DAY_S
    )
    retry_on: RetryOn = param("retry_on", RETRY_ON, RetryOn(timeout=True, connection=True), "ShouldHandle")
    reads_retry_after: bool = param(
        "retry_after", BOOLEAN, False, "a DelayGenerator reading Retry-After (ShouldRetryAfterHeader)"
    )

    def next_delay(
        self, attempt: int, previous_delay_s: float, state: float, rng: random.Random
    ) -> tuple[float, float]:
        a = attempt - 1
        base = self.delay_s
        if base == 0:
            return 0.0, state
        if self.jitter and self.backoff == "exponential":
            delay, state = decorrelated_jitter_v2(a, base, state, rng.random())
        else:
            delay = self._plain(a)
            if self.jitter:
                delay = apply_jitter(delay, rng.random())
        cap = self.max_delay_cap_s
        if cap is not None and delay > cap:
            return cap, state
        return min(delay, MAX_DELAY_S), state

    def _plain(self, a: int) -> float:
        if self.backoff == "constant":
            return self.delay_s
        if self.backoff == "linear":
            return (a + 1) * self.delay_s
        try:
            return math.pow(_EXPONENTIAL_FACTOR, a) * self.delay_s
        except OverflowError:
            return math.inf

    def delay(self, attempt: int, previous_delay_s: float, rng: random.Random) -> float:
        if self.jitter and self.backoff == "exponential" and attempt > 1:
            prev = _formula(attempt - 2 + rng.random())
            return self.next_delay(attempt, previous_delay_s, prev, rng)[0]
        return self.next_delay(attempt, previous_delay_s, 0.0, rng)[0]

    @property
    def max_delay_s(self) -> float:
        if self.max_delay_cap_s is not None:
            return self.max_delay_cap_s
        if self.backoff == "constant":
            return self.delay_s * (1.25 if self.jitter else 1.0)
        return MAX_DELAY_S

    def attempt_cap(self) -> int:
        return self.max_retry_attempts + 1

    def retry_after(self) -> RetryAfter:
        return RetryAfter.EXACT if self.reads_retry_after else RetryAfter.IGNORE

    def conditions(self) -> RetryOn:
        return self.retry_on
