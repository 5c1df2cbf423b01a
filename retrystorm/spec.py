"""Specs: named, parameterised policies written as one string or a mapping.

A *spec* names a registered kind of thing (a retry strategy, a retry budget, an
overload model) and its parameters::

    exponential:base=100ms,factor=2.718,max=5m,jitter=normal:0.1
    fixed:100ms                      # a leading positional parameter
    table:delays=[0,10ms,100ms]      # lists in brackets
    {"name": "exponential", "base": "100ms", "jitter": "full"}   # YAML/JSON mapping

Each kind is a frozen dataclass whose spec parameters are declared with :func:`param`;
a :class:`Registry` maps names to classes, parses specs into instances and prints
instances back. Printing then parsing gives an equal object (the round trip), and
every parameter is printed, so a spec in a report says exactly what ran.

Nothing a user writes crashes or hangs the parser: a spec is at most
:data:`MAX_SPEC_CHARS` long, a list at most :data:`MAX_LIST_ITEMS` entries, every number
is finite (``inf``, ``1e309`` and a 400-digit duration are refused, never read as
infinity), and every parameter has a ceiling: its own ``at_most``, else its type's
(:data:`~retrystorm.durations.MAX_DURATION_S` for durations, :data:`MAX_WHOLE` for whole
numbers). Each error is one :class:`~retrystorm.errors.SpecError` line naming the
parameter and what it accepts.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar, Generic, TypeVar

from retrystorm.durations import ACCEPTED as DURATION_FORMS
from retrystorm.durations import MAX_DURATION_S, format_duration, parse_duration
from retrystorm.errors import SpecError, shown

_META_KEY = "retrystorm.spec"

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
    """One of ``words``, written as itself (``overflow=go``)."""
    accepted = "one of " + ", ".join(words)

    def from_text(text: str, what: str) -> str:
        if text not in words:
            raise SpecError(f"{what}: got {shown(text)}, expected {accepted}")
        return text

    def from_value(value: object, what: str) -> str:
        if not isinstance(value, str):
            raise SpecError(f"{what}: got {shown(value)}, expected {accepted}")
        return from_text(value, what)

    return ParamType("|".join(words), accepted, from_text, from_value, str, choices=words)


@dataclasses.dataclass(frozen=True, slots=True)
class ParamInfo:
    """One spec parameter: its key in a spec, its field, its type, bounds and help."""

    key: str
    field: str
    type: ParamType
    help: str
    default: Any
    positional: bool = False
    at_least: float | None = None
    above: float | None = None
    at_most: float | None = None

    @property
    def ceiling(self) -> float | None:
        """The largest value accepted: ``at_most``, else the type's own ceiling."""
        return self.at_most if self.at_most is not None else self.type.ceiling

    def describe_bounds(self, *, short: bool = False) -> str:
        """The accepted values as words, e.g. ``a number >= 1`` (``number >= 1`` if short)."""
        kind = self.type.short if short else self.type.accepted
        bounds = self._bounds()
        if self.type.max_items is not None:  # a list: "(at most 1000 entries, each >= 0 and <= 24h)"
            return f"{kind} (at most {self.type.max_items} entries{', each' + bounds if bounds else ''})"
        return kind + bounds

    def _bounds(self) -> str:
        """`` >= 0 and <= 24h``, or nothing."""
        write = self.type.bound_text
        parts = []
        if self.at_least is not None:
            parts.append(f">= {write(self.at_least)}")
        if self.above is not None:
            parts.append(f"> {write(self.above)}")
        if self.ceiling is not None:
            parts.append(f"<= {write(self.ceiling)}")
        return " " + " and ".join(parts) if parts else ""

    def out_of_range(self, owner: str, given: str) -> SpecError:
        """The error for a value (written as ``given``) outside this parameter's bounds."""
        return SpecError(f"{owner}: {self.key}: got {given}, expected {self.describe_bounds()}")

    def check(self, value: Any, owner: str) -> None:
        """Raise :class:`SpecError` when ``value`` is outside this parameter's bounds.

        Every number must be finite: no parameter reads ``inf``.
        """
        if isinstance(value, tuple):
            if self.type.max_items is not None and len(value) > self.type.max_items:
                raise SpecError(f"{owner}: {self.key}: got {len(value)} entries, expected {self.describe_bounds()}")
            for index, item in enumerate(value):
                self._check_one(item, owner, f"{self.key}[{index}]", self.type.item or self.type)
        else:
            self._check_one(value, owner, self.key, self.type)

    def _check_one(self, item: object, owner: str, where: str, kind: ParamType) -> None:
        if isinstance(item, bool) or not isinstance(item, int | float):
            return
        if isinstance(item, float) and math.isinf(item):
            expected = f"a finite {kind.short}{self._bounds()}"
            raise SpecError(f"{owner}: {where}: got {kind.to_text(item)}, expected {expected}")
        ceiling = self.ceiling
        bad = (
            (isinstance(item, float) and math.isnan(item))
            or (self.at_least is not None and item < self.at_least)
            or (self.above is not None and item <= self.above)
            or (ceiling is not None and item > ceiling)
        )
        if bad:
            text = shown(item) if isinstance(item, int) and item.bit_length() > 64 else kind.to_text(item)
            raise SpecError(f"{owner}: {where}: got {text}, expected {self.describe_bounds()}")


def param(
    key: str,
    type_: ParamType,
    default: Any,
    help: str,  # noqa: A002 - mirrors argparse/click's keyword
    *,
    positional: bool = False,
    at_least: float | None = None,
    above: float | None = None,
    at_most: float | None = None,
) -> Any:
    """Declare a dataclass field as a spec parameter (use as the field's default)."""
    info = ParamInfo(key, "", type_, help, default, positional, at_least, above, at_most)
    return dataclasses.field(default=default, metadata={_META_KEY: info})


def params_of(cls: type[Any]) -> list[ParamInfo]:
    """The spec parameters of a spec class, in declaration order."""
    found = []
    for field in dataclasses.fields(cls):
        info = field.metadata.get(_META_KEY)
        if info is not None:
            found.append(dataclasses.replace(info, field=field.name))
    return found


class Spec:
    """Base of every spec class: validates declared bounds, then calls ``_validate``.

    Subclasses are ``@dataclass(frozen=True, slots=True, kw_only=True)`` and set
    ``name`` through their registry's decorator.
    """

    __slots__ = ()
    name: ClassVar[str] = ""
    kind: ClassVar[str] = "spec"

    def __post_init__(self) -> None:
        for info in params_of(type(self)):
            info.check(getattr(self, info.field), f"{self.kind} {self.name!r}")
        self._validate()

    def _validate(self) -> None:
        """Cross-parameter checks; raise :class:`SpecError` naming the parameter."""

    def _fail(self, key: str, message: str) -> SpecError:
        return SpecError(f"{self.kind} {self.name!r}: {key}: {message}")

    def spec(self) -> str:
        """This object as a spec string that parses back to an equal object."""
        return format_spec(self)

    def __str__(self) -> str:
        return self.spec()


S = TypeVar("S", bound=Spec)


def format_spec(obj: Spec) -> str:
    """Print ``obj`` as ``name:key=value,...``; leading positional parameters bare."""
    items = []
    bare = True
    for info in params_of(type(obj)):
        text = info.type.to_text(getattr(obj, info.field))
        bare = bare and info.positional
        items.append(text if bare else f"{info.key}={text}")
    return obj.name + (":" + ",".join(items) if items else "")


def spec_to_mapping(obj: Spec) -> dict[str, Any]:
    """``obj`` as a mapping for YAML/JSON output: ``{"name": ..., key: text, ...}``."""
    mapping: dict[str, Any] = {"name": obj.name}
    for info in params_of(type(obj)):
        mapping[info.key] = info.type.to_text(getattr(obj, info.field))
    return mapping


def _split_items(body: str) -> Iterator[str]:
    """Split ``a=1,b=[x,y],c`` on commas outside brackets."""
    depth = 0
    start = 0
    for i, char in enumerate(body):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif char == "," and depth == 0:
            yield body[start:i]
            start = i + 1
    yield body[start:]


class Registry(Generic[S]):
    """Names -> spec classes for one kind of thing, filled by :meth:`register`."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._classes: dict[str, type[S]] = {}

    def register(self, name: str) -> Callable[[type[S]], type[S]]:
        """Class decorator: register ``cls`` under ``name`` and set its ``name``."""

        def decorate(cls: type[S]) -> type[S]:
            if name in self._classes:
                raise ValueError(f"{self.kind} {name!r} registered twice")
            cls.name = name
            cls.kind = self.kind
            self._classes[name] = cls
            return cls

        return decorate

    def names(self) -> list[str]:
        """Registered names, in registration order."""
        return list(self._classes)

    def get(self, name: str) -> type[S]:
        """The class registered as ``name``; an unknown name lists the valid ones."""
        try:
            return self._classes[name]
        except KeyError:
            valid = ", ".join(self._classes)
            raise SpecError(f"unknown {self.kind} {shown(name)}; valid: {valid}") from None

    def items(self) -> list[tuple[str, type[S]]]:
        """``(name, class)`` pairs, in registration order."""
        return list(self._classes.items())

    def parse(self, spec: str | Mapping[str, object] | S) -> S:
        """Parse a spec string or mapping (an instance passes through)."""
        if isinstance(spec, Spec):
            return spec
        if isinstance(spec, Mapping):
            return self._parse_mapping(spec)
        if not isinstance(spec, str):
            raise SpecError(f"{self.kind}: got {shown(spec)}, expected a spec string like 'name:key=value'")
        return self._parse_text(spec)

    def _parse_text(self, text: str) -> S:
        if len(text) > MAX_SPEC_CHARS:
            raise SpecError(f"{self.kind}: got {shown(text)}, expected a spec of at most {MAX_SPEC_CHARS} characters")
        name, _, body = text.strip().partition(":")
        cls = self.get(name.strip())
        infos = params_of(cls)
        owner = f"{self.kind} {cls.name!r}"
        by_key = {info.key: info for info in infos}
        positional = [info for info in infos if info.positional]
        values: dict[str, Any] = {}
        keyed = False
        if body.strip():
            for index, item in enumerate(_split_items(body)):
                key, eq, raw = item.partition("=")
                keyed = keyed or bool(eq)
                if not eq:
                    if index >= len(positional) or keyed:
                        raise SpecError(f"{owner}: {shown(item.strip())} needs a key; accepted: {_keys(infos)}")
                    info, raw = positional[index], item
                else:
                    info = self._param(by_key, key.strip(), owner, infos)
                if info.field in values:
                    raise SpecError(f"{owner}: {info.key} given twice")
                values[info.field] = info.type.from_text(raw.strip(), f"{owner}: {info.key}")
        return self._build(cls, values, owner)

    def _parse_mapping(self, mapping: Mapping[str, object]) -> S:
        if "name" not in mapping:
            raise SpecError(f"{self.kind}: mapping needs a 'name' key; valid names: {', '.join(self._classes)}")
        raw_name = mapping["name"]
        if not isinstance(raw_name, str):
            raise SpecError(f"{self.kind}: name: got {shown(raw_name)}, expected one of {', '.join(self._classes)}")
        if ":" in raw_name and len(mapping) == 1:
            return self._parse_text(raw_name)
        cls = self.get(raw_name)
        infos = params_of(cls)
        owner = f"{self.kind} {cls.name!r}"
        by_key = {info.key: info for info in infos}
        values: dict[str, Any] = {}
        for key, raw in mapping.items():
            if key == "name":
                continue
            info = self._param(by_key, key, owner, infos)
            if isinstance(raw, str) and len(raw) > MAX_SPEC_CHARS:
                raise SpecError(f"{owner}: {info.key}: got {shown(raw)}, expected at most {MAX_SPEC_CHARS} characters")
            values[info.field] = info.type.from_value(raw, f"{owner}: {info.key}")
        return self._build(cls, values, owner)

    @staticmethod
    def _param(by_key: dict[str, ParamInfo], key: object, owner: str, infos: list[ParamInfo]) -> ParamInfo:
        info = by_key.get(key) if isinstance(key, str) else None
        if info is None:
            raise SpecError(f"{owner}: unknown parameter {shown(key)}; accepted: {_keys(infos)}")
        return info

    @staticmethod
    def _build(spec_class: type[S], values: dict[str, Any], owner: str) -> S:
        try:
            return spec_class(**values)
        except TypeError as error:  # a class whose fields are not all spec params
            raise SpecError(f"{owner}: {error}") from error


def _keys(infos: list[ParamInfo]) -> str:
    return ", ".join(info.key for info in infos) or "(no parameters)"


def describe_params(cls: type[Spec]) -> list[tuple[str, str, str]]:
    """``(key, default as text, help with accepted values)`` for listing a class."""
    return [
        (info.key, info.type.to_text(info.default), f"{info.help} ({info.describe_bounds(short=True)})")
        for info in params_of(cls)
    ]
