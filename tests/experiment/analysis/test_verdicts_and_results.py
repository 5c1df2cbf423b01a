"""Verdicts beside their bounds, percentiles, and the results document's shape."""

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrystorm.experiment.analysis import LatencySummary, Recovery, RunResult, evaluate, percentile, results_document
from retrystorm.experiment.scenario import Assertions, OutageWindow


def run(recoveries=(), **counts):
    values = {"attempts": 150, "requests": 100, "succeeded": 90, "gave_up": 5, "unfinished": 5}
    values.update(counts)
    return RunResult(
        strategy="EB",
        spec="exponential:base=2s",
        latency=LatencySummary.of([0.1, 0.2, 0.3]),
        peak_in_flight=40,
        recoveries=list(recoveries),
        **values,
    )


ONE = [Recovery(OutageWindow(20, 50), server_s=6.0, client_s=None)]
TWO = [
    Recovery(OutageWindow(20, 30), server_s=3.0, client_s=9.0),
    Recovery(OutageWindow(60, 70), server_s=20.0, client_s=None),
]


def checks(assertions, result):
    return {v.check: (v.bound, v.measured, v.passed) for v in evaluate(Assertions(**assertions), result)}


def test_recovery_bounds_and_never():
    found = checks({"server_recovers_within": 15, "client_recovers_within": "never"}, run(ONE))
    assert found == {"server_recovers_within": ("15s", 6.0, True), "client_recovers_within": ("never", None, True)}
    found = checks({"server_recovers_within": 5, "client_recovers_within": 30}, run(ONE))
    assert found == {"server_recovers_within": ("5s", 6.0, False), "client_recovers_within": ("30s", None, False)}


def test_with_several_outages_every_one_must_hold():
    found = checks({"server_recovers_within": 15, "client_recovers_within": "never"}, run(TWO))
    assert found["server_recovers_within"] == ("15s", [3.0, 20.0], False)
    assert found["client_recovers_within"] == ("never", [9.0, None], False)


def test_ratio_and_peak_bounds():
    found = checks({"min_success_ratio": 0.9, "max_amplification": 1.4, "max_peak_in_flight": 40}, run())
    assert found == {
        "min_success_ratio": (0.9, 0.9, True),
        "max_amplification": (1.4, 1.5, False),
        "max_peak_in_flight": (40, 40, True),
    }


def test_describe_puts_the_measured_value_beside_the_bound():
    (verdict,) = evaluate(Assertions(server_recovers_within=15), run(ONE))
    assert verdict.describe() == "server_recovers_within 15s: measured 6s (pass)"


def test_a_confirmed_never_reads_as_an_expected_failure_not_a_pass():
    stuck = run([Recovery(OutageWindow(20, 30), None, None)])
    (verdict,) = evaluate(Assertions(server_recovers_within="never"), stuck)
    assert verdict.passed and verdict.expected_failure and verdict.status == "expected failure, confirmed"
    assert verdict.describe() == "server_recovers_within never: measured never (expected failure, confirmed)"
    (refuted,) = evaluate(Assertions(server_recovers_within="never"), run(ONE))
    assert not refuted.passed and not refuted.expected_failure and refuted.status == "FAIL"


def test_document_keys_and_nulls():
    document = results_document("smira", [run(ONE)], notes=["x"])
    row = document["results"][0]
    for key in [
        "strategy", "attempts", "requests", "succeeded", "gave_up", "amplification", "latency_p50",
        "latency_p99", "latency_max", "peak_in_flight", "server_recovery_s", "client_recovery_s",
    ]:  # fmt: skip
        assert key in row
    assert (row["strategy"], row["amplification"], row["server_recovery_s"], row["client_recovery_s"]) == (
        "EB",
        1.5,
        6.0,
        None,
    )
    assert document["experiment"] == "smira"
    assert document["notes"] == ["x"]
    json.dumps(document)


def test_recovery_is_null_without_outage_and_a_list_with_several():
    assert run().to_json()["server_recovery_s"] is None
    assert run(TWO).to_json()["server_recovery_s"] == [3.0, 20.0]
    assert run(TWO).to_json()["outages"] == [[20.0, 30.0], [60.0, 70.0]]


def test_empty_latencies_are_null():
    assert LatencySummary.of([]) == LatencySummary()
    assert run(requests=0).to_json()["amplification"] is None


@given(st.lists(st.floats(0, 1e6, allow_nan=False), min_size=1, max_size=50), st.floats(0, 100))
def test_percentile_matches_numpy(values, q):
    assert percentile(sorted(values), q) == pytest.approx(float(np.percentile(values, q)), rel=1e-9, abs=1e-9)


def test_the_terminal_marks_a_confirmed_never_as_an_expected_failure_not_ok():
    import dataclasses
    import io

    from rich.console import Console

    from retrystorm.runner.show import print_verdicts

    stuck = run([Recovery(OutageWindow(20, 30), None, None)])
    stuck = dataclasses.replace(stuck, verdicts=evaluate(Assertions(server_recovers_within="never"), stuck))
    shown = io.StringIO()
    print_verdicts(Console(file=shown, width=200, color_system=None), "t", [stuck], None)
    assert "  xfail EB: server_recovers_within never: measured never (expected failure, confirmed)" in shown.getvalue()
    assert "ok" not in shown.getvalue().split("Assertions", 1)[1].split("\n")[1]
