"""Recovery times are measured from the end of the trigger a run had, and the words say which: the resume of a
pause, the end of a slow, a spike or an error burst."""

from __future__ import annotations

import pytest

from retrystorm.experiment.report.ranking import Standing, summary, trigger_end
from retrystorm.experiment.report.why import strategy_line


def _row(kinds: list[str], server_s: float | None, client_s: float | None) -> dict[str, object]:
    return {
        "strategy": "smira", "outages": [[20.0, 30.0]], "server_recovery_s": server_s, "client_recovery_s": client_s,
        "triggers": [{"kind": kind, "target": "target", "start_s": 20.0, "end_s": 30.0} for kind in kinds],
        "after_resume": [{"attempts_ratio": 0.8, "attempts_per_s": 80.0, "steady_attempts_per_s": 100.0}],
    }  # fmt: skip


@pytest.mark.parametrize(
    ("kinds", "end"),
    [
        ([], "the resume"),
        (["pause"], "the resume"),
        (["slow"], "the end of the slow"),
        (["spike", "spike"], "the end of the spike"),
        (["errors"], "the end of the error burst"),
        (["slow", "pause"], "the end of the trigger"),
    ],
)
def test_recovery_is_measured_from_the_end_of_the_trigger_the_run_had(kinds, end):
    assert trigger_end(_row(kinds, 4.0, 6.0)) == end


def test_a_slow_that_was_recovered_from_reads_after_the_end_of_the_slow_not_after_the_resume():
    line = strategy_line(_row(["slow"], 4.0, 6.0))
    assert line.startswith("smira came back: the server 4s after the end of the slow;")
    assert "goodput back 6s after the end of the slow" in line and "resume" not in line


def test_a_spike_never_recovered_from_reads_after_the_end_of_the_spike():
    line = strategy_line(_row(["spike"], None, None))
    assert line.startswith("smira never came back: after the end of the spike its users offered 0.8×")
    assert "resume" not in line


def test_a_pause_still_reads_after_the_resume():
    assert strategy_line(_row(["pause"], 0.0, 6.0)).startswith("smira came back: the server right at the resume;")


def test_the_report_summary_of_a_slow_says_after_the_end_of_the_slow():
    line = summary(Standing.of({**_row(["slow"], 4.0, 6.0), "success_ratio": 0.9}))
    assert line.startswith("server back 4s after the end of the slow, users back 6s after the end of the slow, ")
    assert summary(Standing.of(_row(["pause"], 4.0, None))).startswith("server back 4s after the resume, users never")
