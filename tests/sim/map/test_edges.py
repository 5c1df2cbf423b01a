"""A map's edge wherever the verdict flips along the first axis, in either direction, and which side recovers."""

from __future__ import annotations

import textwrap

import pytest

from retrystorm.experiment.report.map_page import summary
from retrystorm.sim.map.build import prepare
from retrystorm.sim.map.document import row_edge
from retrystorm.sim.map.grid import run_all

R, M, X = "recovers", "metastable", "mixed"


@pytest.mark.parametrize(
    ("verdicts", "expected"),
    [
        ([R, R, M, M], {"edge": 3.0, "recovers": "below", "between": [2.0, 3.0]}),
        ([R, X, M, M], {"edge": 3.0, "recovers": "below", "between": [2.0, 3.0]}),
        ([M, R, R, R], {"edge": 1.0, "recovers": "above", "between": [1.0, 2.0]}),
        ([M, M, X, R], {"edge": 2.0, "recovers": "above", "between": [2.0, 3.0]}),
        ([R, R, R, R], {"edge": None, "across": "recovers"}),
        ([M, M, M, M], {"edge": None, "across": "metastable"}),
    ],
)
def test_the_edge_is_where_the_verdict_flips_and_says_which_side_recovers(verdicts, expected):
    assert row_edge([1.0, 2.0, 3.0, 4.0], verdicts) == expected


def test_a_row_that_flips_twice_lists_both_flips():
    found = row_edge([1.0, 2.0, 3.0], [M, R, M])
    assert found["flips"] == [
        {"edge": 1.0, "recovers": "above", "between": [1.0, 2.0]},
        {"edge": 3.0, "recovers": "below", "between": [2.0, 3.0]},
    ]
    assert found["edge"] == 3.0  # the flip at the row's metastable end


#: The small seed server of test_map, cut to a share of its capacity for 10 s instead of frozen.
SLOW = textwrap.dedent(
    """\
    name: slow
    model: exponential:limit=6,k=3
    load: {users: 200, think_time: exponential:10s, attempt_timeout: 2s, duration: 45s}
    strategies: [fixed:100ms]
    faults:
      - {slow: target, capacity: 0.4, at: 15s, for: 10s}
    """
)


def test_a_capacity_axis_has_its_edge_where_smaller_is_worse(tmp_path):
    path = tmp_path / "slow.yaml"
    path.write_text(SLOW)
    plan = prepare(str(path), ("faults[0].capacity=0.1..0.9:5",), (), repeat=1, seed=None, horizon_s=None, marks=())
    document = plan.document(run_all(plan.tasks, workers=1))
    verdicts = [cell["verdict"] for cell in document["cells"]]
    assert verdicts[0] == M and verdicts[-1] == R  # the grid flips the other way from a freeze's length
    (edge,) = document["strategies"][0]["edge"]
    assert edge["recovers"] == "above" and edge["edge"] == pytest.approx(0.1)
    assert "edge along faults[0].capacity: between 0.1 and 0.3, recovers above" in summary(document)[0]
