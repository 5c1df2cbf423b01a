"""What a map varies: ``--vary PATH=RANGE``, a scenario field and the values it takes.

``PATH`` is a dotted path into the scenario with list indexes, as the loader's errors
name fields: ``load.users``, ``load.rate``, ``faults[0].for``, ``faults[1].capacity``,
``model.slope`` (a model, strategy or budget spec's own parameters), ``sim.sample_every``.
The field must hold a number in the scenario (after defaults: ``faults[0].random_start``
is 0 when not written; a field that is null there has no number to vary).

``RANGE`` is ``LO..HI:N`` (``N`` values from ``LO`` to ``HI``, both included, evenly
spaced), ``LO..HI:N:log`` (evenly spaced on a log scale: ``LO * (HI/LO)^(i/(N-1))``), or
a list ``A,B,C``. A duration field takes durations with their units (``5s..60s:12``; a bare
number is refused, as in a scenario file); a whole-number field's values are rounded, and two that round alike are
refused. Every error is a :class:`~retrystorm.errors.UserError` naming the ``--vary``
and the field.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import re
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from retrystorm.durations import format_duration, parse_duration
from retrystorm.errors import SpecError, UserError
from retrystorm.experiment.scenario import Scenario, StrategyEntry
from retrystorm.experiment.scenario.fields import Duration, PositiveDuration
from retrystorm.spec import DURATION, INTEGER, Spec, params_of, spec_to_mapping

Part = str | int
Scale = Literal["linear", "log"]

#: The most values one axis takes.
MAX_POINTS = 200
_SEGMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)((?:\[\d{1,6}\])*)")
_INDEX = re.compile(r"\[(\d+)\]")


@dataclasses.dataclass(frozen=True, slots=True)
class Axis:
    """One varied field: its path, the values it takes (seconds for a duration), and how to show them."""

    path: str
    parts: tuple[Part, ...]
    values: tuple[float, ...]
    duration: bool = False
    integer: bool = False
    scale: Scale = "linear"

    def show(self, value: float) -> str:
        """``30s``, ``1,000``, ``0.4``."""
        if self.duration:
            return format_duration(value)
        if self.integer:
            return f"{round(value):,}"
        return f"{value:.4g}"

    def label(self) -> str:
        """The axis title: the path, with ``(s)`` for a duration."""
        return f"{self.path} (s)" if self.duration else self.path

    def to_json(self) -> dict[str, object]:
        """``{"path", "values", "unit", "scale"}``."""
        values = [round(v) if self.integer else v for v in self.values]
        return {"path": self.path, "values": values, "unit": "s" if self.duration else "", "scale": self.scale}


def parse_path(text: str, flag: str | None = None) -> tuple[Part, ...]:
    """``faults[0].for`` -> ``("faults", 0, "for")``; a :class:`UserError` (naming ``flag``) for anything else."""
    parts: list[Part] = []
    for segment in text.split("."):
        match = _SEGMENT.fullmatch(segment)
        if match is None:
            raise UserError(
                f"{flag or text}: {segment!r} is no field name; expected a dotted path like faults[0].for or load.users"
            )
        parts.append(match.group(1))
        parts.extend(int(index) for index in _INDEX.findall(match.group(2)))
    return tuple(parts)


def path_text(parts: Sequence[Part]) -> str:
    """The inverse of :func:`parse_path`."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


@dataclasses.dataclass(frozen=True, slots=True)
class Field:
    """What a path reaches in a validated scenario: its value, and whether it is a duration or a whole number."""

    value: float
    duration: bool
    integer: bool


def resolve(scenario: Scenario, parts: Sequence[Part], flag: str) -> Field:
    """The numeric field at ``parts`` in ``scenario``; a :class:`UserError` naming ``flag`` and the field otherwise."""
    node: Any = scenario
    info: FieldInfo | None = None
    spec_type: object = None
    for depth, part in enumerate(parts):
        where = path_text(parts[: depth + 1])
        if isinstance(part, int):
            if not isinstance(node, list):
                raise UserError(f"{flag}: {path_text(parts[:depth])} is not a list; drop [{part}]")
            if part >= len(node):
                listed = path_text(parts[:depth])
                raise UserError(f"{flag}: {where}: {listed} has {len(node)} entries here (indexes from 0)")
            node = node[part]
            continue
        node, info, spec_type = _child(node, part, where, flag)
    if isinstance(node, bool) or not isinstance(node, int | float):
        shown = "null" if node is None else type(node).__name__
        raise UserError(
            f"{flag}: {path_text(parts)} holds {shown} in this scenario, not a number; expected a numeric field"
        )
    duration = spec_type is DURATION or (info is not None and _is_duration(info))
    integer = spec_type is INTEGER or (spec_type is None and isinstance(node, int))
    return Field(float(node), duration, integer)


def _child(node: Any, part: str, where: str, flag: str) -> tuple[Any, FieldInfo | None, object]:
    """The value of field ``part`` of ``node``, its pydantic field (if one), and its spec type (if a spec's)."""
    if isinstance(node, BaseModel):
        fields = type(node).model_fields
        name = part if part in fields else next((n for n, f in fields.items() if f.alias == part), None)
        if name is None:
            accepted = ", ".join(f.alias or n for n, f in fields.items())
            raise UserError(f"{flag}: {where}: no such field; fields here: {accepted}")
        return getattr(node, name), fields[name], None
    if isinstance(node, Spec):
        by_key = {info.key: info for info in params_of(type(node))}
        if part not in by_key:
            raise UserError(
                f"{flag}: {where}: {node.name!r} has no parameter {part!r}; parameters: {', '.join(by_key)}"
            )
        return getattr(node, by_key[part].field), None, by_key[part].type
    if isinstance(node, list):
        raise UserError(f"{flag}: {where}: {where.rpartition('.')[0]} is a list; give an index, like faults[0].for")
    raise UserError(f"{flag}: {where}: a {type(node).__name__} has no fields to vary")


def _is_duration(info: FieldInfo) -> bool:
    validators = {id(item) for annotated in (Duration, PositiveDuration) for item in typing.get_args(annotated)[1:]}
    return any(id(item) in validators for item in info.metadata)


def parse_vary(text: str, scenario: Scenario) -> Axis:
    """``PATH=RANGE`` against ``scenario``: the axis, its values checked against the field's kind."""
    flag = f"--vary {text}"
    path, equals, spread = text.partition("=")
    if not equals or not path.strip() or not spread.strip():
        raise UserError(f"{flag}: expected PATH=LO..HI:N (faults[0].for=5s..60s:12), ..:N:log, or PATH=A,B,C")
    parts = parse_path(path.strip(), flag)
    field = resolve(scenario, parts, flag)
    values, scale = _values(spread.strip(), field, flag)
    if field.integer:
        rounded = [float(round(value)) for value in values]
        if len(set(rounded)) != len(rounded):
            raise UserError(f"{flag}: {path_text(parts)} takes whole numbers and these round to the same: fewer values")
        values = rounded
    return Axis(path_text(parts), parts, tuple(values), field.duration, field.integer, scale)


def _number(text: str, field: Field, flag: str) -> float:
    """A value of the field: a number, or for a duration a duration with its unit (``5s``; a bare number is refused)."""
    value = math.nan
    with contextlib.suppress(SpecError, ValueError):
        value = parse_duration(text.strip(), what="value") if field.duration else float(text)
    if math.isnan(value):
        kind = "a duration with its unit (5s, 100ms)" if field.duration else "a number (no unit)"
        raise UserError(f"{flag}: got {text.strip()!r}; this field takes {kind}")
    if not math.isfinite(value):
        raise UserError(f"{flag}: got {text.strip()!r}; expected a finite number")
    return value


def _values(spread: str, field: Field, flag: str) -> tuple[list[float], Scale]:
    if ".." not in spread:
        values = [_number(item, field, flag) for item in spread.split(",")]
        if len(values) > MAX_POINTS or len(set(values)) != len(values):
            raise UserError(f"{flag}: expected 1 to {MAX_POINTS} different values")
        return values, "linear"
    low_text, _, rest = spread.partition("..")
    high_text, *options = rest.split(":")
    if not 1 <= len(options) <= 2:
        raise UserError(f"{flag}: expected LO..HI:N or LO..HI:N:log, e.g. 5s..60s:12")
    low, high = _number(low_text, field, flag), _number(high_text, field, flag)
    try:
        count = int(options[0])
    except ValueError:
        raise UserError(
            f"{flag}: N: got {options[0]!r}; expected a whole number of values, 2 to {MAX_POINTS}"
        ) from None
    scale = options[1].strip() if len(options) == 2 else "linear"
    if scale not in ("linear", "log"):
        raise UserError(f"{flag}: got :{scale}; expected :log (or nothing, for evenly spaced values)")
    if not 2 <= count <= MAX_POINTS or not low < high:
        raise UserError(f"{flag}: expected LO < HI and 2 to {MAX_POINTS} values; got {spread}")
    if scale == "log":
        if low <= 0:
            raise UserError(f"{flag}: a log range starts above 0; got {low_text.strip()}")
        return [_tidy(low * (high / low) ** (i / (count - 1))) for i in range(count)], "log"
    return [_tidy(low + (high - low) * i / (count - 1)) for i in range(count)], "linear"


def _tidy(value: float) -> float:
    """``value`` to 12 significant digits: ``0.15``, not ``0.15000000000000002``."""
    return float(f"{value:.12g}")


def set_value(data: dict[str, Any], scenario: Scenario, parts: Sequence[Part], value: object) -> None:
    """Set ``parts`` to ``value`` in ``data``, the plain data ``scenario`` was validated from.

    A spec written as a string (``model: exponential:limit=30``) becomes its mapping
    first, and a strategy written as a spec becomes ``{label, strategy}`` with its label
    kept, so a parameter inside either can be set; a section or key not written yet is
    added.
    """
    node: Any = data
    validated: Any = scenario
    for depth, part in enumerate(parts[:-1]):
        following = parts[depth + 1]
        validated = validated[part] if isinstance(part, int) else getattr(validated, _attribute(validated, part))
        child = _as_mapping(node[part] if isinstance(part, int) else node.get(part), validated, following)
        node[part] = child
        node = child
    node[parts[-1]] = value


def _attribute(model: Any, part: str) -> str:
    if isinstance(model, BaseModel):
        fields = type(model).model_fields
        return part if part in fields else next(n for n, f in fields.items() if f.alias == part)
    return next(info.field for info in params_of(type(model)) if info.key == part)


def _as_mapping(raw: Any, validated: Any, following: Part) -> Any:
    """``raw`` as a mapping (or list) that can take ``following``."""
    if isinstance(following, int):
        return raw
    if isinstance(validated, StrategyEntry) and not (isinstance(raw, Mapping) and "strategy" in raw):
        strategy = raw if isinstance(raw, str) else {k: v for k, v in dict(raw).items() if k != "label"}
        return {"label": validated.label, "strategy": strategy}
    if isinstance(validated, Spec) and not isinstance(raw, Mapping):
        return spec_to_mapping(validated)
    return dict(raw) if isinstance(raw, Mapping) else {}
