"""The why line says what was measured of the server and how: never a stale reading as the present, the missing
readings counted wherever the verdict rests on them, in the terminal and the report alike."""

from __future__ import annotations

import io
import re

from rich.console import Console

from retrystorm.experiment.analysis import Samples, recoveries
from retrystorm.experiment.analysis.mechanism import after_resumes
from retrystorm.experiment.report.why import strategy_line
from retrystorm.experiment.scenario import OutageWindow
from retrystorm.runner.outputs import run_document, write_run
from retrystorm.runner.record import analyse
from retrystorm.runner.show import print_verdicts
from tests.experiment.report.conftest import words

from .conftest import fabricate

OUTAGE = OutageWindow(20.0, 30.0)


def row_of(samples: Samples) -> dict[str, object]:
    """The results row a run of ``samples`` would write, as far as the why line reads it."""
    [found] = recoveries(samples, [OUTAGE])
    [figures] = after_resumes(samples, [found])
    return {
        "strategy": "fixed", "outages": [[20.0, 30.0]], "server_recovery_s": found.server_s,
        "client_recovery_s": None, "unfinished": 0, "server_recovery_signals": found.server_signals,
        "after_resume": [figures.to_json()],
    }  # fmt: skip


def gauge(after: list[float | None]) -> Samples:
    """60 s; steady gauge 10 before the pause, unread while paused, ``after`` from the resume on."""
    in_flight = [10.0] * 20 + [None] * 10 + after
    return Samples(step_s=1.0, goodput=[100.0] * 60, in_flight=in_flight, delay_s=[0.1] * 60, attempts=[100.0] * 60)


def test_a_never_that_rests_on_missing_readings_counts_them_and_quotes_the_last_reading_with_its_time():
    # the app's /metrics queued behind the backlog: 26 of the 30 readings after the resume did not arrive, and the
    # four that did, early on, read steady levels
    row = row_of(gauge([12.0, None, 11.0, 12.0, 9.0] + [None] * 25))
    assert row["server_recovery_s"] is None
    assert row["after_resume"][0]["rests_on_missed"] is True
    line = strategy_line(row)
    assert "against a server whose in-flight gauge last read 9, 5s after the resume" in line
    assert "26 of the gauge's 30 readings after the resume went missing, and the verdict rests on them" in line
    assert "holding 9" not in line  # the last reading is not what the server held at the end


def test_a_storm_read_to_the_end_is_quoted_as_the_present_with_no_missing_readings():
    row = row_of(gauge([900.0] * 30))
    line = strategy_line(row)
    assert "against a server holding 900 requests at the end (its in-flight gauge)" in line
    assert "missing" not in line and row["after_resume"][0]["rests_on_missed"] is False


def test_missing_readings_that_do_not_decide_are_counted_beside_a_stale_reading_only():
    # read high until 27 s after the resume, then silent: 3 readings are too few to be the 5 s of a recovery
    row = row_of(gauge([900.0] * 27 + [None] * 3))
    assert row["after_resume"][0]["rests_on_missed"] is False
    line = strategy_line(row)
    assert "last read 900, 27s after the resume; 3 of the gauge's 30 readings after the resume went missing." in line
    assert "rests on them" not in line


def test_a_gauge_that_went_unread_says_so():
    line = strategy_line(row_of(gauge([None] * 30)))
    assert (
        "whose in-flight gauge went unread: all 30 readings after the resume missing, and the verdict rests on them"
        in (line)
    )


def test_the_terminal_and_the_report_show_the_missing_readings_a_verdict_rests_on(tmp_path, small, record_of):
    goodput = [100.0] * 20 + [0.0] * 20
    attempts = [100.0] * 20 + [150.0] * 20
    in_flight = [10.0] * 20 + [None] * 5 + [12.0, 10.0] + [None] * 13  # two readings, back, then none arrive
    record = record_of("fixed:100ms", fabricate(goodput, attempts, in_flight), [OutageWindow(20.0, 25.0)])
    result = analyse(record)
    assert result.recoveries[0].server_s is None and result.recoveries[0].rests_on_missed
    document = run_document(small.name, [result], [record], {})
    write_run(tmp_path, document, [record])
    shown = io.StringIO()
    print_verdicts(Console(file=shown, width=200, color_system=None), "t", [result], None, document)
    wanted = r"13 of the gauge's 15 readings after the resume went missing, and the verdict rests on them"
    assert re.search(wanted, shown.getvalue()), shown.getvalue()
    assert re.search(wanted, words((tmp_path / "report.html").read_text()))


def test_a_gauge_pinned_at_its_ceiling_is_named_as_not_used_not_quoted_as_what_the_server_held():
    pool = Samples(
        step_s=1.0,
        goodput=[20.0] * 60,
        in_flight=[8.0 + 2 * (i % 2) for i in range(20)] + [None] * 10 + [16.0] * 30,
        delay_s=[0.0] * 20 + [None] * 10 + [0.0] * 30,
        attempts=[20.0] * 60,
        attempt_latency_s=[0.05] * 20 + [1.0] * 40,
        timeouts=[0.0] * 20 + [30.0] * 40,
    )
    line = strategy_line(row_of(pool))
    assert "whose in-flight gauge read at most 16, a ceiling at or below its recovery threshold" in line
    assert "so it was not used" in line and "holding" not in line


def test_a_recovery_whose_time_rests_on_missing_readings_counts_them():
    # back at steady levels from the first reading, but 4 readings from 3 s to 6 s after the resume went missing
    row = row_of(gauge([10.0, 10.0, None, None, None, None] + [10.0] * 24))
    assert row["server_recovery_s"] == 7.0 and row["after_resume"][0]["rests_on_missed"] is True
    line = strategy_line(row)
    assert "; 4 of the gauge's 7 readings in that time went missing, and the time rests on them;" in line, line
    assert "missing" not in strategy_line(row_of(gauge([10.0] * 30)))
