"""Retry conditions: which failed attempts a client retries.

A failed attempt is a timeout (the attempt timeout passed), a connection error (no
answer: refused, reset, closed), or an HTTP status of 400 or more. A :class:`RetryOn`
names the ones retried, written as a list in brackets::

    [timeout,connection,5xx,429]            # the default: every failure but a client error
    [connection]                            # only attempts that never reached the server
    [timeout,connection,503/retry-after]    # 503 only when it carries a Retry-After header

===================  =========================================================
condition            retries
===================  =========================================================
``timeout``          an attempt that timed out
``connection``       an attempt that got no answer (refused, reset, closed); also ``connection_error``
``4xx``, ``5xx``     any status of that class
``NNN``              that status (400 to 599)
``NNN/retry-after``  that status, only when the answer carries ``Retry-After``
===================  =========================================================
"""

from __future__ import annotations

import dataclasses

from retrystorm.errors import SpecError, shown
from retrystorm.spec import ParamType

ACCEPTED = "a list in brackets of timeout, connection, 4xx, 5xx, a status NNN (400-599) or NNN/retry-after"
_AFTER = "/retry-after"


@dataclasses.dataclass(frozen=True, slots=True)
class RetryOn:
    """The failed attempts a client retries (see the module docstring)."""

    timeout: bool = False
    connection: bool = False
    classes: frozenset[int] = frozenset()
    statuses: frozenset[int] = frozenset()
    with_retry_after: frozenset[int] = frozenset()

    def retries(self, *, timed_out: bool, status: int | None, retry_after: bool = False) -> bool:
        """Whether a failed attempt is retried: ``status`` ``None`` without ``timed_out`` is a connection error."""
        if timed_out:
            return self.timeout
        if status is None:
            return self.connection
        return (
            status in self.statuses
            or status // 100 in self.classes
            or (retry_after and status in self.with_retry_after)
        )

    def text(self) -> str:
        """``[timeout,connection,5xx,429]``: parses back to an equal object."""
        items = [name for name, on in (("timeout", self.timeout), ("connection", self.connection)) if on]
        items += [f"{c}xx" for c in sorted(self.classes)]
        items += [str(s) for s in sorted(self.statuses)]
        items += [f"{s}{_AFTER}" for s in sorted(self.with_retry_after)]
        return "[" + ",".join(items) + "]"

    @classmethod
    def parse(cls, text: str, what: str = "retry_on") -> RetryOn:
        """Parse ``[timeout,connection,5xx,429,503/retry-after]`` (brackets optional for one item)."""
        body = text.strip()
        if body.startswith("[") and body.endswith("]"):
            body = body[1:-1]
        return cls.of([item.strip() for item in body.split(",") if item.strip()], what)

    @classmethod
    def of(cls, items: list[str], what: str = "retry_on") -> RetryOn:
        """From condition names, as in a YAML list."""
        timeout = connection = False
        classes: set[int] = set()
        statuses: set[int] = set()
        after: set[int] = set()
        for item in items:
            word = item.strip().lower()
            if word == "timeout":
                timeout = True
            elif word in ("connection", "connection_error"):  # connection_error: the name of the attempt outcome
                connection = True
            elif word in ("4xx", "5xx"):
                classes.add(int(word[0]))
            elif word.endswith(_AFTER):
                after.add(_status(word.removesuffix(_AFTER), item, what))
            else:
                statuses.add(_status(word, item, what))
        return cls(timeout, connection, frozenset(classes), frozenset(statuses), frozenset(after))


def _status(word: str, item: str, what: str) -> int:
    if not (len(word) == 3 and word.isascii() and word.isdigit() and 400 <= int(word) <= 599):
        raise SpecError(f"{what}: got {shown(item)}, expected {ACCEPTED}")
    return int(word)


#: What the load generator retried before retry conditions existed, and still does by default.
DEFAULT_RETRY_ON = RetryOn(timeout=True, connection=True, classes=frozenset({5}), statuses=frozenset({429}))


def _from_value(value: object, what: str) -> RetryOn:
    if isinstance(value, RetryOn):
        return value
    if isinstance(value, str):
        return RetryOn.parse(value, what)
    if isinstance(value, list | tuple):
        return RetryOn.of([str(item) for item in value], what)
    raise SpecError(f"{what}: got {shown(value)}, expected {ACCEPTED}")


RETRY_ON = ParamType("conditions", ACCEPTED, RetryOn.parse, _from_value, RetryOn.text)
