"""A registry's specs as JSON bodies: one pydantic model per registered class, from its parameters.

:func:`spec_body` makes the model of one spec class from its :func:`~retrystorm.spec.param`
declarations (``pydantic.create_model``), and :func:`registry_bodies` the union of a
registry's models, discriminated on ``name``. A class registered later, or a parameter
declared later, is in both the validation and the JSON schema without another line.

Each parameter takes the JSON forms its type has, with its bounds (``at_least``,
``above``, the ceiling) stated in the schema and checked:

* a duration: a number of seconds, or a text with a unit (``"100ms"``);
* a whole number or a number: a JSON number; a list: a JSON list of its entries;
* ``null`` where the parameter is optional;
* every parameter: its text as in a spec (``"40"``, ``"auto"``, ``"[0,10ms]"``).

The body checks the forms and the numbers' bounds; what it does not read (a text, rules
across parameters) the spec checks when the body becomes one (:meth:`SpecBody.mapping`,
then the registry's ``parse``), so the spec stays the validator of record and both
refuse the same values in the same words.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, Literal, Union

from pydantic import Field, Strict, create_model

from retrystorm.bodies import Body, duration_forms, explained, whole_number
from retrystorm.durations import MAX_DURATION_S
from retrystorm.errors import shown
from retrystorm.spec import DURATION, INTEGER, MAX_SPEC_CHARS, NUMBER, ParamInfo, ParamType, Registry, Spec, params_of


class SpecBody(Body):
    """A spec as a JSON object: ``name`` and any of its parameters (the others take their defaults)."""

    name: str

    @classmethod
    def unknown_field(cls, key: object) -> str:
        """An unknown parameter, in the words of the spec parser."""
        accepted = ", ".join(key for key in cls.field_keys() if key != "name") or "(no parameters)"
        return f"unknown parameter {shown(key)}; accepted: {accepted}"

    def mapping(self) -> dict[str, Any]:
        """The spec as a mapping the registry parses: the name and the parameters given."""
        return self.model_dump(by_alias=True, exclude_unset=True)  # name is required: always set


def _value_forms(info: ParamInfo, kind: ParamType) -> Any:
    """The JSON forms of one value of type ``kind`` (a parameter, or an entry of a list) besides text."""
    if kind is DURATION:
        return duration_forms(at_least=info.at_least, above=info.above, at_most=info.ceiling or MAX_DURATION_S)
    if kind is INTEGER:
        return whole_number(ge=info.at_least, gt=info.above, le=info.ceiling)
    if kind is NUMBER:
        return Annotated[float, Strict(), Field(ge=info.at_least, gt=info.above, le=info.ceiling, allow_inf_nan=False)]
    if kind.item is not None:
        entry = _value_forms(info, kind.item)
        return Annotated[list[entry], Field(max_length=kind.max_items)] if entry is not None else None  # type: ignore[valid-type]
    return None


def param_forms(info: ParamInfo) -> Any:
    """The annotation of one parameter: its JSON forms (see the module), refused in the spec's words."""
    text = Annotated[
        str, Strict(), Field(min_length=1, max_length=MAX_SPEC_CHARS, description="the value as in a spec")
    ]
    kind = info.type.optional_of or info.type
    if kind.choices:  # a word: one of its choices, and nothing else
        return Annotated[Literal[kind.choices], explained(f"one of {', '.join(kind.choices)}")]
    value = _value_forms(info, kind)
    forms: list[Any] = [value] if value is not None else []
    if kind is not DURATION:  # duration_forms has its text form
        forms.append(text)
    if info.type.optional_of is not None:
        forms.append(None)
    return Annotated[Union[tuple(forms)], explained(info.describe_bounds())]  # noqa: UP007 - a union built at run time


def _json_default(info: ParamInfo) -> Any:
    """The default as the schema shows it: a JSON number, list or null where it is one, else its text."""
    if info.default is None or (isinstance(info.default, int | float) and not isinstance(info.default, bool)):
        return info.default
    if isinstance(info.default, tuple) and all(isinstance(item, int | float) for item in info.default):
        return list(info.default)
    return info.type.to_text(info.default)


def body_title(cls: type[Spec]) -> str:
    """``ExponentialModel`` for the model ``exponential``: the name of its schema."""
    words = re.split(r"[^0-9A-Za-z]+", f"{cls.name} {cls.kind}")
    return "".join(word[:1].upper() + word[1:] for word in words)


def spec_body(cls: type[Spec], *, adjust: Callable[[ParamInfo], ParamInfo] = lambda info: info) -> type[SpecBody]:
    """The body of spec class ``cls``: ``name`` and one field per parameter.

    ``adjust`` may narrow a parameter's bounds where the body is read (a live server's
    shortest tick, say); the spec's own bounds hold wherever it is built.
    """
    fields: dict[str, Any] = {"name": (Literal[cls.name], Field(description=f"the {cls.kind}"))}
    for info in map(adjust, params_of(cls)):
        description = f"{info.help}; {info.describe_bounds()}; default {info.type.to_text(info.default)}"
        field = Field(default=_json_default(info), alias=info.key, description=description)
        fields[info.field] = (param_forms(info), field)
    summary = (cls.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
    return create_model(body_title(cls), __base__=SpecBody, __doc__=summary, __module__=__name__, **fields)


def registry_bodies(registry: Registry[Any], *, adjust: Callable[[ParamInfo], ParamInfo] = lambda info: info) -> Any:
    """The bodies of every class of ``registry``, one union discriminated on ``name``."""
    bodies = tuple(spec_body(cls, adjust=adjust) for _, cls in registry.items())
    if len(bodies) == 1:
        return bodies[0]
    return Annotated[Union[bodies], Field(discriminator="name")]  # noqa: UP007 - a union built at run time
