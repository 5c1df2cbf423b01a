"""Load a scenario from YAML, keeping line numbers so an error can point at its line.

Every error is one line, ``FILE:LINE: field.path: what was found; what is accepted``,
raised as :class:`ScenarioError` (a user error: exit 2). The YAML is composed into
nodes first, so each value's line is known; pydantic validates the plain data; then
:meth:`Scenario.problems` checks the cross-field rules.
"""

from __future__ import annotations

import os
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from experiment.scenario.catalog import find_scenario, missing_hint
from experiment.scenario.errors import ScenarioError
from experiment.scenario.model import Loc, Scenario

__all__ = ["ScenarioError", "load_scenario", "parse_scenario", "scenario_from_data"]


def load_scenario(given: str | os.PathLike[str] | Traversable, *, overrides: dict[str, Any] | None = None) -> Scenario:
    """Read, parse and validate a scenario: a file, or a shipped scenario's name (``smira-laptop``).

    An existing file wins over a shipped name (:func:`~experiment.scenario.catalog.find_scenario`).
    ``overrides`` are merged into the top level before validation (dotted keys such as
    ``"load.users"`` reach into sections), so flags can change a file's settings and
    still get the same validation.
    """
    found = find_scenario(given)
    try:
        text = found.read_text(encoding="utf-8")
    except OSError as error:
        hint = missing_hint(found) if isinstance(found, Path) else ""
        raise ScenarioError(f"{found}: cannot read the scenario: {error.strerror or error}{hint}") from None
    stem = found.name.removesuffix(".yaml").removesuffix(".yml")
    return parse_scenario(text, source=str(found), default_name=stem, overrides=overrides)


def parse_scenario(
    text: str, *, source: str = "<scenario>", default_name: str = "scenario", overrides: dict[str, Any] | None = None
) -> Scenario:
    """Parse and validate scenario YAML ``text``; errors name ``source`` and the line."""
    data, lines = _compose(text, source)
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}:1: expected a mapping with name, model, load, strategies; got {data!r}")
    data.setdefault("name", default_name)
    for dotted, value in (overrides or {}).items():
        _set_dotted(data, dotted, value)
    return _validate(data, source, lines)


def scenario_from_data(data: dict[str, Any], *, source: str = "command line") -> Scenario:
    """Validate a scenario built in code (from flags); errors name ``source`` and the field."""
    return _validate(data, source, {})


def _validate(data: dict[str, Any], source: str, lines: dict[Loc, int]) -> Scenario:
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as error:
        raise ScenarioError(_describe(error, source, lines)) from None
    for loc, message in scenario.problems():
        raise ScenarioError(f"{_where(source, lines, loc)}: {_path(loc)}: {message}")
    return scenario


def _where(source: str, lines: dict[Loc, int], loc: Loc) -> str:
    return f"{source}:{_line(lines, loc)}" if lines else source


def _set_dotted(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, key = dotted.split(".")
    node = data
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[key] = value


def _compose(text: str, source: str) -> tuple[Any, dict[Loc, int]]:
    """The YAML as plain data, and the line of every mapping key and list item."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = getattr(error, "problem", None) or str(error)
        raise ScenarioError(f"{source}:{line}: not valid YAML: {problem}") from None
    if root is None:
        raise ScenarioError(f"{source}:1: the file is empty; expected a scenario mapping")
    lines: dict[Loc, int] = {(): root.start_mark.line + 1}
    constructor = yaml.SafeLoader("")
    return _build(root, (), lines, constructor, source), lines


def _build(node: yaml.Node, loc: Loc, lines: dict[Loc, int], constructor: yaml.SafeLoader, source: str) -> Any:
    if isinstance(node, yaml.MappingNode):
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = constructor.construct_object(key_node)
            child = (*loc, str(key))
            if key in result:
                where = _path(child)
                raise ScenarioError(f"{source}:{key_node.start_mark.line + 1}: {where}: given twice; keep one")
            lines[child] = key_node.start_mark.line + 1
            result[key] = _build(value_node, child, lines, constructor, source)
        return result
    if isinstance(node, yaml.SequenceNode):
        items = []
        for index, item in enumerate(node.value):
            lines[(*loc, index)] = item.start_mark.line + 1
            items.append(_build(item, (*loc, index), lines, constructor, source))
        return items
    return constructor.construct_object(node, deep=True)


def _line(lines: dict[Loc, int], loc: Loc) -> int:
    """The line of ``loc``, or of its nearest ancestor the file contains."""
    for end in range(len(loc), -1, -1):
        found = lines.get(tuple(loc[:end]))
        if found is not None:
            return found
    return 1


def _path(loc: Loc) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def _describe(error: ValidationError, source: str, lines: dict[Loc, int]) -> str:
    """The first validation error as one line; a count of the others, if any."""
    errors = error.errors(include_url=False)
    # An unknown key is usually a typo of a required one: report it before the "missing".
    first = min(errors, key=lambda item: item["type"] != "extra_forbidden")
    loc: Loc = tuple(part for part in first["loc"] if isinstance(part, str | int))
    message = _message(first, loc)
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{_where(source, lines, loc)}: {_path(loc)}: {message}{more}"


def _message(error: Any, loc: Loc) -> str:
    kind = error["type"]
    if kind == "value_error" and "error" in error.get("ctx", {}):
        return str(error["ctx"]["error"])
    if kind == "missing":
        return "missing; this field is required"
    if kind == "extra_forbidden":
        accepted = _accepted_keys(loc[:-1])
        return f"unknown field; accepted: {', '.join(accepted)}" if accepted else "unknown field"
    expected = str(error["msg"]).replace("Input should be", "expected").replace("Input", "expected")
    return f"got {error.get('input')!r}; {expected}"


def _accepted_keys(loc: Loc) -> list[str]:
    """The field names (aliases) of the model found at ``loc`` inside a scenario."""
    model: type[BaseModel] | None = Scenario
    for part in loc:
        if model is None or isinstance(part, int):
            continue
        field = model.model_fields.get(str(part))
        if field is None:
            field = next((f for f in model.model_fields.values() if f.alias == part), None)
        model = _model_in(field.annotation) if field is not None else None
    if model is None:
        return []
    return [field.alias or name for name, field in model.model_fields.items()]


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_in(arg)
        if found is not None:
            return found
    return None
