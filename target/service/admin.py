"""The admin API's bodies: reading them strictly into what they ask for, and the model document it returns.

``PUT /admin/model`` takes the new model as a JSON object, either a spec string
``{"spec": "exponential:limit=40"}`` or a mapping ``{"name": "exponential",
"limit": 40, "base_delay": "100ms"}`` (parameters left out take their defaults;
durations are strings with a unit or numbers of seconds). ``POST /admin/reset`` takes
no body, or ``{"release_in_flight": true}`` to also answer everything in flight with
503. ``PUT /admin/faults`` takes a fault rule, ``PUT /admin/capacity``
``{"capacity": 0.4}``. Each body is read as JSON here, checked by its model
(:mod:`retrystorm.target.service.bodies`), then built into the domain object, which checks it
again: the model with its own rules and :func:`check_servable`, the
:class:`~retrystorm.target.faults.FaultRule`. Any problem raises
:class:`~retrystorm.errors.UserError` with one line that names the field and what is
accepted.

The JSON is read with the standard library rather than pydantic-core, whose parser
refuses a whole number of more than about 4,300 digits as invalid JSON, naming no
field. Every field has a ceiling (the models' ``at_most``, the fault rule's maxima); a
JSON number written with more than :data:`MAX_INTEGER_DIGITS` digits is beyond all of
them: it is read as a :class:`LongNumber` (Python refuses to read a whole number of
more than 4,300 digits at all), which every field refuses, naming itself and its range.
"""

from __future__ import annotations

import json
import math
from typing import Any

from pydantic import ValidationError

from retrystorm.bodies import first_problem
from retrystorm.errors import UserError
from retrystorm.spec import spec_to_mapping
from retrystorm.target.faults import FaultRule
from retrystorm.target.models import OverloadModel, parse_model
from retrystorm.target.service.bodies import (
    MODEL_REQUEST,
    CapacityRequest,
    FaultRuleRequest,
    ResetRequest,
    SpecString,
    model_problem,
)
from retrystorm.target.service.config import check_servable

#: Digits of the longest whole number read as a number; every ceiling has far fewer (int64 has 19).
MAX_INTEGER_DIGITS = 20


class LongNumber:
    """A JSON whole number of more than :data:`MAX_INTEGER_DIGITS` digits, kept as its length.

    Not a number to any check (``isinstance(value, int)`` is false), so each field's own
    validation refuses it; written as ``a whole number of N digits`` in the message.
    """

    __slots__ = ("digits",)

    def __init__(self, digits: int) -> None:
        self.digits = digits

    def __repr__(self) -> str:
        return f"a whole number of {self.digits:,} digits"


def _read_integer(text: str) -> int | LongNumber:
    digits = len(text) - text.startswith("-")
    return LongNumber(digits) if digits > MAX_INTEGER_DIGITS else int(text)


def _reject_constant(name: str) -> Any:
    raise UserError(f"body: {name} is not a JSON number; give a finite number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise UserError(f"body: {text} is beyond the range of a number; give a finite number")
    return value


def read_json_object(body: bytes, *, empty_ok: bool = False) -> dict[str, Any]:
    """``body`` as a JSON object (``{}`` for no body at all when ``empty_ok``)."""
    if not body and empty_ok:
        return {}
    if not body.strip(b" \t\r\n"):  # JSON whitespace
        raise UserError("body: empty; send a JSON object")
    try:
        value = json.loads(body, parse_constant=_reject_constant, parse_float=_finite_float, parse_int=_read_integer)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UserError(f"body: not valid JSON ({error}); send a JSON object") from None
    except RecursionError:
        raise UserError("body: JSON nested too deeply; send a flat JSON object") from None
    if not isinstance(value, dict):
        raise UserError(f"body: got a JSON {type(value).__name__}, expected a JSON object")
    return value


def parse_model_body(body: bytes) -> OverloadModel:
    """The model a ``PUT /admin/model`` body asks for, checked for live serving."""
    try:
        request = MODEL_REQUEST.validate_python(read_json_object(body))
    except ValidationError as error:
        raise UserError(model_problem(error)) from None
    model = parse_model(request.spec if isinstance(request, SpecString) else request.mapping())
    check_servable(model)
    return model


def parse_reset_body(body: bytes) -> bool:
    """Whether a ``POST /admin/reset`` body asks to release everything in flight."""
    try:
        request = ResetRequest.model_validate(read_json_object(body, empty_ok=True))
    except ValidationError as error:
        raise UserError(first_problem(error)) from None
    return request.release_in_flight


def parse_rule_body(body: bytes) -> FaultRule:
    """The fault rule a ``PUT /admin/faults`` body arms; fields left out take their defaults."""
    try:
        request = FaultRuleRequest.model_validate(read_json_object(body))
    except ValidationError as error:
        raise UserError(first_problem(error)) from None
    return request.rule()


def parse_capacity_body(body: bytes) -> float:
    """The capacity a ``PUT /admin/capacity`` body asks for."""
    try:
        request = CapacityRequest.model_validate(read_json_object(body))
    except ValidationError as error:
        raise UserError(first_problem(error)) from None
    return request.capacity


def model_document(model: OverloadModel, *, in_flight: int, delay_s: float) -> dict[str, Any]:
    """What ``GET /admin/model`` returns."""
    return {
        "spec": model.spec(),
        "model": spec_to_mapping(model),
        "in_flight": in_flight,
        "delay_seconds": delay_s,
    }
