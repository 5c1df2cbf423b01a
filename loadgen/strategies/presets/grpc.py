"""``grpc-retry``: gRPC's retryPolicy (gRFC A6) and retry throttling, as grpc-go implements them."""

from __future__ import annotations

import dataclasses
import random
from typing import ClassVar

from retrystorm.loadgen.strategies.base import MAX_FACTOR, register_strategy
from retrystorm.loadgen.strategies.budgets.base import RetryBudget
from retrystorm.loadgen.strategies.budgets.tokens import TokensBudget
from retrystorm.loadgen.strategies.channel import GrpcChannel
from retrystorm.loadgen.strategies.controls import RetryAfter
from retrystorm.loadgen.strategies.exponential import capped_exponential
from retrystorm.loadgen.strategies.jitter import JITTER, Jitter
from retrystorm.loadgen.strategies.presets.base import Preset
from retrystorm.loadgen.strategies.presets.params import BOOLEAN, word_list
from retrystorm.loadgen.strategies.retry_on import RetryOn
from retrystorm.spec import DURATION, INTEGER, NUMBER, optional, param

#: gRPC status codes by name (``google.golang.org/grpc/codes``).
CODES = {
    "OK": 0,
    "CANCELLED": 1,
    "UNKNOWN": 2,
    "INVALID_ARGUMENT": 3,
    "DEADLINE_EXCEEDED": 4,
    "NOT_FOUND": 5,
    "ALREADY_EXISTS": 6,
    "PERMISSION_DENIED": 7,
    "RESOURCE_EXHAUSTED": 8,
    "FAILED_PRECONDITION": 9,
    "ABORTED": 10,
    "OUT_OF_RANGE": 11,
    "UNIMPLEMENTED": 12,
    "INTERNAL": 13,
    "UNAVAILABLE": 14,
    "DATA_LOSS": 15,
    "UNAUTHENTICATED": 16,
}

#: HTTP status -> gRPC code, for an answer that is not a gRPC one: grpc-go
#: ``internal/transport/http_util.go`` (``HTTPStatusConvTab``), as in gRPC's
#: ``doc/http-grpc-status-mapping.md``; any other status is ``UNKNOWN``.
HTTP_TO_GRPC = {
    400: "INTERNAL",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "UNIMPLEMENTED",
    429: "UNAVAILABLE",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "UNAVAILABLE",
}

CODE_LIST = word_list(tuple(CODES), normalise=str.upper)


def conditions_for(codes: tuple[str, ...]) -> RetryOn:
    """The failures whose gRPC code is in ``codes``.

    An attempt timeout is ``DEADLINE_EXCEEDED`` (the call's deadline passed: gRPC then
    never retries, so listing it only adds a retry this harness can make), a
    connection error ``UNAVAILABLE``, an HTTP status as :data:`HTTP_TO_GRPC` says.
    """
    wanted = set(codes)
    statuses = {status for status in range(400, 600) if HTTP_TO_GRPC.get(status, "UNKNOWN") in wanted}
    return RetryOn(
        timeout="DEADLINE_EXCEEDED" in wanted,
        connection="UNAVAILABLE" in wanted,
        statuses=frozenset(statuses),
    )


@register_strategy("grpc-retry")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class GrpcRetry(Preset):
    """gRPC retryPolicy: retry n waits min(initial_backoff * multiplier^(n-1), max_backoff) * U(0.8, 1.2).

    gRFC A6 "gRPC Retry Design" (grpc/proposal ``A6-client-retries.md``, last updated
    2024-08-23, commit dc9fd4fe) and grpc-go v1.83.1 ``stream.go``
    (``csAttempt.shouldRetry``: ``cur *= 0.8 + 0.4*rand.Float64()``, since v1.69.0).
    Before that update A6 read ``random(0, min(...))``: ``jitter=full`` gives it. A6 has
    no defaults (every field is required); these are A6's example policy: 4 attempts,
    0.1 s, 1 s, x2, ``[UNAVAILABLE]``.

    * **Attempts**: ``max_attempts``, the first included, at most ``max_attempts_limit``
      (the client's cap, 5 by default: grpc-go ``defaultMaxCallAttempts``).
    * **Retry conditions**: a failure whose gRPC code is in ``codes``. The target speaks
      HTTP: an HTTP status maps to a code as grpc-go's ``HTTPStatusConvTab`` does (429,
      502, 503, 504 -> ``UNAVAILABLE``; 400 ``INTERNAL``, 401 ``UNAUTHENTICATED``, 403
      ``PERMISSION_DENIED``, 404 ``UNIMPLEMENTED``; any other, 500 included,
      ``UNKNOWN``); a connection error is ``UNAVAILABLE``; an attempt timeout is
      ``DEADLINE_EXCEEDED``, which gRPC never retries (the deadline covers the call).
    * **Pushback**: the target's ``Retry-After`` (seconds, or an HTTP date) is read as
      ``grpc-retry-pushback-ms`` = 1000 x its seconds: the retry waits exactly that,
      and the backoff starts again from ``initial_backoff`` after it.
    * **Throttling** (A6 ``retryThrottling``): with ``max_tokens`` the ``tokens`` budget
      (``maxTokens``, ``tokenRatio``); none by default, as in A6.
    * **The channel** (``channel``, on by default): every attempt of a process goes through one
      gRPC channel (:mod:`~retrystorm.loadgen.strategies.channel`). After a refused or reset
      connect the channel is in ``TRANSIENT_FAILURE`` until its reconnect backoff (1 s, x1.6,
      +-20 %, at most 120 s) ends; an attempt started meanwhile fails locally with ``UNAVAILABLE``,
      never reaching the network, and the policy retries it (locally again). Where grpcio runs
      (the gRPC user), grpcio's own channel does this and the parameter is not read.
    """

    library: ClassVar[str] = "gRFC A6 (2024-08-23); grpc-go v1.83.1; channel: grpc core (grpcio 1.85)"
    max_attempts: int = param("max_attempts", INTEGER, 4, "maxAttempts, the first included", at_least=2)
    initial_backoff_s: float = param("initial_backoff", DURATION, 0.1, "initialBackoff", above=0)
    max_backoff_s: float = param("max_backoff", DURATION, 1.0, "maxBackoff", above=0)
    multiplier: float = param("multiplier", NUMBER, 2.0, "backoffMultiplier", above=0, at_most=MAX_FACTOR)
    codes: tuple[str, ...] = param("codes", CODE_LIST, ("UNAVAILABLE",), "retryableStatusCodes")
    jitter: Jitter = param("jitter", JITTER, Jitter("proportional", 0.2), "A6's x U(0.8, 1.2); full: U(0, d)")
    max_tokens: float | None = param(
        "max_tokens", optional(NUMBER), None, "retryThrottling.maxTokens (none: no throttling)", above=0, at_most=1000
    )
    token_ratio: float = param("token_ratio", NUMBER, 0.1, "retryThrottling.tokenRatio", above=0, at_most=1)
    max_attempts_limit: int = param("max_attempts_limit", INTEGER, 5, "the client's cap on maxAttempts", at_least=2)
    channel: bool = param(
        "channel", BOOLEAN, True, "a gRPC channel: attempts fail locally while it backs off reconnecting"
    )

    def _validate(self) -> None:
        if self.max_tokens is not None:
            TokensBudget(max_tokens=self.max_tokens, ratio=self.token_ratio)  # raises naming the bad value

    def delay(self, attempt: int, previous_delay_s: float, rng: random.Random) -> float:
        capped = capped_exponential(self.initial_backoff_s, self.multiplier, self.max_backoff_s, attempt)
        return self.jitter.apply(capped, rng)

    @property
    def max_delay_s(self) -> float:
        return max(self.initial_backoff_s, self.max_backoff_s) * self.jitter.bound_factor

    def attempt_cap(self) -> int:
        return min(self.max_attempts, self.max_attempts_limit)

    def conditions(self) -> RetryOn:
        return conditions_for(self.codes)

    def budget(self) -> RetryBudget | None:
        if self.max_tokens is None:
            return None
        return TokensBudget(max_tokens=self.max_tokens, ratio=self.token_ratio)

    def retry_after(self) -> RetryAfter:
        return RetryAfter.PUSHBACK

    def new_channel(self, rng: random.Random) -> GrpcChannel | None:
        """A fresh channel for one client process (``None`` with ``channel=false``)."""
        return GrpcChannel(rng) if self.channel else None
