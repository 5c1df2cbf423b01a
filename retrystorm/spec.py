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
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar, Generic, TypeVar

from retrystorm.durations import ACCEPTED as DURATION_FORMS
from retrystorm.durations import format_duration, parse_duration
from retrystorm.errors import SpecError, shorten

_META_KEY = "retrystorm.spec"


@dataclasses.dataclass(frozen=True, slots=True)
class ParamType:
    """How one kind of parameter value is read from text or YAML and written back."""

    short: str
    accepted: str
    from_text: Callable[[str, str], Any]
    from_value: Callable[[object, str], Any]
    to_text: Callable[[Any], str]


def _number_from_text(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise SpecError(f"{what}: got {shorten(repr(text))}, expected a number") from None
    return value


def _number_from_value(value: object, what: str) -> float:
    if isinstance(value, str):
        return _number_from_text(value, what)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SpecError(f"{what}: got {value!r}, expected a number")
    try:
        return float(value)
    except OverflowError:  # an int from YAML or JSON beyond the float range
        raise SpecError(f"{what}: got a number too large for a float, expected a finite number") from None


def _int_from_text(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        digits = text.strip().lstrip("+-")
        if digits.isdigit():  # past Python's limit on reading a whole number (4,300 digits)
            raise SpecError(
                f"{what}: got a whole number of {len(digits)} digits, more than any parameter takes"
            ) from None
        raise SpecError(f"{what}: got {shorten(repr(text))}, expected a whole number") from None


def _int_from_value(value: object, what: str) -> int:
    if isinstance(value, str):
        return _int_from_text(value, what)
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(f"{what}: got {value!r}, expected a whole number")
    return value


def _format_number(value: float) -> str:
    if math.isinf(value):
        return "inf"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


def _split_list(text: str, what: str) -> list[str]:
    inner = text.strip()
    if not (inner.startswith("[") and inner.endswith("]")):
        raise SpecError(f"{what}: got {text!r}, expected a list in brackets like [0,10ms,100ms]")
    body = inner[1:-1].strip()
    return [item.strip() for item in body.split(",")] if body else []


def _durations_from_text(text: str, what: str) -> tuple[float, ...]:
    return tuple(parse_duration(item, what=f"{what}[{i}]") for i, item in enumerate(_split_list(text, what)))


def _durations_from_value(value: object, what: str) -> tuple[float, ...]:
    if isinstance(value, str):
        return _durations_from_text(value, what)
    if not isinstance(value, list | tuple):
        raise SpecError(f"{what}: got {value!r}, expected a list of durations")
    return tuple(parse_duration(item, what=f"{what}[{i}]") for i, item in enumerate(value))


def _duration_from_value(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise SpecError(f"{what}: got {value!r}, expected {DURATION_FORMS}")
    return parse_duration(value, what=what)


NUMBER = ParamType("number", "a number", _number_from_text, _number_from_value, _format_number)
INTEGER = ParamType("whole number", "a whole number", _int_from_text, _int_from_value, str)
DURATION = ParamType(
    "duration",
    f"a duration ({DURATION_FORMS})",
    lambda text, what: parse_duration(text, what=what),
    _duration_from_value,
    format_duration,
)
DURATION_LIST = ParamType(
    "list of durations",
    "a list of durations in brackets, like [0,10ms,100ms]",
    _durations_from_text,
    _durations_from_value,
    lambda values: "[" + ",".join(format_duration(v) for v in values) + "]",
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
        f"{inner.short} or {none_text}", f"{inner.accepted}, or {none_text}", from_text, from_value, to_text
    )


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

    def describe_bounds(self, *, short: bool = False) -> str:
        """The accepted values as words, e.g. ``a number >= 1`` (``number >= 1`` if short).

        A duration's bounds are written as durations (``<= 1h``), a number's as numbers.
        """
        bound = self.type.to_text if self.type is DURATION else _format_number
        parts = []
        if self.at_least is not None:
            parts.append(f">= {bound(self.at_least)}")
        if self.above is not None:
            parts.append(f"> {bound(self.above)}")
        if self.at_most is not None:
            parts.append(f"<= {bound(self.at_most)}")
        kind = self.type.short if short else self.type.accepted
        return kind + (" " + " and ".join(parts) if parts else "")

    def check(self, value: Any, owner: str) -> None:
        """Raise :class:`SpecError` when ``value`` is outside this parameter's bounds."""
        values = value if isinstance(value, tuple) else (value,)
        for item in values:
            if not isinstance(item, int | float):
                continue
            bad = (
                math.isnan(item)
                or (self.at_least is not None and item < self.at_least)
                or (self.above is not None and item <= self.above)
                or (self.at_most is not None and item > self.at_most)
            )
            if bad:
                raise self.out_of_range(owner, self.type.to_text(value))

    def out_of_range(self, owner: str, shown: str) -> SpecError:
        """The error for a value (written as ``shown``) outside this parameter's bounds."""
        return SpecError(f"{owner}: {self.key}: got {shorten(shown)}, expected {self.describe_bounds()}")


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
            raise SpecError(f"unknown {self.kind} {name!r}; valid: {valid}") from None

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
            raise SpecError(f"{self.kind}: got {spec!r}, expected a spec string like 'name:key=value'")
        return self._parse_text(spec)

    def _parse_text(self, text: str) -> S:
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
                        raise SpecError(f"{owner}: {item.strip()!r} needs a key; accepted: {_keys(infos)}")
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
            raise SpecError(f"{self.kind}: name: got {raw_name!r}, expected one of {', '.join(self._classes)}")
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
            info = self._param(by_key, str(key), owner, infos)
            values[info.field] = info.type.from_value(raw, f"{owner}: {info.key}")
        return self._build(cls, values, owner)

    @staticmethod
    def _param(by_key: dict[str, ParamInfo], key: str, owner: str, infos: list[ParamInfo]) -> ParamInfo:
        try:
            return by_key[key]
        except KeyError:
            raise SpecError(f"{owner}: unknown parameter {key!r}; accepted: {_keys(infos)}") from None

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
