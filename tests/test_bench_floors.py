"""bench/floors.py, the benchmarks' check in CI: a ratio more than 2x worse than its documented floor fails.

The arithmetic with one-line fakes; the benchmarks themselves run in scripts/test's full run, not here (tests never
assert on times).
"""

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_SPEC = importlib.util.spec_from_file_location("bench_floors", ROOT / "bench" / "floors.py")
assert _SPEC and _SPEC.loader
floors = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = floors  # dataclasses look their module up there
_SPEC.loader.exec_module(floors)


@pytest.mark.parametrize(("ratio", "holds"), [(1.0, True), (0.41, True), (0.201, True), (0.199, False), (0.1, False)])
def test_a_higher_is_better_ratio_fails_only_below_half_its_floor(ratio, holds):
    floor = floors.Floor("t", "x", 0.4, higher_is_better=True)
    assert floor.holds(ratio) is holds
    assert ("FAILED" in floor.line(ratio)) is not holds


@pytest.mark.parametrize(("ratio", "holds"), [(5.0, True), (16.0, True), (31.9, True), (32.1, False), (64.0, False)])
def test_a_lower_is_better_ratio_fails_only_past_twice_its_floor(ratio, holds):
    floor = floors.Floor("t", "x", 16.0, higher_is_better=False)
    assert floor.holds(ratio) is holds


@pytest.mark.parametrize("floor", list(floors.FLOORS.values()), ids=list(floors.FLOORS))
def test_a_4x_regression_from_the_floor_fails_and_the_floor_itself_holds(floor):
    worse = floor.floor / 4 if floor.higher_is_better else floor.floor * 4
    assert floor.holds(floor.floor)
    assert not floor.holds(worse)


def test_the_median_of_side_by_side_pairs_each_going_first_in_turn():
    calls = []
    values = iter([10.0, 5.0, 4.0, 8.0, 30.0, 5.0])  # pairs: 10/5, then baseline first: 8 / 4, then 30/5

    def measure():
        calls.append("measure")
        return next(values)

    def baseline():
        calls.append("baseline")
        return next(values)

    assert floors.paired_median(measure, baseline, 3) == 2.0
    assert calls == ["measure", "baseline", "baseline", "measure", "measure", "baseline"]


def test_the_docs_quote_every_floor_and_scripts_test_runs_the_check_in_its_full_run():
    page = (ROOT / "docs" / "research" / "benchmarks.md").read_text(encoding="utf-8")
    for floor in floors.FLOORS.values():
        row = re.search(rf"^\| `{re.escape(floor.name)}` \|[^|]*\| (?P<floor>[\d.]+) \|", page, re.MULTILINE)
        assert row, f"docs/research/benchmarks.md has no row for {floor.name}"
        assert float(row["floor"]) == floor.floor, floor.name
    script = (ROOT / "scripts" / "test").read_text()
    full_run = script[script.index('if [ "$fast" = 1 ]; then\n    echo "== pytest') :]
    assert "bench/floors.py" in full_run.split("else", 1)[1]
