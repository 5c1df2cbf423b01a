"""A preset: a real client library's retry behaviour, and how it expands into the retry controls.

A preset is a strategy (``grpc-retry``, ``envoy``, ``aws-standard`` ...) registered
with the others, so it is written wherever a strategy is: a scenario's
``strategies:``, ``--retry-strategy``, the web UI's start form, the simulator. Beyond
its delays it carries the library's attempt cap, retry conditions, budget and reading
of ``Retry-After``; :func:`resolve` expands it into a :class:`RetryPolicy` and a budget.

Precedence, for the attempt cap and the budget alike: what is set explicitly (a
scenario's strategy entry, else its ``load:``; ``--max-attempts`` / ``--retry-budget``
on the command line) wins over the preset's own, which wins over none. ``none`` given
explicitly removes the preset's (on the command line; in a scenario, set the preset's
own parameter, such as ``aws-standard:quota=none``). A preset's backoff starts afresh
with every logical request, as the libraries' retry loops do; its retry conditions and
``Retry-After`` reading come from the library alone (``--ignore-retry-after`` still
turns the latter off).
"""

from __future__ import annotations

import random
from abc import abstractmethod
from typing import ClassVar, Literal

from retrystorm.loadgen.strategies.base import RetryStrategy
from retrystorm.loadgen.strategies.budgets.base import RetryBudget
from retrystorm.loadgen.strategies.channel import GrpcChannel
from retrystorm.loadgen.strategies.controls import RetryAfter, RetryPolicy
from retrystorm.loadgen.strategies.retry_on import RetryOn

#: Given explicitly: no attempt cap, or no budget, whatever the preset says.
NONE: Literal["none"] = "none"


class Preset(RetryStrategy):
    """A client library's retry behaviour: delays, attempt cap, retry conditions, budget.

    Subclasses give the library and version their numbers come from in ``library``.
    """

    __slots__ = ()
    is_preset: ClassVar[bool] = True
    library: ClassVar[str] = ""

    @abstractmethod
    def attempt_cap(self) -> int | None:
        """Attempts per logical request, the first included; ``None``: no cap."""

    @abstractmethod
    def conditions(self) -> RetryOn:
        """The failures the library retries."""

    def budget(self) -> RetryBudget | None:
        """The budget the library shares between requests (``None``: none)."""
        return None

    def retry_after(self) -> RetryAfter:
        """How the library reads a server's ``Retry-After``."""
        return RetryAfter.IGNORE

    def new_channel(self, rng: random.Random) -> GrpcChannel | None:
        """The connection state one client process shares, when the library has one that decides which
        attempts reach the network (gRPC's channel); ``None``: every attempt is sent."""
        return None


def channel_of(strategy: RetryStrategy, rng: random.Random) -> GrpcChannel | None:
    """A fresh :meth:`Preset.new_channel` of ``strategy`` (``None`` for a strategy that is not a preset)."""
    return strategy.new_channel(rng) if isinstance(strategy, Preset) else None


def resolve(
    strategy: RetryStrategy,
    *,
    max_attempts: int | Literal["none"] | None = None,
    budget: RetryBudget | Literal["none"] | None = None,
    deadline_s: float | None = None,
    reset_after_success: bool = True,
    honour_retry_after: bool = True,
    retry_on: RetryOn | None = None,
) -> tuple[RetryPolicy, RetryBudget | None]:
    """The retry policy and budget of ``strategy`` with the controls given explicitly.

    ``max_attempts`` and ``budget``: ``None`` when not given (a preset's own then
    applies), :data:`NONE` for none whatever the preset says, or a value. ``retry_on``:
    the failures retried, when given; else a preset's own, else every failure but a
    client error.
    """
    preset = strategy if isinstance(strategy, Preset) else None
    if max_attempts is None and preset is not None:
        cap = preset.attempt_cap()
    else:
        cap = None if max_attempts in (None, NONE) else int(max_attempts)
    if budget is None and preset is not None:
        chosen = preset.budget()
    else:
        chosen = budget if isinstance(budget, RetryBudget) else None
    policy = RetryPolicy(
        strategy=strategy,
        max_attempts=cap,
        deadline_s=deadline_s,
        reset_after_success=reset_after_success,
        honour_retry_after=honour_retry_after,
        retry_on=retry_on if retry_on is not None else (preset.conditions() if preset is not None else None),
        retry_after=preset.retry_after() if preset is not None else RetryAfter.AT_LEAST,
        per_request=preset is not None,
    )
    return policy, chosen
