"""Request bodies as pydantic models: strict about their fields, refused in one line.

The chaos API and the target's admin API declare their JSON bodies as :class:`Body`
models and build their OpenAPI documents from those models' JSON schema, so what is
documented is what is checked. What a schema cannot state (a duration's text, rules
across fields) is checked after, by the domain objects the bodies become.

A refused body is one line naming the field and what it accepts: every field is
wrapped by :func:`explained`, an unknown field is refused naming the accepted ones
(:meth:`Body.unknown_field`), and :func:`first_problem` turns the first problem of a
:class:`~pydantic.ValidationError` into that line.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    model_validator,
)

from retrystorm.durations import ACCEPTED, MAX_DURATION_CHARS, MAX_DURATION_S, parse_duration
from retrystorm.errors import SpecError, shown

#: Where a problem is: the keys and list indexes from the body down to the value.
Location = tuple[int | str, ...]


class Body(BaseModel):
    """A JSON object body with known fields; any other field is refused, naming the accepted ones."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _refuse_unknown_fields(cls, data: object) -> object:
        if isinstance(data, dict):
            known = set(cls.field_keys())
            if cls.model_config.get("populate_by_name"):
                known.update(cls.model_fields)
            for key in data:
                if key not in known:
                    raise ValueError(cls.unknown_field(key))
        return data

    @classmethod
    def field_keys(cls) -> list[str]:
        """The keys this body takes, in declaration order."""
        return [field.alias or name for name, field in cls.model_fields.items()]

    @classmethod
    def unknown_field(cls, key: object) -> str:
        """The refusal of ``key``, a field this body does not take."""
        return f"unknown field {shown(key)}; accepted: {', '.join(cls.field_keys())}"


def explained(accepted: str) -> WrapValidator:
    """A validator that words any refusal of a value as ``got VALUE, expected ACCEPTED``.

    Put it after the type's constraints (``Annotated[int, Field(ge=1), explained("...")]``):
    it wraps them, so a wrong type, an out-of-range number and a value too long for a
    float are all refused in the same words.
    """

    def refuse_in_words(value: object, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(value)
        except ValidationError:
            raise ValueError(f"got {shown(value)}, expected {accepted}") from None

    return WrapValidator(refuse_in_words)


def _integral(value: object) -> object:
    """A float without a fraction (``250.0``, ``1e2``) as the whole number it is; anything else as it is."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def whole_number(*, ge: float | None = None, gt: float | None = None, le: float | None = None) -> Any:
    """A whole number within the bounds: a JSON integer, or a number without a fraction.

    JSON Schema's ``integer`` is any number whose fraction is zero, ``250.0`` and ``1e2``
    included, so such a number is read as the whole number it is; ``true`` is not one.
    """
    return Annotated[int, Strict(), Field(ge=ge, gt=gt, le=le), BeforeValidator(_integral)]


def duration_forms(
    *,
    at_least: float | None = None,
    above: float | None = None,
    at_most: float = MAX_DURATION_S,
    max_chars: int = MAX_DURATION_CHARS,
) -> Any:
    """A duration in a JSON body: a number of seconds within the bounds, or a text with a unit.

    The number's bounds are checked here and stated in the schema; the text is only
    checked for its length: what it says (and whether that is within the bounds) is
    read after, by :func:`duration` or by the spec the body becomes.
    """
    least = None if above is not None else max(at_least or 0.0, 0.0)  # no duration is negative
    seconds = Annotated[
        float,
        Strict(),
        Field(ge=least, gt=above, le=at_most, allow_inf_nan=False, description="a number of seconds"),
    ]
    text = Annotated[str, Strict(), Field(min_length=1, max_length=max_chars, description=ACCEPTED)]
    return seconds | text


def duration(*, accepted: str, above: float | None = None, at_most: float = MAX_DURATION_S, max_chars: int) -> Any:
    """A duration field read into seconds: a number of seconds, or a text such as ``"30s"``.

    ``accepted`` words what the field takes, for the refusals; a text is read by
    :func:`~retrystorm.durations.parse_duration`, whose refusals say what was wrong with it.
    """

    def seconds(value: float | str) -> float:
        if isinstance(value, float):
            return value
        try:
            read = parse_duration(value, what="duration", at_most=at_most)
        except SpecError as error:
            raise ValueError(str(error).removeprefix("duration: ")) from None
        if above is not None and read <= above:
            raise ValueError(f"got {shown(value)}, expected {accepted}")
        return read

    forms = duration_forms(above=above, at_most=at_most, max_chars=max_chars)
    return Annotated[forms, explained(accepted), AfterValidator(seconds)]


def field_path(location: Location) -> str:
    """``duration``, ``delays.2``: the keys down to the value; ``body`` for the body itself."""
    return ".".join(str(part) for part in location) or "body"


def first_problem(
    error: ValidationError, *, example: str = "a JSON object", where: Callable[[Location], str] = field_path
) -> str:
    """The first problem of a refused body as one line: ``duration: got 'soon', expected ...``.

    ``example`` is what a body looks like (for a body that is not JSON or not an
    object); ``where`` names the place of a problem.
    """
    problems = error.errors(include_url=False)
    if not problems:
        return "body: not accepted"
    problem = problems[0]
    kind = problem["type"]
    if kind == "json_invalid":
        return f"body: not valid JSON; expected {example}"
    if kind == "model_type":
        return f"body: expected {example}"
    place = where(problem["loc"])
    if kind == "missing":
        return f"{place}: required"
    if kind == "value_error":
        return f"{place}: {problem['ctx']['error']}"
    return f"{place}: got {shown(problem.get('input'))}; {_expected(problem['msg'])}"


def _expected(message: str) -> str:
    """pydantic's ``Input should be a valid string`` as ``expected a valid string``, and
    ``String should have at most 5 characters`` as ``expected a string with at most 5 characters``."""
    message = re.sub(r"^Input should be ", "expected ", message)
    return re.sub(r"^(\w+) should have ", lambda match: f"expected a {match[1].lower()} with ", message)
