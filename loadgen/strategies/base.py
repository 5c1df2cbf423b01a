"""The retry-strategy interface and its registry.

A strategy is immutable data plus one method, :meth:`RetryStrategy.delay`, mapping
(retry number, previous delay, random source) to the next delay in seconds. The caller
owns the retry counter and resets it after a success (see :mod:`.controls`), as in
grpc-go's ``backoff.Strategy``. No clock, no global random state, no I/O.
"""

from __future__ import annotations

import random
from abc import abstractmethod
from collections.abc import Mapping
from typing import ClassVar

from retrystorm.errors import SpecError, did_you_mean, shown
from retrystorm.spec import MAX_SPEC_CHARS, Registry, Spec

#: The ceiling of every delay, cap, jitter and timeout a strategy takes: one day. Real
#: clients cap their backoff at seconds to minutes (gRPC 120 s, the seed 5 min); a retry a
#: day later is no retry within any run. It stops absurd input, not real use.
MAX_DELAY_S = 86_400.0
#: The ceiling of a growth per retry: real clients grow by 1.5 to 3 (gRPC 1.6, AWS 2, the
#: seed e); a thousand reaches any cap in one or two retries.
MAX_FACTOR = 1_000.0
#: Read from a file where a strategy is read from a command line or a scenario; see
#: ``retrystorm.loadgen.service_config``.
SERVICE_CONFIG = "grpc-service-config"


class RetryStrategy(Spec):
    """A delay policy: how long to wait before retry number ``attempt``.

    ``attempt`` is 1 for the first retry (after the first failed attempt), 2 for the
    second, and so on. ``previous_delay_s`` is what the client last slept: the previous
    backoff, or, before a request's first retry, the think time that preceded the
    request (what the seed's Go client holds in ``lastDelay``; only ``smira`` reads
    it then). ``rng`` is the only source of randomness.
    """

    __slots__ = ()

    #: A preset: a real client library's retry behaviour (``retrystorm.loadgen.strategies.presets``).
    is_preset: ClassVar[bool] = False
    #: The next delay depends on a state carried from one delay to the next, not only on
    #: the previous delay (Polly's decorrelated jitter): the caller calls :meth:`next_delay`.
    stateful: ClassVar[bool] = False
    #: A throttling answer (HTTP 429) backs off differently (the AWS SDKs' 1 s base against 50 ms):
    #: the caller calls :meth:`throttled_delay` for it.
    throttle_aware: ClassVar[bool] = False

    @abstractmethod
    def delay(self, attempt: int, previous_delay_s: float, rng: random.Random) -> float:
        """Seconds to wait before retry ``attempt``; always ``0 <= d <= max_delay_s``."""

    def next_delay(
        self, attempt: int, previous_delay_s: float, state: float, rng: random.Random
    ) -> tuple[float, float]:
        """The delay before retry ``attempt`` and the state after it (``state`` is 0 before retry 1).

        Stateless strategies ignore the state; a :attr:`stateful` one overrides this.
        """
        return self.delay(attempt, previous_delay_s, rng), state

    def throttled_delay(self, attempt: int, previous_delay_s: float, rng: random.Random) -> float:
        """The delay before retry ``attempt`` after a throttling answer; :meth:`delay` unless :attr:`throttle_aware`."""
        return self.delay(attempt, previous_delay_s, rng)

    @property
    @abstractmethod
    def max_delay_s(self) -> float:
        """An upper bound on every delay this strategy returns."""


STRATEGIES: Registry[RetryStrategy] = Registry("strategy")
register_strategy = STRATEGIES.register


def parse_strategy(spec: object) -> RetryStrategy:
    """Parse a strategy spec string or mapping; see :mod:`retrystorm.spec`.

    An unknown name lists the strategies and the presets apart, with the closest name.
    """
    name = _name_of(spec)
    too_long = isinstance(spec, str) and len(spec) > MAX_SPEC_CHARS  # the registry refuses it, before any name
    if name is not None and name not in STRATEGIES.names() and not too_long:
        raise SpecError(unknown_strategy(name))
    return STRATEGIES.parse(spec)  # type: ignore[arg-type]


def _name_of(spec: object) -> str | None:
    if isinstance(spec, str):
        return spec.strip().partition(":")[0].strip()
    if isinstance(spec, Mapping) and isinstance(spec.get("name"), str):
        return str(spec["name"]).strip().partition(":")[0].strip()
    return None


def unknown_strategy(name: str) -> str:
    """``unknown strategy 'envoi' (did you mean 'envoy'?); valid: ...; presets: ...``."""
    if name == SERVICE_CONFIG:
        return (
            f"{SERVICE_CONFIG}:PATH reads a gRPC service config file; it is accepted where a strategy is read "
            "from a command line or a scenario, not here"
        )
    items = STRATEGIES.items()
    strategies = [key for key, cls in items if not cls.is_preset]
    presets = [key for key, cls in items if cls.is_preset] + [f"{SERVICE_CONFIG}:PATH"]
    known = [key for key, _ in items] + [SERVICE_CONFIG]
    hint = did_you_mean(name, known)
    return f"unknown strategy {shown(name)}{hint}; valid: {', '.join(strategies)}; presets: {', '.join(presets)}"
