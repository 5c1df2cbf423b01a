"""A registry's specs as JSON bodies: a class or parameter registered later is validated and
documented without another line; the bounds the schema states are the ones checked."""

import dataclasses
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from retrystorm.bodies import first_problem
from retrystorm.errors import SpecError
from retrystorm.spec import DURATION, DURATION_LIST, INTEGER, NUMBER, ParamType, Registry, Spec, optional, param
from retrystorm.spec_bodies import body_title, registry_bodies, spec_body

WIDGETS: Registry[Spec] = Registry("widget")
#: A parameter type with no JSON form of its own: its text as in a spec is all a body takes.
COLOUR = ParamType("colour", "red or blue", lambda text, _what: text, lambda value, _what: value, str)


@WIDGETS.register("gear")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Gear(Spec):
    """A widget of every parameter type.

    (Only the first paragraph is documented.)
    """

    teeth: int = param("teeth", INTEGER, 12, "teeth", at_least=3, at_most=500)
    ratio: float = param("ratio", NUMBER, 1.5, "ratio", above=0, at_most=10)
    spin_s: float = param("spin", DURATION, 0.1, "spin time", at_least=0, at_most=60)
    spare: int | None = param("spare", optional(INTEGER, "auto"), None, "spares", at_least=1, at_most=9)
    delays: tuple[float, ...] = param("delays", DURATION_LIST, (0.0, 0.01), "delays", at_least=0, at_most=1)
    colour: str = param("colour", COLOUR, "red", "colour")

    def _validate(self) -> None:
        if self.colour not in ("red", "blue"):
            raise self._fail("colour", f"got {self.colour!r}, expected red or blue")


@WIDGETS.register("cog")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Cog(Spec):
    """A widget without parameters."""


BODIES = TypeAdapter(registry_bodies(WIDGETS))


def problem(body: dict) -> str:
    with pytest.raises(ValidationError) as caught:
        BODIES.validate_python(body)
    return first_problem(caught.value)


def test_each_registered_class_is_a_body_of_its_parameters():
    _, document = BODIES.json_schemas([("w", "validation", BODIES)])
    assert set(document["$defs"]) == {"GearWidget", "CogWidget"}
    gear = document["$defs"]["GearWidget"]
    assert gear["description"] == "A widget of every parameter type."
    assert set(gear["properties"]) == {"name", "teeth", "ratio", "spin", "spare", "delays", "colour"}
    assert gear["required"] == ["name"]
    assert gear["additionalProperties"] is False
    properties = gear["properties"]
    assert properties["teeth"]["anyOf"][0] == {"type": "integer", "minimum": 3, "maximum": 500}
    assert properties["ratio"]["anyOf"][0] == {"type": "number", "exclusiveMinimum": 0, "maximum": 10}
    assert properties["spin"]["anyOf"][0]["minimum"] == 0
    assert properties["spin"]["anyOf"][0]["maximum"] == 60
    assert {"type": "null"} in properties["spare"]["anyOf"]
    assert properties["delays"]["anyOf"][0]["maxItems"] == 1000
    assert properties["colour"]["type"] == "string"
    assert (properties["teeth"]["default"], properties["spin"]["default"], properties["colour"]["default"]) == (
        12,
        0.1,
        "red",
    )


def test_a_body_becomes_the_spec_through_the_registry():
    body = BODIES.validate_python({"name": "gear", "teeth": 40.0, "spin": "2s", "spare": "auto", "delays": [0, "1ms"]})
    assert body.mapping() == {"name": "gear", "teeth": 40, "spin": "2s", "spare": "auto", "delays": [0, "1ms"]}
    assert WIDGETS.parse(body.mapping()) == Gear(teeth=40, spin_s=2.0, delays=(0.0, 0.001))
    assert WIDGETS.parse(BODIES.validate_python({"name": "cog"}).mapping()) == Cog()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"name": "gear", "teeth": 2}, "gear.teeth: got 2, expected a whole number >= 3 and <= 500"),
        ({"name": "gear", "teeth": 1.5}, "gear.teeth: got 1.5, expected a whole number >= 3"),
        ({"name": "gear", "teeth": True}, "gear.teeth: got True, expected a whole number >= 3"),
        ({"name": "gear", "teeth": None}, "gear.teeth: got None, expected a whole number >= 3"),
        ({"name": "gear", "ratio": 0}, "gear.ratio: got 0, expected a number > 0 and <= 10"),
        ({"name": "gear", "ratio": math.nan}, "gear.ratio: got nan, expected a number > 0"),
        ({"name": "gear", "spin": -1}, "gear.spin: got -1, expected a duration"),
        ({"name": "gear", "spin": ""}, "gear.spin: got '', expected a duration"),
        ({"name": "gear", "spare": 10}, "gear.spare: got 10, expected a whole number, or auto >= 1 and <= 9"),
        ({"name": "gear", "delays": [2]}, "gear.delays: got [2], expected a list of durations"),
        ({"name": "gear", "colour": 5}, "gear.colour: got 5, expected red or blue"),
        ({"name": "gear", "gears": 5}, "gear: unknown parameter 'gears'; accepted: teeth, ratio, spin, spare"),
        ({"name": "cog", "teeth": 5}, "cog: unknown parameter 'teeth'; accepted: (no parameters)"),
    ],
)
def test_a_refused_value_names_the_parameter_and_its_bounds(body, message):
    assert problem(body).startswith(message)


def test_the_spec_checks_what_the_body_leaves_to_it():
    # text is read as in a spec, and the class's own rules hold
    for body, message in [
        ({"name": "gear", "spin": "2h"}, "widget 'gear': spin: got 2h, expected a duration"),
        ({"name": "gear", "teeth": "many"}, "widget 'gear': teeth: got 'many', expected a whole number"),
        ({"name": "gear", "colour": "green"}, "widget 'gear': colour: got 'green', expected red or blue"),
    ]:
        mapping = BODIES.validate_python(body).mapping()
        with pytest.raises(SpecError, match=message):
            WIDGETS.parse(mapping)


def test_adjust_narrows_a_parameter_where_the_body_is_read():
    def adjust(info):
        return dataclasses.replace(info, at_most=100) if info.key == "teeth" else info

    narrow = spec_body(Gear, adjust=adjust)
    assert narrow.model_json_schema()["properties"]["teeth"]["anyOf"][0]["maximum"] == 100
    with pytest.raises(ValidationError, match="got 200, expected a whole number >= 3 and <= 100"):
        narrow.model_validate({"name": "gear", "teeth": 200})
    assert spec_body(Gear).model_validate({"name": "gear", "teeth": 200}).mapping()["teeth"] == 200


def test_names_of_schemas():
    assert body_title(Gear) == "GearWidget"


@given(
    teeth=st.integers(3, 500),
    ratio=st.floats(0, 10, exclude_min=True),
    spin=st.floats(0, 60),
    spare=st.one_of(st.none(), st.integers(1, 9)),
    delays=st.lists(st.floats(0, 1), max_size=5),
)
def test_every_value_within_the_stated_bounds_is_a_spec(teeth, ratio, spin, spare, delays):
    body = {"name": "gear", "teeth": teeth, "ratio": ratio, "spin": spin, "spare": spare, "delays": delays}
    assert WIDGETS.parse(BODIES.validate_python(body).mapping()) == Gear(
        teeth=teeth, ratio=ratio, spin_s=spin, spare=spare, delays=tuple(delays)
    )
