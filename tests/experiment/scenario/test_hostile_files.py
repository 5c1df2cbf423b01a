"""Hostile and absurd scenario files: each is refused quickly with one line, never a traceback or a hang.

Each case is a file that once made ``retrystorm run --dry-run`` or ``retrystorm sim run``
hang (an alias bomb grew to 1.27 GB; a billion users; a pause every millisecond for a
day) or die with a traceback (1,000-deep nesting, a binary file, a 5,000-digit number).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from retrystorm.experiment.scenario import ScenarioError, load_scenario, parse_scenario, shipped_names, shipped_scenario
from retrystorm.experiment.scenario.loader import MAX_ERROR_LINES

BASE = shipped_scenario("smira-laptop").read_text()

BOMB = textwrap.dedent(
    """\
    a: &a ["x","x","x","x","x","x","x","x","x"]
    b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
    c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
    d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
    e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
    f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
    g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
    h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
    i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
    """
)

HOSTILE = {
    "alias bomb": (BOMB, "more than 10,000 values once aliases are expanded"),
    "an alias inside itself": ("a: &a [*a]\n", "an alias that contains itself"),
    "1,000-deep flow nesting": ("a: " + "[" * 1000 + "]" * 1000, "nested deeper than 32 levels"),
    "1,000-deep block nesting": ("".join(" " * i + "k:\n" for i in range(1000)), "nested deeper than 32 levels"),
    "a 5,000-digit number": (BASE.replace("users: 300", "users: " + "9" * 5000), "(5000 characters) is not a number"),
    "a 400-digit number": (
        BASE.replace("users: 300", "users: " + "9" * 400),
        "load.users: got a whole number of about 401 digits",
    ),
    "a billion users": (BASE.replace("users: 300", "users: 1000000000"), "less than or equal to 1000000"),
    "a year-long run": (BASE.replace("duration: 70s", "duration: 8760h"), "load.duration: got"),
    "a two-hour pause": (BASE.replace("for: 15s", "for: 2h"), "faults[0].for: got 7200.0"),
    "a pause every millisecond": (
        BASE.replace("for: 15s", "for: 1ms\n    repeat: {every: 2ms}").replace("duration: 70s", "duration: 24h"),
        "more than 10,000 windows",
    ),
    "a mapping as a key": ("? [1, 2]\n: 3\n", "a key must be a name"),
    "a huge seed": (BASE.replace("seed: 1", "seed: " + "9" * 30), "seed: got"),
    "a negative seed": (BASE.replace("seed: 1", "seed: -1"), "seed: got -1"),
    "a thousand strategies": (
        BASE.replace("  - smira\n", "".join(f"  - fixed:{i}ms\n" for i in range(1, 1000))),
        "strategies: got",
    ),
    "a sample every microsecond": (BASE + "sim: {sample_every: 1us}\n", "sim.sample_every: got"),
}


@pytest.mark.parametrize(("text", "message"), HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_scenarios_are_one_line_errors(text, message):
    with pytest.raises(ScenarioError) as refused:
        parse_scenario(text, source="hostile.yaml")
    line = str(refused.value)
    assert message in line
    assert line.startswith("hostile.yaml")
    assert "\n" not in line
    assert len(line) < 400


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not UTF-8 text"),
        (b"name: x\x00\n", "a NUL byte: this is a binary file"),
        (b"name: caf\xe9\n", "s.yaml:1: not UTF-8 text"),
        (b"#" * (1024 * 1024 + 1), "larger than 1024 KiB"),
    ],
)
def test_files_that_are_not_scenarios_are_refused(tmp_path, content, message):
    path = tmp_path / "s.yaml"
    path.write_bytes(content)
    with pytest.raises(ScenarioError, match=message):
        load_scenario(path)


@pytest.mark.live
def test_a_dry_run_and_a_simulation_refuse_the_alias_bomb_with_exit_2(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB)
    env = {**os.environ, "RETRYSTORM_CHAOS_JOURNAL": str(tmp_path / "journal.jsonl")}
    for command in (["run", str(path), "--dry-run"], ["sim", "run", str(path)]):
        done = subprocess.run(
            [sys.executable, "-m", "retrystorm", *command],
            capture_output=True, text=True, timeout=60, check=False, env=env, cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "more than 10,000 values" in done.stderr


# Random YAML trees: keys from the scenario format and random ones, values of every YAML kind.
KEYS = st.sampled_from(
    ["name", "seed", "model", "load", "users", "duration", "think_time", "strategies", "faults", "pause", "at",
     "for", "repeat", "every", "times", "assertions", "sim", "label", "strategy", "budget", "x", "", "1"]
)  # fmt: skip
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["10s", "fixed:100ms", "smira", "exponential:limit=30", "inf", "1e309s", "never", "-1", ""]),
    st.text(max_size=30),
)
TREES = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(KEYS, children, max_size=6),
    max_leaves=40,
)


def loads_or_refuses_in_one_line(text: str) -> None:
    """Loading ``text`` gives a scenario or a :class:`ScenarioError` of one located line per problem
    (at most MAX_ERROR_LINES and a count); anything else propagates."""
    error = None
    try:
        parse_scenario(text, source="random.yaml")
    except ScenarioError as refused:
        error = refused
    if error is None:
        return
    lines = str(error).splitlines()
    assert 1 <= len(lines) <= MAX_ERROR_LINES + 1
    assert all(line.startswith("random.yaml") for line in lines)


@settings(max_examples=300, deadline=1000)
@given(tree=st.dictionaries(KEYS, TREES, max_size=8))
def test_random_yaml_trees_load_or_are_one_line_errors(tree):
    loads_or_refuses_in_one_line(yaml.safe_dump(tree, allow_unicode=True))


@settings(max_examples=300, deadline=1000)
@given(text=st.text(max_size=300))
def test_random_text_loads_or_is_a_one_line_error(text):
    loads_or_refuses_in_one_line(text)


def test_every_shipped_scenario_still_loads():
    for name in shipped_names():
        assert load_scenario(name).name == name
