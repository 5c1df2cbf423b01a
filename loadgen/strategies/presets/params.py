"""Parameter types the presets need beyond :mod:`retrystorm.spec`'s: booleans and lists of statuses."""

from __future__ import annotations

from collections.abc import Callable

from retrystorm.errors import SpecError, shown
from retrystorm.spec import ParamType


def bracket_items(text: str) -> list[str]:
    """``[a,b]`` or ``a`` -> the items, stripped (a spec splits on commas outside brackets)."""
    body = text.strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1]
    return [item.strip() for item in body.split(",") if item.strip()]


def _bool_from_text(text: str, what: str) -> bool:
    word = text.strip().lower()
    if word in ("true", "yes", "1"):
        return True
    if word in ("false", "no", "0"):
        return False
    raise SpecError(f"{what}: got {shown(text)}, expected true or false")


def _bool_from_value(value: object, what: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _bool_from_text(value, what)
    raise SpecError(f"{what}: got {shown(value)}, expected true or false")


BOOLEAN = ParamType("true|false", "true or false", _bool_from_text, _bool_from_value, lambda v: str(v).lower())


def _statuses(items: list[object], what: str) -> tuple[int, ...]:
    found = []
    for item in items:
        text = str(item).strip()
        status = len(text) == 3 and text.isascii() and text.isdigit() and 100 <= int(text) <= 599
        if isinstance(item, bool) or not status:
            raise SpecError(f"{what}: got {shown(item)}, expected HTTP statuses (100-599) in brackets, like [429,503]")
        found.append(int(text))
    return tuple(sorted(set(found)))


def _statuses_from_value(value: object, what: str) -> tuple[int, ...]:
    if isinstance(value, str):
        return _statuses(list(bracket_items(value)), what)
    if isinstance(value, list | tuple):
        return _statuses(list(value), what)
    raise SpecError(f"{what}: got {shown(value)}, expected HTTP statuses in brackets, like [429,503]")


STATUSES = ParamType(
    "statuses",
    "HTTP statuses in brackets, like [429,503]",
    lambda text, what: _statuses(list(bracket_items(text)), what),
    _statuses_from_value,
    lambda values: "[" + ",".join(str(v) for v in values) + "]",
)


def word_list(accepted: tuple[str, ...], normalise: Callable[[str], str] = str.lower) -> ParamType:
    """A list in brackets of words from ``accepted`` (each normalised first), kept in the order given."""
    listed = ", ".join(accepted)

    def read(items: list[object], what: str) -> tuple[str, ...]:
        words = []
        for item in items:
            word = normalise(str(item).strip())
            if word not in accepted:
                raise SpecError(f"{what}: got {shown(item)}, expected a list in brackets of {listed}")
            if word not in words:
                words.append(word)
        if not words:
            raise SpecError(f"{what}: empty; expected a list in brackets of {listed}")
        return tuple(words)

    def from_value(value: object, what: str) -> tuple[str, ...]:
        if isinstance(value, str):
            return read(list(bracket_items(value)), what)
        if isinstance(value, list | tuple):
            return read(list(value), what)
        raise SpecError(f"{what}: got {shown(value)}, expected a list in brackets of {listed}")

    return ParamType(
        "list",
        f"a list in brackets of {shown}",
        lambda text, what: read(list(bracket_items(text)), what),
        from_value,
        lambda values: "[" + ",".join(values) + "]",
    )
