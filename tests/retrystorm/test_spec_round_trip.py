"""Every registered strategy, budget and model prints back to a spec that parses to it."""

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from retrystorm.errors import SpecError
from retrystorm.loadgen.strategies import BUDGETS, STRATEGIES
from retrystorm.loadgen.strategies.jitter import JITTER, Jitter
from retrystorm.loadgen.strategies.presets.envoy import RETRY_ON_WORDS
from retrystorm.loadgen.strategies.presets.grpc import CODES
from retrystorm.loadgen.strategies.presets.params import BOOLEAN, STATUSES
from retrystorm.loadgen.strategies.retry_on import RETRY_ON, RetryOn
from retrystorm.spec import DURATION, DURATION_LIST, INTEGER, NUMBER, ParamInfo, params_of, spec_to_mapping
from retrystorm.target.models import MODELS

REGISTRIES = [STRATEGIES, BUDGETS, MODELS]
ALL_CLASSES = [(registry, name) for registry in REGISTRIES for name in registry.names()]


def _bounded_floats(info: ParamInfo, upper: float) -> st.SearchStrategy[float]:
    low = info.at_least if info.at_least is not None else (info.above if info.above is not None else 0.0)
    high = info.at_most if info.at_most is not None else upper
    return st.floats(min_value=low, max_value=high, allow_nan=False, allow_infinity=False).filter(
        lambda x: info.above is None or x > info.above
    )


def _values_for(info: ParamInfo) -> st.SearchStrategy[object]:
    if info.type is DURATION:
        return _bounded_floats(info, 1e6)
    if info.type is NUMBER:
        return _bounded_floats(info, 1e3)
    if info.type is INTEGER or info.type.short.startswith("whole number"):
        low = int(info.at_least) if info.at_least is not None else 0
        values: st.SearchStrategy[object] = st.integers(min_value=low, max_value=10_000)
        return values if info.type is INTEGER else st.none() | values
    if info.type.choices:
        return st.sampled_from(info.type.choices)
    if info.type is DURATION_LIST:
        return st.lists(st.floats(min_value=0, max_value=1e4, allow_nan=False), min_size=1, max_size=12).map(tuple)
    if info.type is JITTER:
        return st.one_of(
            st.sampled_from([Jitter("none"), Jitter("full"), Jitter("equal")]),
            st.floats(min_value=0.001, max_value=1).map(lambda j: Jitter("proportional", j)),
            st.floats(min_value=0.001, max_value=5).map(lambda j: Jitter("normal", j)),
        )
    return _preset_values(info)


def _preset_values(info: ParamInfo) -> st.SearchStrategy[object]:
    """The parameter types the presets add: booleans, choices, lists, optional numbers and durations."""
    short = info.type.short
    if info.type is BOOLEAN:
        return st.booleans()
    if info.type is STATUSES:
        return st.lists(st.integers(min_value=100, max_value=599), max_size=6).map(lambda v: tuple(sorted(set(v))))
    if info.type is RETRY_ON:
        statuses = st.frozensets(st.integers(min_value=400, max_value=599), max_size=4)
        return st.builds(
            RetryOn, st.booleans(), st.booleans(), st.frozensets(st.sampled_from([4, 5])), statuses, statuses
        )
    if short == "list":
        words = list(CODES) if info.key == "codes" else list(RETRY_ON_WORDS)
        return st.lists(st.sampled_from(words), min_size=1, max_size=4, unique=True).map(tuple)
    if "|" in short:
        return st.sampled_from(short.split("|"))
    if short in ("number or none", "duration or none"):
        return st.none() | _bounded_floats(info, 1e3)
    raise AssertionError(f"no generator for {short}")


@st.composite
def instances(draw, registry_and_name):
    registry, name = registry_and_name
    cls = registry.get(name)
    kwargs = {info.field: draw(_values_for(info)) for info in params_of(cls) if draw(st.booleans())}
    try:
        return cls(**kwargs)
    except SpecError:
        assume(False)
        raise


@pytest.mark.parametrize(("registry", "name"), ALL_CLASSES, ids=[f"{r.kind}-{n}" for r, n in ALL_CLASSES])
@given(data=st.data())
def test_spec_string_and_mapping_round_trip(registry, name, data):
    instance = data.draw(instances((registry, name)))
    assert registry.parse(instance.spec()) == instance
    assert registry.parse(spec_to_mapping(instance)) == instance
    assert registry.parse(instance.spec()).spec() == instance.spec()


@pytest.mark.parametrize(("registry", "name"), ALL_CLASSES, ids=[f"{r.kind}-{n}" for r, n in ALL_CLASSES])
def test_defaults_parse_from_the_bare_name(registry, name):
    assert registry.parse(name) == registry.get(name)()


def test_round_trip_keeps_awkward_floats_exact():
    strategy = STRATEGIES.parse({"name": "exponential", "base": 1 / 3, "factor": math.pi, "max": 100})
    assert STRATEGIES.parse(strategy.spec()) == strategy
