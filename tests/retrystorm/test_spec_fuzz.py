"""Fuzzing the spec and duration parsers: a valid object or one line of UserError, never anything else.

Inputs are built from the registries' names and parameter keys and from hostile tokens:
huge numbers, ``inf``, ``nan``, ``1e309``, unicode, separators and texts up to 1.1 MB.
Each parse must return an object whose every number is finite and within its bounds
(and which works: a strategy's delays stay in ``[0, max_delay_s]``), or raise a
:class:`UserError` whose message is one line. Any other exception fails the test, and
hypothesis' ``deadline`` fails an example that takes more than a second.
Derandomized, so CI sees the same examples every run.
"""

import math
import random
from collections.abc import Callable
from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrystorm.durations import MAX_DURATION_S, format_duration, parse_duration
from retrystorm.errors import UserError
from retrystorm.loadgen.strategies import BUDGETS, STRATEGIES, Jitter
from retrystorm.loadgen.strategies.jitter import JITTER
from retrystorm.loadgen.think import THINK_TIMES, parse_think_time
from retrystorm.spec import DURATION, DURATION_LIST, INTEGER, NUMBER, ParamInfo, Registry, Spec, params_of
from retrystorm.target.models import MODELS

FUZZ = settings(
    derandomize=True,
    max_examples=200,
    deadline=timedelta(seconds=1),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
REGISTRIES: dict[str, Registry] = {"strategy": STRATEGIES, "budget": BUDGETS, "model": MODELS, "think": THINK_TIMES}
NAMES = sorted({name for registry in REGISTRIES.values() for name in registry.names()})
KEYS = sorted({info.key for r in REGISTRIES.values() for _, cls in r.items() for info in params_of(cls)})
UNITS = ["h", "m", "s", "ms", "us", "µs", "ns", "", "d", "S"]
HOSTILE = [
    "inf", "-inf", "+inf", "Infinity", "nan", "NaN", "forever", "Forever", "none", "auto",
    "1e309", "1e308", "-1e309", "1e-400", "5e-324", "-0", "0", "0.0", ".5", "1.", "1_000",
    "0x10", "²", "١٢", "１２", "∞", "\u2028", "\n", "\x00",
    "full", "equal", "proportional:0.2", "normal:0.1", "normal:1e309", "normal:nan", "proportional:2",
]  # fmt: skip
SEPARATORS = [",", "=", ":", "[", "]", " ", ",,", "==", "[[", "]]", ";"]

#: Digit strings of 400 (too large for a float), 4,300 (int()'s limit) and 5,000 digits.
long_digits = st.builds(lambda digit, count: digit * count, st.sampled_from("19"), st.sampled_from([400, 4300, 5000]))
numbers = st.one_of(
    st.sampled_from(HOSTILE),
    long_digits,
    st.integers().map(str),
    st.floats().map(repr),
    st.from_regex(r"\A[0-9]{1,30}(\.[0-9]{0,20})?([eE][-+]?[0-9]{1,5})?\Z"),
)
durations = st.one_of(
    st.builds(lambda n, u: n + u, numbers, st.sampled_from(UNITS)),
    st.lists(st.builds(lambda n, u: n + u, numbers, st.sampled_from(UNITS)), min_size=2, max_size=4).map("".join),
    st.sampled_from(["100ms", "2s", "5m", "1h", "1m30s", "24h", "25h", "1000000000s", "1000000001s"]),
)
#: Texts of up to 1.1 MB, cheap to draw: one short piece repeated.
long_texts = st.builds(
    lambda piece, count: piece * count,
    st.sampled_from(["1", "9", "x", "1s", "1,", "[", "=", "a=1,", "µ", "\u2028"]),
    st.integers(min_value=1, max_value=1_100_000),
)
tokens = st.one_of(numbers, durations, st.text(max_size=20), st.sampled_from(SEPARATORS), long_texts)
values = st.one_of(tokens, st.builds(lambda items: "[" + ",".join(items) + "]", st.lists(tokens, max_size=5)))
separators = st.sampled_from(SEPARATORS)
names = st.one_of(st.sampled_from(NAMES), st.text(max_size=12), long_texts)
keys = st.one_of(st.sampled_from(KEYS), st.text(max_size=8))
items = st.one_of(st.builds(lambda k, v: f"{k}={v}", keys, values), values)
spec_texts = st.one_of(
    st.builds(lambda name, body: f"{name}:{','.join(body)}", names, st.lists(items, max_size=5)),
    st.builds(lambda name, body, sep: name + sep + sep.join(body), names, st.lists(items, max_size=4), separators),
    names,
    st.text(max_size=60),
)

#: Values a real parameter of each type would hold, near and past its ceilings, so that many specs are accepted.
plausible_durations = st.one_of(
    st.sampled_from(["0", "0s", "1ms", "100ms", "2s", "5m", "1h", "24h", "25h", "1000000000s", "1m30s"]),
    st.floats(min_value=0, max_value=2e5).map(lambda seconds: f"{seconds!r}s"),
)
PLAUSIBLE = {
    DURATION.short: plausible_durations,
    NUMBER.short: st.one_of(
        st.sampled_from(["0", "1", "2", "0.5", "1000", "1001", "1000000"]), st.floats(0, 2e6).map(repr)
    ),
    INTEGER.short: st.integers(min_value=0, max_value=2 * 10**9).map(str),
    DURATION_LIST.short: st.lists(plausible_durations, max_size=4).map(lambda items: "[" + ",".join(items) + "]"),
    JITTER.short: st.sampled_from(["none", "full", "equal", "normal:0.1", "normal:100", "proportional:0.2"]),
}


def plausible(info: ParamInfo) -> st.SearchStrategy[str]:
    """Values for ``info``: its type's plausible ones (``auto``/``none`` for an optional one)."""
    for short, strategy in PLAUSIBLE.items():
        if info.type.short == short:
            return strategy
    return st.one_of(PLAUSIBLE[INTEGER.short], st.sampled_from(["auto", "none"]))  # optional(INTEGER, ...)


#: Whole numbers beyond a float (10**400), beyond what Python prints (10**5000), and just past ceilings.
huge_ints = st.builds(
    lambda sign, power, offset: sign * 10**power + offset,
    st.sampled_from([1, -1]),
    st.sampled_from([9, 15, 19, 400, 5000]),
    st.integers(min_value=-1, max_value=1),
)
plain_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    huge_ints,
    st.floats(),
    tokens,
)
mapping_values = st.one_of(
    plain_values,
    st.lists(plain_values, max_size=6),
    st.builds(lambda count: [0.1] * count, st.integers(min_value=0, max_value=200_000)),
    st.dictionaries(st.text(max_size=4), plain_values, max_size=3),
)
mappings = st.builds(
    lambda name, rest: {"name": name, **rest},
    st.one_of(names, plain_values, spec_texts),
    st.dictionaries(st.one_of(keys, huge_ints, st.integers()), mapping_values, max_size=5),
)
specs = st.one_of(spec_texts, mappings, plain_values)


def assert_refusal_is_one_line(error: UserError) -> None:
    message = str(error)
    assert message
    assert len(message.splitlines()) == 1, message
    assert len(message) < 1000, message[:200]


def assert_numbers_finite_and_bounded(obj: Spec) -> None:
    """Every number of ``obj`` is finite and within its parameter's declared bounds."""
    for info in params_of(type(obj)):
        if not any(word in info.type.short for word in ("number", "duration")):
            continue  # a choice, a flag or retry conditions: no number to bound
        value = getattr(obj, info.field)
        if info.type.choices:  # a word: one of them
            assert value in info.type.choices, (info.key, value)
            continue
        numbers_ = value if isinstance(value, tuple) else (value,)
        if isinstance(value, Jitter):
            numbers_ = (value.amount,)
        for number in numbers_:
            if number is None or isinstance(number, bool):
                continue
            assert isinstance(number, int | float), (info.key, number)
            assert math.isfinite(number), (info.key, number)
            if info.at_least is not None:
                assert number >= info.at_least
            if info.above is not None:
                assert number > info.above
            if info.ceiling is not None and not isinstance(value, Jitter):
                assert number <= info.ceiling


def assert_works(kind: str, obj: Spec) -> None:
    """What a parsed object is for, run a little: nothing raises, every result is finite."""
    rng = random.Random(0)
    if kind == "strategy":
        previous = 10.0
        for attempt in (1, 2, 3, 50, 10**6):
            delay = obj.delay(attempt, previous, rng)
            assert 0 <= delay <= obj.max_delay_s < math.inf, (obj.spec(), attempt, delay)
            previous = delay
    elif kind == "budget":
        state = obj.start()
        for now in (0.0, 0.5, 1e6):
            state.on_request(now)
            state.allow_attempt(now, rng)
            state.on_result(now, success=False, retry_cost=None)
            cost = state.try_retry(now, after_timeout=True)
            state.on_result(now, success=True, retry_cost=cost)
    elif kind == "think":
        assert 0 <= obj.sample(rng) < math.inf
        assert 0 <= obj.mean_s < math.inf
    else:
        server = obj.start(0.0)
        server.admit(0.0, "request")
        server.advance(1.0, rng)
        server.next_wakeup_s(1.0)
        assert math.isfinite(server.delay_s)


def check(kind: str, parse: Callable[[object], Spec], spec: object) -> None:
    try:
        obj = parse(spec)
    except UserError as error:
        assert_refusal_is_one_line(error)
        return
    assert isinstance(obj, Spec)
    assert_numbers_finite_and_bounded(obj)
    assert_works(kind, obj)
    assert parse(obj.spec()) == obj  # what was accepted prints back to itself


PARSERS: dict[str, Callable[[object], Spec]] = {
    "strategy": STRATEGIES.parse,
    "budget": BUDGETS.parse,
    "model": MODELS.parse,
    "think": parse_think_time,
}


@FUZZ
@given(spec=specs)
def test_fuzzed_strategies(spec):
    check("strategy", PARSERS["strategy"], spec)


@FUZZ
@given(spec=specs)
def test_fuzzed_budgets(spec):
    check("budget", PARSERS["budget"], spec)


@FUZZ
@given(spec=specs)
def test_fuzzed_models(spec):
    check("model", PARSERS["model"], spec)


@FUZZ
@given(spec=st.one_of(specs, durations))
def test_fuzzed_think_times(spec):
    check("think", PARSERS["think"], spec)


@FUZZ
@given(text=st.one_of(durations, numbers, tokens, plain_values, st.lists(plain_values, max_size=3)))
def test_fuzzed_durations(text):
    try:
        seconds = parse_duration(text, what="duration")
    except UserError as error:
        refusal: UserError | None = error
    else:
        refusal = None
    if refusal is not None:
        assert_refusal_is_one_line(refusal)
        assert str(refusal).startswith("duration: ")
        return
    assert isinstance(seconds, float)
    assert 0 <= seconds <= MAX_DURATION_S
    assert parse_duration(format_duration(seconds)) == seconds


@FUZZ
@given(kind=st.sampled_from(list(REGISTRIES)), data=st.data())
def test_fuzzed_specs_of_real_parameters(kind, data):
    """Real names and keys, with values mostly plausible and sometimes hostile: many are accepted."""
    registry = REGISTRIES[kind]
    name, cls = data.draw(st.sampled_from(registry.items()))
    infos = params_of(cls)
    chosen = data.draw(st.lists(st.sampled_from(infos), unique=True, max_size=len(infos))) if infos else []
    drawn = {
        info.key: data.draw(st.one_of(plausible(info), plausible(info), plausible(info), values)) for info in chosen
    }
    text = name + (":" + ",".join(f"{key}={value}" for key, value in drawn.items()) if drawn else "")
    check(kind, PARSERS[kind], text)
    check(kind, PARSERS[kind], {"name": name, **drawn})


@FUZZ
@given(
    kind=st.sampled_from(["strategy", "budget", "model"]),
    data=st.data(),
)
def test_fuzzed_values_of_real_parameters(kind, data):
    """Each real parameter of each class, given a hostile value, in a string and in a mapping."""
    registry = REGISTRIES[kind]
    name, cls = data.draw(st.sampled_from(registry.items()))
    infos = params_of(cls)
    if not infos:
        return
    info = data.draw(st.sampled_from(infos))
    value = data.draw(values)
    check(kind, PARSERS[kind], f"{name}:{info.key}={value}")
    check(kind, PARSERS[kind], {"name": name, info.key: data.draw(mapping_values)})
