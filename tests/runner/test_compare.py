"""--simulate: how far simulated figures and curves are from the live ones."""

import pytest

from retrystorm.experiment.report import StrategyCurves
from retrystorm.experiment.scenario import RunSpec
from retrystorm.runner.compare import comparison, curve_difference, figure_difference, simulate
from retrystorm.runner.plan import make_plan


def test_figure_difference_and_ratio():
    assert figure_difference(100, 110) == {"live": 100.0, "simulated": 110.0, "difference": 10.0, "ratio": 1.1}
    assert figure_difference([2.0, 5.0], [3.0, 1.0])["difference"] == 1.0  # first outage
    assert figure_difference(None, 3.0) == {"live": None, "simulated": 3.0, "difference": None, "ratio": None}
    assert figure_difference(0, 3)["ratio"] is None


def test_curve_difference_over_common_seconds():
    found = curve_difference([10.0, None, 30.0, 40.0], [12.0, 5.0, 26.0])
    assert found == {"mean_abs_diff": 3.0, "live_mean": 20.0, "seconds": 2}
    assert curve_difference([None], [1.0])["mean_abs_diff"] is None


def test_simulated_curves_and_comparison(small):
    rows, curves = simulate(small)
    assert [row["strategy"] for row in rows] == ["fixed:100ms", "smira"]
    assert len(curves[0].times_s) == 40
    assert curves[0].outages == [(20.0, 25.0)]
    live = StrategyCurves("smira", [1.0], [90.0], [90.0], [10.0], [0.1], [(20.0, 25.0)])
    found = comparison([{"strategy": "smira", "attempts": 100}, {"strategy": "other"}], rows, [live], curves)
    assert set(found) == {"smira"}
    assert found["smira"]["attempts"]["live"] == 100.0
    assert found["smira"]["attempts"]["simulated"] == pytest.approx(rows[1]["attempts"])
    assert found["smira"]["curves"]["goodput"]["seconds"] == 1


def test_the_simulator_runs_the_spec_the_live_run_runs(small):
    from retrystorm.sim.config import RunConfig

    plan = make_plan(small, small.strategies)
    for entry, strategy in zip(small.strategies, plan.strategies, strict=True):
        config = RunConfig.from_scenario(small, entry, tuple(small.outages()))
        assert config.spec == strategy.spec == RunSpec.of(small, entry)
