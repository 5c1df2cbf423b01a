"""Failures on purpose: a rule that answers chosen attempts of ``/api`` with an error at once.

Off by default; ``PUT /admin/faults`` arms a rule (its body is read by
:mod:`retrystorm.target.service.bodies`), ``DELETE /admin/faults`` disarms it. A :class:`FaultRule`
says which attempts fail and how:

* ``status``: the status sent, 429 or 500-599 (default 503), with ``Retry-After:
  retry_after`` when ``retry_after`` (whole seconds, RFC 9110 section 10.2.3, at most
  :data:`MAX_RETRY_AFTER_S`: a day) is given;
* ``first_attempts`` N: only attempts 1..N of each logical request fail. The load
  generator numbers its retries with ``Retrystorm-Attempt: 2``, ``3``, ...; a request
  without the header is attempt 1. ``null``: every attempt qualifies; at most
  :data:`MAX_ATTEMPT`, the largest number the header carries;
* ``probability`` p: a qualifying attempt fails with probability p (default 1), drawn
  from the service's seeded random source;
* ``count`` K: at most K failures in all, then everything passes (``null``: no limit);
  at most :data:`MAX_COUNT`.

An attempt fails when every condition holds. A failed attempt is answered at once and
never enters the model: it neither adds load nor waits for the model's delay. While a
rule is armed, :class:`FaultInjector` also keeps the last :data:`RECENT_CAPACITY`
attempts it judged (arrival time, attempt number, status sent or ``None`` when the
attempt went on to the model), so a client's retry timing can be read on the server.

Pure: no I/O; time and randomness are passed in.
"""

from __future__ import annotations

import dataclasses
import random
from collections import deque
from typing import Any

from retrystorm.errors import UserError, shown

#: Attempts :class:`FaultInjector` remembers while a rule is armed.
RECENT_CAPACITY = 1000
#: The largest ``Retry-After`` a rule sends: one day.
MAX_RETRY_AFTER_S = 86_400
#: The largest attempt number: what a ``Retrystorm-Attempt`` header can carry (nine digits).
MAX_ATTEMPT = 999_999_999
#: The most failures a rule may inject: a billion, a day at over 10,000 a second.
MAX_COUNT = 1_000_000_000
#: The header that carries the attempt number of a retry.
ATTEMPT_HEADER = "Retrystorm-Attempt"
#: The ceiling of each whole-number field.
_CEILINGS = {"retry_after": MAX_RETRY_AFTER_S, "first_attempts": MAX_ATTEMPT, "count": MAX_COUNT}


def accepted(name: str) -> str:
    """What field ``name`` of a rule (as ``PUT /admin/faults`` spells it) accepts, in words."""
    if name == "status":
        return "429 or 500 to 599"
    if name == "probability":
        return "a number > 0 and <= 1"
    if name == "retry_after":
        return f"a whole number of seconds from 0 to {MAX_RETRY_AFTER_S}, or null (no header)"
    return f"a whole number from 1 to {_CEILINGS[name]:,}, or null (no limit)"


def is_injectable_status(status: int) -> bool:
    """Statuses a rule may send: the ones a retrying client retries (429 and 5xx)."""
    return status == 429 or 500 <= status <= 599


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class FaultRule:
    """Which attempts of ``/api`` fail, and with what (see the module's docstring)."""

    status: int = 503
    retry_after_s: int | None = None
    first_attempts: int | None = None
    probability: float = 1.0
    count: int | None = None

    def __post_init__(self) -> None:
        if not is_injectable_status(self.status):
            raise UserError(f"status: got {shown(self.status)}, expected {accepted('status')}")
        if self.retry_after_s is not None and not 0 <= self.retry_after_s <= MAX_RETRY_AFTER_S:
            raise UserError(f"retry_after: got {shown(self.retry_after_s)}, expected {accepted('retry_after')}")
        for name, value in (("first_attempts", self.first_attempts), ("count", self.count)):
            if value is not None and not 1 <= value <= _CEILINGS[name]:
                raise UserError(f"{name}: got {shown(value)}, expected {accepted(name)}")
        if not 0 < self.probability <= 1:
            raise UserError(f"probability: got {self.probability}, expected {accepted('probability')}")

    def qualifies(self, attempt: int, rng: random.Random) -> bool:
        """Whether ``attempt`` fails, ``count`` aside; draws from ``rng`` only when ``probability < 1``."""
        if self.first_attempts is not None and attempt > self.first_attempts:
            return False
        return self.probability >= 1 or rng.random() < self.probability

    def to_json(self) -> dict[str, Any]:
        """The rule as the admin API shows it (the same fields ``PUT /admin/faults`` takes)."""
        return {
            "status": self.status,
            "retry_after": self.retry_after_s,
            "first_attempts": self.first_attempts,
            "probability": self.probability,
            "count": self.count,
        }


def parse_attempt(value: bytes | None) -> int:
    """The attempt number a ``Retrystorm-Attempt`` header carries; 1 without the header."""
    if value is None:
        return 1
    text = value.strip()
    if not text.isdigit() or len(text) > 9 or int(text) < 1:
        given = value.decode("latin-1")[:40]
        raise UserError(f"{ATTEMPT_HEADER}: got {given!r}, expected a whole number >= 1 (absent: attempt 1)")
    return int(text)


class FaultInjector:
    """The armed rule (if any), what it did, and the attempts it judged lately."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.rule: FaultRule | None = None
        self.injected = 0
        self.passed = 0
        self.recent: deque[tuple[float, int, int | None]] = deque(maxlen=RECENT_CAPACITY)

    def arm(self, rule: FaultRule) -> None:
        """Apply ``rule`` from now on; its counters and record start empty."""
        self.rule = rule
        self.injected = self.passed = 0
        self.recent.clear()

    def disarm(self) -> None:
        """Stop failing and recording; the last rule's counters stay readable."""
        self.rule = None

    @property
    def remaining(self) -> int | None:
        """Failures the rule may still inject (``None``: no limit or no rule)."""
        if self.rule is None or self.rule.count is None:
            return None
        return max(0, self.rule.count - self.injected)

    @property
    def probability(self) -> float:
        """The chance an attempt fails now: the rule's, 0 without a rule or once its ``count`` is spent."""
        if self.rule is None or self.remaining == 0:
            return 0.0
        return self.rule.probability

    def judge(self, attempt: int, now_s: float) -> int | None:
        """The status to fail attempt number ``attempt`` with, or ``None`` to let it through."""
        rule = self.rule
        if rule is None:
            return None
        fail = self.remaining != 0 and rule.qualifies(attempt, self.rng)
        status = rule.status if fail else None
        if fail:
            self.injected += 1
        else:
            self.passed += 1
        self.recent.append((now_s, attempt, status))
        return status

    def to_json(self) -> dict[str, Any]:
        """What ``GET /admin/faults`` returns."""
        return {
            "rule": None if self.rule is None else self.rule.to_json(),
            "injected": self.injected,
            "passed": self.passed,
            "remaining": self.remaining,
            "recent": [{"at_seconds": at, "attempt": n, "status": status} for at, n, status in self.recent],
        }
