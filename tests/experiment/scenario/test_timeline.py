"""The fault timeline: repeats, random starts, overlapping pauses merged into outages."""

import itertools
import random

from hypothesis import given
from hypothesis import strategies as st

from retrystorm.experiment.scenario import FaultPlan, OutageWindow, expand_faults, merge_outages, parse_scenario


def test_repeat_times_and_until_the_end():
    rng = random.Random(1)
    three = FaultPlan("target", at_s=10, for_s=5, every_s=20, times=3)
    assert three.starts(100, rng) == [10, 30, 50]
    forever = FaultPlan("target", at_s=10, for_s=5, every_s=20)
    assert forever.starts(100, rng) == [10, 30, 50, 70, 90]
    assert forever.starts(94, rng) == [10, 30, 50, 70]  # 90 + 5 would end after 94
    assert forever.latest_end_s() == float("inf")
    assert three.latest_end_s() == 55


def test_random_start_stays_in_its_window_and_follows_the_seed():
    plan = FaultPlan("target", at_s=10, for_s=5, every_s=30, times=4, random_start_s=8)
    starts = plan.starts(200, random.Random(5))
    assert starts == plan.starts(200, random.Random(5))
    assert starts != plan.starts(200, random.Random(6))
    for index, start in enumerate(starts):
        assert 10 + 30 * index <= start < 18 + 30 * index


def test_overlapping_and_touching_pauses_merge_per_target():
    pauses = [
        OutageWindow(10, 20),
        OutageWindow(15, 30),
        OutageWindow(30, 35),
        OutageWindow(50, 60),
        OutageWindow(12, 14, "db"),
    ]
    assert merge_outages(pauses) == [OutageWindow(10, 35), OutageWindow(12, 14, "db"), OutageWindow(50, 60)]


def test_scenario_outages_merge_its_faults():
    text = """
name: t
model: fixed
load: {users: 1, duration: 100s}
strategies: [none]
faults:
  - {at: 10s, for: 10s, repeat: {every: 30s, times: 2}}
  - {at: 15s, for: 10s}
"""
    assert [(o.start_s, o.end_s) for o in parse_scenario(text).outages()] == [(10, 25), (40, 50)]


intervals = st.lists(st.tuples(st.integers(0, 100), st.integers(1, 20)), max_size=12)


@given(intervals)
def test_merged_outages_are_disjoint_and_cover_exactly_the_pauses(pairs):
    pauses = [OutageWindow(float(start), float(start + length)) for start, length in pairs]
    merged = merge_outages(pauses)
    for before, after in itertools.pairwise(merged):
        assert before.end_s < after.start_s
    for point in [x / 2 for x in range(260)]:
        inside_pause = any(p.start_s <= point < p.end_s for p in pauses)
        inside_outage = any(o.start_s <= point < o.end_s for o in merged)
        assert inside_pause == inside_outage


def test_expand_sorts_every_pause():
    plans = [FaultPlan("target", 30, 5), FaultPlan("target", 10, 5, every_s=50)]
    assert [p.start_s for p in expand_faults(plans, 100, random.Random(0))] == [10, 30, 60]
