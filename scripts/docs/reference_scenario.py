"""The scenario schema reference: every key of a scenario file, its type, default, bounds and meaning.

Read from the pydantic models the loader validates with (:class:`retrystorm.experiment.scenario.model.Scenario` and
the models it holds): a key's name (its alias), its default, its bounds (the ``Field`` constraints), its type (the
annotation, or for a type the loader parses itself, such as a duration or a strategy spec, the validator that
parses it) and its meaning (the field's docstring). A field without a docstring is an error: every key is
documented where it is declared.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from typing import Any

import annotated_types
from pydantic import BaseModel
from pydantic_core import PydanticUndefined
from reference_specs import cell, code, table

from retrystorm.durations import format_duration
from retrystorm.experiment.scenario.model import Scenario
from retrystorm.experiment.scenario.triggers import TRIGGER_TYPES

#: What a value is, by the function that parses it (the scenario's own field types).
PARSED_BY = {
    "_duration": "duration",
    "_positive_duration": "duration > 0",
    "read_strategy": "strategy spec",
    "parse_budget": "budget spec",
    "parse_model": "model spec",
    "_think_time": "think time",
    "_recovery_bound": "duration, or never",
    "_url": "http(s) URL",
    "_command": "command line",
    "_metric": "metric name",
    "_container": "container name",
    "_retry_on": "list of retry conditions",
    "check_method": "HTTP method",
    "check_path": "path",
    "check_name": "text",
    "check_headers": "mapping of header to value",
    "check_body": "text",
    "check_weight": "whole number",
}
_DURATION_TYPES = ("duration", "duration > 0", "duration, or never")
_UNIONS = (typing.Union, types.UnionType)
_BOUNDS = (
    (annotated_types.Ge, "ge", ">="),
    (annotated_types.Gt, "gt", ">"),
    (annotated_types.Le, "le", "<="),
    (annotated_types.Lt, "lt", "<"),
)


class UndocumentedFieldError(Exception):
    """A scenario field without a docstring: the reference would have nothing to say of it."""


def _parser_name(validator: Any) -> str | None:
    """The name of the function a validator parses with (the one a ``_parsed_by`` / ``_checked`` wrapper calls)."""
    func = getattr(validator, "func", None)
    if func is None:
        return None
    for cell_ in getattr(func, "__closure__", None) or ():
        inner = cell_.cell_contents
        if callable(inner) and getattr(inner, "__name__", "") in PARSED_BY:
            return str(inner.__name__)
    return str(getattr(func, "__name__", "")) or None


def _parsed_type(metadata: list[Any]) -> str | None:
    for item in metadata:
        name = _parser_name(item)
        if name in PARSED_BY:
            return PARSED_BY[name]
    return None


def type_text(annotation: Any, metadata: list[Any]) -> str:
    """A field's type in words: ``whole number``, ``duration > 0``, ``strategy spec``, ``list of mapping``..."""
    parsed = _parsed_type(metadata)
    if parsed is not None:
        return parsed
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return type_text(args[0], list(args[1:]))
    if origin in _UNIONS:
        shown = [type_text(arg, []) for arg in args if arg is not type(None)]
        return " or ".join(shown)
    if origin is typing.Literal:
        return "one of " + ", ".join(code(value) for value in args)
    if origin is list:
        inner = typing.get_args(args[0])
        if typing.get_origin(args[0]) is typing.Annotated and typing.get_origin(inner[0]) in (
            typing.Union,
            types.UnionType,
        ):
            return "list of triggers"
        return f"list of {type_text(args[0], [])}"
    if origin is dict:
        return f"mapping by label of {type_text(args[1], [])}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "mapping"
    return {bool: "true or false", int: "whole number", float: "number", str: "text"}.get(annotation, "value")


def _bounds(metadata: list[Any], kind: str) -> str:
    parts = []
    for item in metadata:
        for bound_type, attribute, word in _BOUNDS:
            if isinstance(item, bound_type):
                value = getattr(item, attribute)
                shown = format_duration(value) if kind in _DURATION_TYPES else _number(value)
                parts.append(f"{word} {shown}")
        if isinstance(item, annotated_types.MinLen) and item.min_length > 0:
            parts.append(f"at least {item.min_length:,} long")
        if isinstance(item, annotated_types.MaxLen):
            parts.append(f"at most {item.max_length:,} long")
    return ", ".join(parts)


def _number(value: float) -> str:
    """``1,000,000`` for 1e6 and 1_000_000.0 alike; ``0.2`` stays."""
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,}"


def _default(field: Any, kind: str) -> str:
    if field.is_required():
        return "see meaning" if "default:" in (field.description or "") else "required"
    value = field.default
    if value is PydanticUndefined:
        return "-"
    if value is None:
        return code("null")
    if isinstance(value, bool):
        return code(str(value).lower())
    if isinstance(value, float) and kind in _DURATION_TYPES:
        return code(format_duration(value))
    if hasattr(value, "spec") and callable(value.spec):
        return code(value.spec())
    if isinstance(value, BaseModel):
        return "(its defaults)"
    if value in ([], {}):
        return "none"
    if value == "":
        return "empty"
    return code(value)


def _inner_annotation(annotation: Any) -> Any:
    """The annotation without ``None``, ``Annotated``, ``list`` or ``dict``: what a nested mapping's model is."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _inner_annotation(args[0])
    if origin in (typing.Union, types.UnionType):
        kept = [arg for arg in args if arg is not type(None)]
        return _inner_annotation(kept[0]) if len(kept) == 1 else annotation
    if origin is list:
        return _inner_annotation(args[0])
    if origin is dict:
        return _inner_annotation(args[1])
    return annotation


def _nested_key(annotation: Any) -> str:
    """How a nested model's keys are written under their parent: ``.KEY``, ``[].KEY`` or ``.LABEL.KEY``."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _nested_key(args[0])
    if origin in (typing.Union, types.UnionType):
        kept = [arg for arg in args if arg is not type(None)]
        return _nested_key(kept[0]) if len(kept) == 1 else "."
    if origin is list:
        return "[]."
    if origin is dict:
        return ".LABEL."
    return "."


def rows(model: type[BaseModel], prefix: str = "") -> Iterator[list[str]]:
    """One row per key of ``model`` (and of the models it holds, under their key), in declaration order."""
    for name, field in model.model_fields.items():
        key = prefix + (field.alias or name)
        if not field.description:
            raise UndocumentedFieldError(
                f"{model.__module__}.{model.__name__}.{name} has no docstring: write one under the field, saying what "
                "it means and what it accepts beyond its type (the scenario reference is generated from it)"
            )
        kind = type_text(field.annotation, list(field.metadata))
        yield [
            code(key),
            kind,
            _default(field, kind),
            _bounds(list(field.metadata), kind) or "-",
            cell(field.description),
        ]
        inner = _inner_annotation(field.annotation)
        if isinstance(inner, type) and issubclass(inner, BaseModel) and key != "faults":
            yield from rows(inner, key + _nested_key(field.annotation))


def _table(model: type[BaseModel], prefix: str = "") -> str:
    return table(["key", "type", "default", "bounds", "meaning"], rows(model, prefix))


def scenario_page() -> str:
    """Every key of a scenario file."""
    trigger_sections = []
    for kind, model in TRIGGER_TYPES.items():
        trigger_sections.append(f"### `{kind}`\n\n{cell(model.__doc__ or '')}\n\n{_table(model, 'faults[].')}")
    return "\n\n".join(
        [
            "# Scenario files",
            (
                "Every key of a scenario file, as the loader validates it (`retrystorm sim run` and `retrystorm run` "
                "read the same files). A duration is written with its unit (`100ms`, `2s`, `5m`; only `0` goes "
                "without one); a spec is `NAME` or `NAME:key=value,...`, or a mapping with a `name` key. A key not "
                "listed here is refused, and every error is one line naming the file, line and key, with exit "
                "status 2. [Scenarios](../concepts/scenarios.md) walks through an example; the specs' parameters "
                "are in [Strategies, presets and budgets](strategies.md) and [Overload models](models.md)."
            ),
            "In the keys, `[]` is an entry of a list and `LABEL` a strategy's label.",
            "## Keys",
            _table(Scenario),
            "## Triggers (`faults`)",
            (
                "Each entry of `faults` is one trigger, named by the key of its kind (an entry naming none is a pause "
                "of `target`); every kind takes the timing keys (`at`, `for`, `repeat`, `random_start`). "
                "[Triggers](../concepts/triggers.md) says what each does, live and simulated."
            ),
            *trigger_sections,
        ]
    )
