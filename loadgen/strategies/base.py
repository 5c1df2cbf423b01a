"""The retry-strategy interface and its registry.

A strategy is immutable data plus one method, :meth:`RetryStrategy.delay`, mapping
(retry number, previous delay, random source) to the next delay in seconds. The caller
owns the retry counter and resets it after a success (see :mod:`.controls`), as in
grpc-go's ``backoff.Strategy``. No clock, no global random state, no I/O.
"""

from __future__ import annotations

import random
from abc import abstractmethod

from retrystorm.spec import Registry, Spec

#: The ceiling of every delay, cap, jitter and timeout a strategy takes: one day. Real
#: clients cap their backoff at seconds to minutes (gRPC 120 s, the seed 5 min); a retry a
#: day later is no retry within any run. It stops absurd input, not real use.
MAX_DELAY_S = 86_400.0
#: The ceiling of a growth per retry: real clients grow by 1.5 to 3 (gRPC 1.6, AWS 2, the
#: seed e); a thousand reaches any cap in one or two retries.
MAX_FACTOR = 1_000.0


class RetryStrategy(Spec):
    """A delay policy: how long to wait before retry number ``attempt``.

    ``attempt`` is 1 for the first retry (after the first failed attempt), 2 for the
    second, and so on. ``previous_delay_s`` is what the client last slept: the previous
    backoff, or, before a request's first retry, the think time that preceded the
    request (what the seed's Go client holds in ``lastDelay``; only ``smira`` reads
    it then). ``rng`` is the only source of randomness.
    """

    __slots__ = ()

    @abstractmethod
    def delay(self, attempt: int, previous_delay_s: float, rng: random.Random) -> float:
        """Seconds to wait before retry ``attempt``; always ``0 <= d <= max_delay_s``."""

    @property
    @abstractmethod
    def max_delay_s(self) -> float:
        """An upper bound on every delay this strategy returns."""


STRATEGIES: Registry[RetryStrategy] = Registry("strategy")
register_strategy = STRATEGIES.register


def parse_strategy(spec: object) -> RetryStrategy:
    """Parse a strategy spec string or mapping; see :mod:`retrystorm.spec`."""
    return STRATEGIES.parse(spec)  # type: ignore[arg-type]
