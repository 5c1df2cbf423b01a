"""Load a scenario from YAML, keeping line numbers so an error can point at its line.

Every problem is one line, ``FILE:LINE: field.path: what was found; what is accepted``,
raised as :class:`ScenarioError` (a user error: exit 2); a file with several problems
gets one line for each (at most :data:`MAX_ERROR_LINES`), so one edit can fix them all. The YAML is composed into
nodes first, so each value's line is known; pydantic validates the plain data; then
:meth:`Scenario.problems` checks the cross-field rules.

Hostile or absurd files are refused within a fraction of a second, before anything
is built from them: more than :data:`MAX_FILE_BYTES`, bytes that are not UTF-8 text,
nesting deeper than :data:`MAX_DEPTH` (checked on the parser's events, before the
recursive composer runs), and aliases that expand to more than :data:`MAX_VALUES`
values (a "billion laughs" file) or refer to themselves.
"""

from __future__ import annotations

import os
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from retrystorm.errors import did_you_mean, shown
from retrystorm.experiment.scenario.catalog import find_scenario, missing_hint
from retrystorm.experiment.scenario.errors import ScenarioError
from retrystorm.experiment.scenario.fields import REQUIRE_UNITS
from retrystorm.experiment.scenario.model import Loc, Scenario
from retrystorm.experiment.scenario.triggers import TRIGGER_TYPES
from retrystorm.user_files import UserFileError, read_user_file

__all__ = ["ScenarioError", "load_scenario", "parse_scenario", "scenario_data", "scenario_from_data"]

#: The largest scenario file read.
MAX_FILE_BYTES = 1024 * 1024
#: The deepest nesting of mappings and lists (a scenario needs 4).
MAX_DEPTH = 32
#: The most values a file may hold once its aliases are expanded.
MAX_VALUES = 10_000
#: The most problems an error lists, one per line (a hostile file may hold thousands).
MAX_ERROR_LINES = 20
#: A YAML parser written in C where PyYAML has one: the pure-Python scanner takes seconds on deep flow nesting.
_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_scenario(given: str | os.PathLike[str] | Traversable, *, overrides: dict[str, Any] | None = None) -> Scenario:
    """Read, parse and validate a scenario: a file, or a shipped scenario's name (``smira-laptop``).

    A bare name is always a shipped scenario's (:func:`~retrystorm.experiment.scenario.catalog.find_scenario`);
    run as root, a file another user can change is refused
    (:func:`~retrystorm.experiment.scenario.trust.refuse_untrusted`).
    ``overrides`` are merged into the top level before validation (dotted keys such as
    ``"load.users"`` reach into sections), so flags can change a file's settings and
    still get the same validation.
    """
    found = find_scenario(given)
    stem = found.name.removesuffix(".yaml").removesuffix(".yml")
    return parse_scenario(_read_text(found), source=str(found), default_name=stem, overrides=overrides)


def scenario_data(given: str | os.PathLike[str] | Traversable) -> tuple[dict[str, Any], str]:
    """A scenario's plain data as its file holds it (its name defaulted from the file's) and where it came
    from, validated once: for callers that change fields and validate each variant
    (:func:`scenario_from_data`), as ``retrystorm map`` does."""
    found = find_scenario(given)
    text = _read_text(found)
    data, lines = _compose(text, str(found))
    if not isinstance(data, dict):
        raise ScenarioError(f"{found}:1: expected a mapping with name, model, load, strategies; got {data!r}")
    data.setdefault("name", found.name.removesuffix(".yaml").removesuffix(".yml"))
    _validate(data, str(found), lines)
    return data, str(found)


def _read_text(path: Path | Traversable) -> str:
    """The file as text: a regular file (a FIFO or a device is refused, never waited on), at most
    :data:`MAX_FILE_BYTES`, UTF-8, no NUL byte."""
    try:
        if isinstance(path, Path):
            raw = read_user_file(path, MAX_FILE_BYTES)
        else:
            with path.open("rb") as handle:  # a shipped scenario inside an archive
                raw = handle.read(MAX_FILE_BYTES + 1)
    except (OSError, UserFileError) as error:
        hint = missing_hint(path) if isinstance(path, Path) and not os.path.exists(path) else ""  # noqa: PTH110 - False, not an error, for a name too long
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise ScenarioError(f"{path}: cannot read the scenario: {reason}{hint}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise ScenarioError(f"{path}: larger than {MAX_FILE_BYTES // 1024} KiB; a scenario is a short YAML file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise ScenarioError(f"{path}:{line}: not UTF-8 text (byte {error.start}); expected a YAML file") from None
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise ScenarioError(f"{path}:{line}: a NUL byte: this is a binary file, expected a YAML file")
    return text


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
    """Validate a scenario built in code (from flags, durations already in seconds); errors name ``source`` and the
    field."""
    return _validate(data, source, {}, require_units=False)


def _validate(data: dict[str, Any], source: str, lines: dict[Loc, int], *, require_units: bool = True) -> Scenario:
    """Validate ``data``; a file's durations need their units (:data:`~.fields.REQUIRE_UNITS`)."""
    try:
        scenario = Scenario.model_validate(data, context=REQUIRE_UNITS if require_units else None)
    except ValidationError as error:
        raise ScenarioError(_describe(error, source, lines)) from None
    problems = [f"{_where(source, lines, loc)}: {_path(loc)}: {message}" for loc, message in scenario.problems()]
    if problems:
        raise ScenarioError(_lines(problems, source))
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


#: What libyaml (PyYAML >= 6.0.4's wheels) says when its own nesting limit (1,000) is hit: its scanner reads
#: ahead of the events, so a deep flow collection can reach that limit before this module counts 33 levels.
_LIBYAML_DEPTH = "exceeded maximum nesting depth"


def _mark_line(mark: Any) -> int:
    """The 1-based line of a YAML mark (``yaml.error.Mark`` or libyaml's), 1 when there is none."""
    return mark.line + 1 if mark is not None else 1


def _too_deep(source: str, line: int) -> ScenarioError:
    return ScenarioError(f"{source}:{line}: nested deeper than {MAX_DEPTH} levels; a scenario needs 4")


def _yaml_error(error: yaml.YAMLError, source: str) -> ScenarioError:
    """One line for a YAML error; libyaml's own nesting limit reads as this module's (:func:`_too_deep`)."""
    line = _mark_line(getattr(error, "problem_mark", None))
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    if _LIBYAML_DEPTH in problem:
        return _too_deep(source, line)
    return ScenarioError(f"{source}:{line}: not valid YAML: {problem}")


def _check_depth(text: str, source: str) -> None:
    """Refuse nesting deeper than :data:`MAX_DEPTH`, reading parser events (no recursion, no tree)."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=_LOADER):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise _too_deep(source, _mark_line(event.start_mark))
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError as error:
        raise _yaml_error(error, source) from None


def _compose(text: str, source: str) -> tuple[Any, dict[Loc, int]]:
    """The YAML as plain data, and the line of every mapping key and list item."""
    _check_depth(text, source)
    try:
        root = yaml.compose(text, Loader=_LOADER)
    except yaml.YAMLError as error:
        raise _yaml_error(error, source) from None
    if root is None:
        raise ScenarioError(f"{source}:1: the file is empty; expected a scenario mapping")
    lines: dict[Loc, int] = {(): root.start_mark.line + 1}
    builder = _Builder(source, lines)
    return builder.build(root, ()), lines


class _Builder:
    """Plain data from composed nodes, counting values so that aliases cannot expand without bound."""

    def __init__(self, source: str, lines: dict[Loc, int]) -> None:
        self.source = source
        self.lines = lines
        self.values = 0
        self.constructor = yaml.SafeLoader("")

    def build(self, node: yaml.Node, loc: Loc) -> Any:
        self.values += 1
        line = node.start_mark.line + 1
        if self.values > MAX_VALUES:
            raise ScenarioError(
                f"{self.source}:{line}: more than {MAX_VALUES:,} values once aliases are expanded; "
                "a scenario is a short file (are aliases nested inside each other?)"
            )
        if len(loc) > MAX_DEPTH:
            raise ScenarioError(f"{self.source}:{line}: an alias that contains itself; expected plain values")
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, loc)
        if isinstance(node, yaml.SequenceNode):
            items = []
            for index, item in enumerate(node.value):
                self.lines[(*loc, index)] = item.start_mark.line + 1
                items.append(self.build(item, (*loc, index)))
            return items
        return self._scalar(node, loc)

    def _mapping(self, node: yaml.MappingNode, loc: Loc) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise ScenarioError(f"{self.source}:{key_node.start_mark.line + 1}: {_path(loc)}: a key must be a name")
            key = self._scalar(key_node, loc)
            child = (*loc, str(key)[:100])
            if key in result:
                where = _path(child)
                raise ScenarioError(f"{self.source}:{key_node.start_mark.line + 1}: {where}: given twice; keep one")
            self.lines[child] = key_node.start_mark.line + 1
            result[key] = self.build(value_node, child)
        return result

    def _scalar(self, node: yaml.Node, loc: Loc) -> Any:
        try:
            return self.constructor.construct_object(node, deep=True)
        except (ValueError, OverflowError):  # e.g. an integer of more than 4,300 digits
            text = str(node.value)
            shown = text if len(text) <= 40 else f"{text[:20]}...({len(text)} characters)"
            where = f"{self.source}:{node.start_mark.line + 1}: {_path(loc)}"
            raise ScenarioError(f"{where}: {shown} is not a number this file format can hold") from None
        except yaml.YAMLError as error:
            raise _yaml_error(error, self.source) from None


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
    """Every validation error, one line each, in the file's order.

    An unknown key is usually a typo of a required one, so unknown keys come before the
    "missing" errors of the same mapping. Several errors of one field (a union's
    alternatives) are one line: the first.
    """
    found: dict[Loc, tuple[int, bool, str]] = {}
    for item in error.errors(include_url=False):
        loc, kind = _untag(tuple(part for part in item["loc"] if isinstance(part, str | int)))
        if loc in found:
            continue
        line = _line(lines, loc) if lines else 0
        found[loc] = (
            line,
            item["type"] != "extra_forbidden",
            f"{_where(source, lines, loc)}: {_path(loc)}: {_message(item, loc, kind)}",
        )
    ordered = sorted(found.values(), key=lambda entry: (entry[1], entry[0]))
    return _lines([text for _, _, text in ordered], source)


def _lines(problems: list[str], source: str) -> str:
    """The problems one per line; beyond :data:`MAX_ERROR_LINES`, a last line counting the rest."""
    shown_lines = problems[:MAX_ERROR_LINES]
    if len(problems) > MAX_ERROR_LINES:
        shown_lines.append(f"{source}: and {len(problems) - MAX_ERROR_LINES} more problems")
    return "\n".join(shown_lines)


def _untag(loc: Loc) -> tuple[Loc, type[BaseModel] | None]:
    """``loc`` without the trigger kind pydantic puts after ``faults[i]`` (its union's tag), and that kind's model."""
    if len(loc) > 2 and loc[0] == "faults" and isinstance(loc[1], int) and loc[2] in TRIGGER_TYPES:
        return (*loc[:2], *loc[3:]), TRIGGER_TYPES[str(loc[2])]
    return loc, None


def _message(error: Any, loc: Loc, trigger: type[BaseModel] | None = None) -> str:
    kind = error["type"]
    if kind == "value_error" and "error" in error.get("ctx", {}):
        return str(error["ctx"]["error"])
    if kind == "missing":
        return "missing; this field is required"
    if kind == "extra_forbidden":
        accepted = _accepted_keys(loc[:-1]) if trigger is None else _keys(trigger)
        hint = did_you_mean(loc[-1] if loc else None, accepted)
        return f"unknown field{hint}; accepted: {', '.join(accepted)}" if accepted else "unknown field"
    expected = str(error["msg"]).replace("Input should be", "expected").replace("Input", "expected")
    return f"got {shown(error.get('input'))}; {expected}"


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
    return [] if model is None else _keys(model)


def _keys(model: type[BaseModel]) -> list[str]:
    return [field.alias or name for name, field in model.model_fields.items()]


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_in(arg)
        if found is not None:
            return found
    return None
