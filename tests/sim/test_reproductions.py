"""The reproductions with triggers: OSDI'22's capacity cut and Brooker's load spike, checked with margins."""

import json
import subprocess
import sys

import pytest

from retrystorm.experiment.scenario import scenario_data, shipped_scenario
from retrystorm.sim.experiments import brooker, osdi22
from retrystorm.sim.experiments.scenario_runs import run_scenario

pytestmark = pytest.mark.slow  # reproduces published results at full size


@pytest.fixture(scope="module")
def osdi_report():
    return osdi22.run()


def test_osdi22_gives_the_four_published_verdicts(osdi_report):
    verdicts = {result.strategy: result.recoveries[0].server_s for result in osdi_report.results}
    assert list(verdicts) == [
        "(a) 0.45 CPUs, 10s",
        "(b) 0.40 CPUs, 10s",
        "(c) 0.40 CPUs, 9s",
        "(d) 0.40 CPUs, 10s, 75% load",
    ]
    recovered = [time is not None and time <= 30 for time in verdicts.values()]
    assert recovered == [True, False, True, True]
    assert all(finding.holds for finding in osdi_report.findings)
    assert osdi_report.ok


def test_osdi22_the_metastable_run_is_a_retry_storm_that_outlives_the_cut(osdi_report):
    stuck = osdi_report.results[1]
    assert stuck.amplification > 2.5  # most requests resent to their limit of 5 attempts
    run = osdi_report.runs[1]
    end = len(run.series.in_flight)
    assert run.series.in_flight[end - 1] > run.series.in_flight[75] > 1000  # still growing long after 70 s
    assert [w.to_json()["capacity"] for w in run.config.triggers] == [0.2]


@pytest.mark.parametrize(("utilisation", "all_four"), [(0.34, False), (0.38, True), (0.42, False)])
def test_osdi22_only_a_band_of_utilisation_gives_all_four(utilisation, all_four):
    """Outside the calibrated band a verdict fails: too light, (b) recovers; too heavy, (a) and (c) stay down."""
    raw, source = scenario_data(shipped_scenario("osdi22-retry"))
    raw["model"] = f"linear:base_delay=500us,slope={utilisation / 250 * 1000:.4f}ms"  # 250 requests/s
    holds = []
    for published in osdi22.PUBLISHED:
        result = run_scenario(osdi22.variant(raw, source, published)).results[0]
        holds.append(osdi22.finding(published, result).holds)
    assert all(holds) is all_four


def test_brooker_no_backoff_collapses_and_backoff_with_jitter_recovers():
    report = brooker.run()
    assert report.ok
    seeds = report.extra["seeds"]
    assert sum(run["server_recovery_s"] is None for run in seeds["no-backoff"]) >= 6
    assert all(run["server_recovery_s"] is not None for run in seeds["backoff+jitter"])
    plain = next(result for result in report.results if result.strategy == "no-backoff")
    assert plain.amplification > 2  # three attempts for most requests once the server is past the timeout


@pytest.mark.live
def test_brooker_network_delay_is_in_the_latency():
    result = json.loads(
        subprocess.run(
            [sys.executable, "-m", "retrystorm", "sim", "run", "brooker-spike", "--json"],
            capture_output=True, text=True, check=True, timeout=120,
        ).stdout
    )["results"]  # fmt: skip
    backoff = next(row for row in result if row["strategy"] == "backoff+jitter")
    assert backoff["latency_p50"] > 1.0 + 0.01 * 60 + 0.1  # server delay at ~67 in flight, plus the network
