"""Every numeric parameter of a strategy or budget has a ceiling, shown by ``retrystorm strategies``."""

import math
import random

import pytest

from retrystorm.errors import SpecError
from retrystorm.loadgen.strategies import BUDGETS, STRATEGIES, parse_budget, parse_strategy
from retrystorm.loadgen.strategies.base import MAX_DELAY_S
from retrystorm.loadgen.think import parse_think_time
from retrystorm.spec import describe_params, params_of


@pytest.mark.parametrize(
    ("parse", "spec", "words"),
    [
        (parse_strategy, "uniform:max=25h", ["max: got 25h", "<= 24h"]),
        (parse_strategy, "fixed:86401s", ["delay: got 86401s", "<= 24h"]),
        (parse_strategy, "table:delays=[1s,25h]", ["delays[1]: got 25h", "<= 24h"]),
        (parse_strategy, {"name": "smira", "factor": 1e308}, ["factor", "<= 1000"]),
        (parse_strategy, "grpc:min_connect_timeout=1000000s", ["min_connect_timeout", "<= 24h"]),
        (parse_strategy, "decorrelated:growth=1001", ["growth", "<= 1000"]),
        (parse_budget, "quota:capacity=1e7", ["capacity", "<= 1000000"]),
        (parse_budget, "ratio:min_rate=1e7", ["min_rate", "<= 1000000"]),
        (parse_budget, "ratio:ttl=1ns", ["ttl", ">= 1ms"]),  # slices of 0.1 ns
        (parse_budget, "ratio:ttl=5e-324s", ["ttl", ">= 1ms"]),  # slices of 0 s: a ZeroDivisionError at the first retry
        (parse_budget, "adaptive:window=25h", ["window", "<= 24h"]),
        (parse_budget, "adaptive:k=1001", ["k", "<= 1000"]),
        (parse_think_time, "25h", ["think time", "<= 24h"]),
        (parse_think_time, "exponential:25h", ["mean", "<= 24h"]),
        (parse_think_time, "between:1s,25h", ["max", "<= 24h"]),
    ],
)
def test_values_above_a_ceiling_are_refused_naming_it(parse, spec, words):
    with pytest.raises(SpecError) as caught:
        parse(spec)
    message = str(caught.value)
    assert len(message.splitlines()) == 1
    for word in words:
        assert word in message


def test_every_numeric_parameter_shows_its_ceiling():
    """What ``retrystorm strategies`` lists: each parameter's accepted values end with a ceiling."""
    numeric = ("number", "duration")  # the kinds of value a ceiling applies to (not modes, choices or statuses)
    for registry in (STRATEGIES, BUDGETS):
        for name, cls in registry.items():
            kinds = {info.key: info.type.short for info in params_of(cls)}
            for key, _, help_text in describe_params(cls):
                if "jitter: none" in help_text or not any(word in kinds[key] for word in numeric):
                    continue  # a mode or a choice, not a number (normal:J's ceiling is in its accepted forms)
                assert "<= " in help_text, f"{registry.kind} {name}: {key}: {help_text}"


def test_a_window_at_the_floor_works():
    state = parse_budget("ratio:ttl=1ms,min_rate=0,percent=1").start()
    state.on_request(1e6)
    assert state.try_retry(1e6, after_timeout=False) == 1.0


@pytest.mark.parametrize(
    "spec",
    [
        "exponential:base=24h,factor=1000,max=24h,jitter=normal:100",
        "decorrelated:base=24h,max=24h,growth=1000",
        "grpc:base=24h,factor=1000,max=24h,jitter=1",
        "smira:factor=1000,max=24h,jitter=24h",
        "uniform:max=24h,min=24h",
        "table:delays=[24h]",
    ],
)
def test_strategies_at_their_ceilings_stay_finite(spec):
    strategy = parse_strategy(spec)
    rng = random.Random(1)
    for attempt in (1, 2, 10, 1000, 10**6):
        delay = strategy.delay(attempt, MAX_DELAY_S, rng)
        assert 0 <= delay <= strategy.max_delay_s < math.inf
