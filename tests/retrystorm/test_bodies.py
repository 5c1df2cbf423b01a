"""The shared pieces of request bodies: unknown fields, whole numbers, durations, one-line refusals."""

from typing import Annotated

import pytest
from pydantic import Field, TypeAdapter, ValidationError

from retrystorm.bodies import Body, duration, explained, first_problem, whole_number


class Order(Body):
    """A body of every shared piece."""

    count: Annotated[whole_number(ge=1, le=10), explained("a whole number from 1 to 10")] = 1  # type: ignore[valid-type]
    wait_s: duration(accepted="a duration > 0", above=0, max_chars=20) = Field(  # type: ignore[valid-type]
        default=1.0, alias="wait"
    )
    label: str = Field(default="", max_length=5)


def problem(data: object, **options: str) -> str:
    with pytest.raises(ValidationError) as caught:
        Order.model_validate(data)
    message = first_problem(caught.value, **options)
    assert "\n" not in message
    return message


def test_a_body_reads_its_fields():
    order = Order.model_validate({"count": 3.0, "wait": "1m30s", "label": "x"})
    assert (order.count, type(order.count), order.wait_s) == (3, int, 90.0)
    assert Order.model_validate({"wait": 2}).wait_s == 2.0


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"colour": "red"}, "body: unknown field 'colour'; accepted: count, wait, label"),
        ({"wait_s": 1}, "body: unknown field 'wait_s'; accepted: count, wait, label"),
        ({"x" * 100: 1}, "body: unknown field 'xxxxxxxxxxxxxxxxx...xxxxxxxxxxxxxxxxxx' (100 characters); accepted"),
        ({"count": 0}, "count: got 0, expected a whole number from 1 to 10"),
        ({"count": 2.5}, "count: got 2.5, expected a whole number from 1 to 10"),
        ({"count": True}, "count: got True, expected a whole number from 1 to 10"),
        ({"count": 10**400}, "count: got a whole number of about 401 digits, expected a whole number from 1 to 10"),
        ({"count": 1e300}, "count: got 1e+300, expected a whole number from 1 to 10"),
        ({"wait": "soon"}, "wait: got 'soon', expected a number with a unit"),
        ({"wait": "30"}, "wait: got '30' (add a unit), expected a number with a unit"),
        ({"wait": "0s"}, "wait: got '0s', expected a duration > 0"),
        ({"wait": 0}, "wait: got 0, expected a duration > 0"),
        ({"wait": "inf"}, "wait: got 'inf', expected finite durations >= 0"),
        ({"wait": float("nan")}, "wait: got nan, expected a duration > 0"),
        ({"wait": 2e9}, "wait: got 2000000000.0, expected a duration > 0"),
        ({"wait": "1" * 21 + "s"}, "wait: got '111111111111111111111s', expected a duration > 0"),
        ({"label": "toolong"}, "label: got 'toolong'; expected a string with at most 5 characters"),
        ({"label": 5}, "label: got 5; expected a valid string"),
    ],
)
def test_a_refusal_is_one_line_naming_the_field(data, message):
    assert problem(data).startswith(message)


def test_a_body_that_is_not_an_object_or_not_json():
    assert problem([1], example="an order") == "body: expected an order"
    with pytest.raises(ValidationError) as caught:
        Order.model_validate_json(b"{nope")
    assert first_problem(caught.value, example="an order") == "body: not valid JSON; expected an order"


def test_where_names_the_place():
    adapter = TypeAdapter(list[Order])
    with pytest.raises(ValidationError) as caught:
        adapter.validate_python([{}, {"count": 0}])
    assert first_problem(caught.value).startswith("1.count: got 0")
    assert first_problem(caught.value, where=lambda location: f"order {location[0]}").startswith("order 1: got 0")
