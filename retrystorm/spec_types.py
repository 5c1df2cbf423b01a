"""The types of spec parameters: how a number, a whole number, a duration, a list of durations, an
optional value or a choice is read from text or YAML, checked against its bounds, and written back.

:class:`ParamType` is data plus its readers and writer; :data:`NUMBER`, :data:`INTEGER`,
:data:`DURATION` and :data:`DURATION_LIST` are the four kinds, :func:`optional` and :func:`choice`
make the others. Every reader refuses what is not finite or too long before reading it (see
:mod:`retrystorm.spec` for the ceilings), with one :class:`~retrystorm.errors.SpecError` line
naming the parameter and what it accepts.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from typing import Any

from retrystorm.durations import ACCEPTED as DURATION_FORMS
from retrystorm.durations import MAX_DURATION_S, format_duration, parse_duration
from retrystorm.errors import SpecError, shown

#: The longest spec string, and the longest text value in a spec mapping: a table of
#: 1,000 delays written ``3000ms,`` fits, with room to spare. A longer text is refused
#: before it is read.
MAX_SPEC_CHARS = 10_000
#: The most entries a list parameter takes (a ``table`` of delays).
MAX_LIST_ITEMS = 1_000
#: The largest whole number a parameter takes when it declares no smaller ceiling: a
#: billion, more than any process holds of anything, and exact as a float, so every
#: bound compares exactly.
MAX_WHOLE = 10**9
#: A whole number as Python writes one, in ASCII digits: ``30``, ``+30``, `` 1_000 ``.
_WHOLE = re.compile(r"\s*[+-]?[0-9](?:_?[0-9])*\s*", re.ASCII)
#: Digits read from a whole-number text: more are refused before ``int`` (which refuses
#: more than 4,300 digits with a ``ValueError`` of its own).
_MAX_WHOLE_DIGITS = 30


def _format_number(value: float) -> str:
    if math.isinf(value):
        return "inf"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


@dataclasses.dataclass(frozen=True, slots=True)
class ParamType:
    """How one kind of parameter value is read from text or YAML and written back.

    ``ceiling`` is the largest value any parameter of the type takes (one declaring
    ``at_most`` takes at most that); ``item`` is the type of a list's entries, and
    ``max_items`` how many a list takes; ``bound_text`` writes a bound (``24h``);
    ``optional_of`` is the type an :func:`optional` type takes besides ``None``.
    """

    short: str
    accepted: str
    from_text: Callable[[str, str], Any]
    from_value: Callable[[object, str], Any]
    to_text: Callable[[Any], str]
    ceiling: float | None = None
    item: ParamType | None = None
    max_items: int | None = None
    bound_text: Callable[[float], str] = _format_number
    optional_of: ParamType | None = None
    #: The words a word-valued type accepts (``choice``), for schemas and generators.
    choices: tuple[str, ...] = ()


def _number_from_text(text: str, what: str) -> float:
    """A float; ``inf`` and ``nan`` come back as such, for :meth:`ParamInfo.check` to refuse."""
    try:
        value = float(text)
    except ValueError:
        raise SpecError(f"{what}: got {shown(text)}, expected a number") from None
    return value


def _number_from_value(value: object, what: str) -> float:
    if isinstance(value, str):
        return _number_from_text(value, what)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SpecError(f"{what}: got {shown(value)}, expected a number")
    try:
        return float(value)
    except OverflowError:  # an int from YAML or JSON beyond the float range
        raise SpecError(f"{what}: got a number too large for a float, expected a finite number") from None


def _int_from_text(text: str, what: str) -> int:
    if not _WHOLE.fullmatch(text):
        raise SpecError(f"{what}: got {shown(text)}, expected a whole number")
    if sum(char.isdigit() for char in text) > _MAX_WHOLE_DIGITS:
        raise SpecError(f"{what}: got {shown(text)}, expected a whole number <= {MAX_WHOLE}")
    return int(text)


def _int_from_value(value: object, what: str) -> int:
    if isinstance(value, str):
        return _int_from_text(value, what)
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(f"{what}: got {shown(value)}, expected a whole number")
    return value


def _split_list(text: str, what: str) -> list[str]:
    inner = text.strip()
    if not (inner.startswith("[") and inner.endswith("]")):
        raise SpecError(f"{what}: got {shown(text)}, expected a list in brackets like [0,10ms,100ms]")
    body = inner[1:-1].strip()
    if body.count(",") >= MAX_LIST_ITEMS:
        raise SpecError(f"{what}: got a list of {body.count(',') + 1} entries, expected at most {MAX_LIST_ITEMS}")
    return [item.strip() for item in body.split(",")] if body else []


def _durations_from_text(text: str, what: str) -> tuple[float, ...]:
    return tuple(_duration(item, f"{what}[{i}]") for i, item in enumerate(_split_list(text, what)))


def _durations_from_value(value: object, what: str) -> tuple[float, ...]:
    if isinstance(value, str):
        return _durations_from_text(value, what)
    if not isinstance(value, list | tuple):
        raise SpecError(f"{what}: got {shown(value)}, expected a list of durations")
    if len(value) > MAX_LIST_ITEMS:
        raise SpecError(f"{what}: got a list of {len(value)} entries, expected at most {MAX_LIST_ITEMS}")
    return tuple(_duration(item, f"{what}[{i}]") for i, item in enumerate(value))


def _duration(value: object, what: str) -> float:
    """A duration up to :data:`MAX_DURATION_S`; ``inf`` comes back, for :meth:`ParamInfo.check` to refuse."""
    return parse_duration(value, what=what, allow_inf=True)


def _duration_bound(bound: float) -> str:
    return "0" if bound == 0 else format_duration(bound)


NUMBER = ParamType("number", "a number", _number_from_text, _number_from_value, _format_number)
INTEGER = ParamType("whole number", "a whole number", _int_from_text, _int_from_value, str, ceiling=MAX_WHOLE)
DURATION = ParamType(
    "duration",
    f"a duration ({DURATION_FORMS})",
    _duration,
    _duration,
    format_duration,
    ceiling=MAX_DURATION_S,
    bound_text=_duration_bound,
)
DURATION_LIST = ParamType(
    "list of durations",
    "a list of durations in brackets, like [0,10ms,100ms]",
    _durations_from_text,
    _durations_from_value,
    lambda values: "[" + ",".join(format_duration(v) for v in values) + "]",
    ceiling=MAX_DURATION_S,
    item=DURATION,
    max_items=MAX_LIST_ITEMS,
    bound_text=_duration_bound,
)


def optional(inner: ParamType, none_text: str = "none") -> ParamType:
    """``inner`` or ``None``, written as ``none_text`` (e.g. ``max_attempts=none``)."""

    def from_text(text: str, what: str) -> Any:
        return None if text == none_text else inner.from_text(text, what)

    def from_value(value: object, what: str) -> Any:
        return None if value is None or value == none_text else inner.from_value(value, what)

    def to_text(value: Any) -> str:
        return none_text if value is None else inner.to_text(value)

    return ParamType(
        f"{inner.short} or {none_text}",
        f"{inner.accepted}, or {none_text}",
        from_text,
        from_value,
        to_text,
        ceiling=inner.ceiling,
        bound_text=inner.bound_text,
        optional_of=inner,
    )


def choice(*words: str) -> ParamType:
    """One of ``words`` (lower-case), written as itself (``overflow=go``); read without case or surrounding space."""
    accepted = "one of " + ", ".join(words)

    def from_text(text: str, what: str) -> str:
        word = text.strip().lower()
        if word not in words:
            raise SpecError(f"{what}: got {shown(text)}, expected {accepted}")
        return word

    def from_value(value: object, what: str) -> str:
        if not isinstance(value, str):
            raise SpecError(f"{what}: got {shown(value)}, expected {accepted}")
        return from_text(value, what)

    return ParamType("|".join(words), accepted, from_text, from_value, str, choices=words)
