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
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar, Generic, TypeVar

from retrystorm.errors import SpecError, did_you_mean, shown
from retrystorm.spec_types import (
    DURATION,
    DURATION_LIST,
    INTEGER,
    MAX_LIST_ITEMS,
    MAX_SPEC_CHARS,
    MAX_WHOLE,
    NUMBER,
    ParamType,
    choice,
    optional,
)

__all__ = [  # the parameter types are spec_types'; specs import them from here with the rest
    "DURATION", "DURATION_LIST", "INTEGER", "MAX_LIST_ITEMS", "MAX_SPEC_CHARS", "MAX_WHOLE", "NUMBER",
    "ParamInfo", "ParamType", "Registry", "Spec", "choice", "describe_params", "format_spec", "optional", "param",
    "params_of", "spec_to_mapping",
]  # fmt: skip

_META_KEY = "retrystorm.spec"


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
            hint = did_you_mean(name, self._classes)
            raise SpecError(f"unknown {self.kind} {shown(name)}{hint}; valid: {valid}") from None

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
            hint = did_you_mean(key, by_key)
            raise SpecError(f"{owner}: unknown parameter {shown(key)}{hint}; accepted: {_keys(infos)}")
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
