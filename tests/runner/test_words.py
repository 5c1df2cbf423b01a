"""Words that match the truth: the headline quotes the table beside it, over the same window; the goodput "at the
end" is the run's end; no empty panel; the figures table fits the page."""

from __future__ import annotations

import dataclasses
import re

import pytest

from retrystorm.experiment.report.plots import strategy_figure
from retrystorm.experiment.scenario import OutageWindow
from retrystorm.runner.outputs import live_curves, run_document, write_run
from retrystorm.runner.record import analyse
from tests.experiment.report.conftest import words

from .conftest import fabricate


@pytest.fixture
def drained():
    """40 s, resumed at 25.4 s: the reading at 26 s (of the second that began before the resume) holds the
    backlog, 426 in flight; the server is back at steady levels from 27 s."""
    goodput = [100.0] * 20 + [0.0] * 6 + [90.0, 100.0] + [100.0] * 12
    attempts = [100.0] * 20 + [30.0] * 6 + [120.0, 100.0] + [100.0] * 12
    in_flight = [10.0] * 20 + [None] * 5 + [426.0, 6.0] + [6.0] * 13
    return fabricate(goodput, attempts, in_flight)


def test_the_headline_quotes_the_peak_the_table_beside_it_gives(tmp_path, small, record_of, drained):
    record = record_of("smira", drained, [OutageWindow(20.0, 25.4)])
    result = analyse(record, small.assertions["smira"])
    (figures,) = result.extra["after_resume"]
    assert figures["in_flight_at_resume"] == 426 and figures["peak_in_flight"] == 426  # read after the resume
    document = run_document(small.name, [result], [record], {})
    write_run(tmp_path, document, [record])
    page = words((tmp_path / "report.html").read_text())
    quoted = re.search(r"while it drained up to ([\d,]+) requests in flight", page)
    assert quoted is not None and quoted.group(1) == "426"
    row = re.search(r"smira 1 of 1 \S+, until the server recovered [\d,.]+ [\d,.]+ [\d.]+× ([\d,]+) ([\d,]+)", page)
    assert row is not None and row.groups() == ("426", "426")


def test_the_goodput_at_the_end_is_the_runs_end_not_the_seconds_after_the_resume(small, record_of):
    """Back at 27 s, then goodput climbs to 96/s by the end: the figure is the last 10 s, not the 2 s after the
    resume."""
    goodput = [100.0] * 20 + [0.0] * 6 + [20.0, 30.0] + [60.0] * 2 + [96.0] * 10
    attempts = [100.0] * 20 + [30.0] * 6 + [100.0] * 14
    in_flight = [10.0] * 20 + [None] * 5 + [8.0] * 15
    record = record_of("smira", fabricate(goodput, attempts, in_flight), [OutageWindow(20.0, 25.4)])
    (figures,) = analyse(record, small.assertions["smira"]).extra["after_resume"]
    assert figures["goodput_end_per_s"] == pytest.approx(96.0, abs=0.5)
    assert figures["goodput_per_s"] < 50.0  # the window's own tail: what "at the end" used to say


def test_a_panel_without_server_readings_says_so(record_of, drained):
    record = record_of("smira", [dataclasses.replace(reading, target=None) for reading in drained])
    figure = strategy_figure(live_curves(record))
    texts = [text.get_text() for axis in figure.axes for text in axis.texts]
    assert any(text.startswith("no server metrics") for text in texts)


def test_a_storm_without_server_readings_says_what_the_users_offered_and_nothing_of_the_server():
    from retrystorm.experiment.report.why import strategy_line

    row = {
        "strategy": "fixed", "outages": [[15.0, 25.0]], "server_recovery_s": None, "client_recovery_s": None,
        "unfinished": 60, "latency_p99": 58.0, "in_flight_end": None,
        "after_resume": [{"attempts_ratio": 2.69, "attempts_per_s": 53.0, "steady_attempts_per_s": 20.0}],
    }  # fmt: skip
    assert strategy_line(row) == (
        "fixed never came back: after the resume its users offered 2.69× the steady attempts (53/s against 20/s); "
        "60 requests were still waiting when the run ended (p99 58s and counting)."
    )


def test_the_figures_table_is_two_each_narrow_enough_for_the_page(small, record_of, drained):
    from retrystorm.experiment.report.page import figures_tables

    record = record_of("smira", drained, [OutageWindow(20.0, 25.4)])
    document = run_document(small.name, [analyse(record, small.assertions["smira"])], [record], {})
    tables = figures_tables(document["results"])
    assert all(table.header[0] == "strategy" and len(table.header) <= 8 for table in tables)
    shown = [name for table in tables for name in table.header[1:]]
    assert len(shown) == len(set(shown)) and {"p99", "server recovery", "amplification"} <= set(shown)


def test_a_storm_line_says_whether_fresh_requests_were_answered_after_the_resume():
    from retrystorm.experiment.report.why import strategy_line

    row = {
        "strategy": "fixed", "outages": [[15.0, 25.0]], "server_recovery_s": None, "client_recovery_s": None,
        "unfinished": 0, "latency_p99": 1.0, "in_flight_end": None,
        "after_resume": [{"attempts_ratio": 2.0, "attempts_per_s": 40.0, "steady_attempts_per_s": 20.0,
                          "fresh_sent_s": 40.0, "fresh_in_time_s": 0.0}],
    }  # fmt: skip
    assert strategy_line(row) == (
        "fixed never came back: after the resume its users offered 2× the steady attempts (40/s against 20/s); "
        "no fresh request was answered in time in the 40s after it."
    )
    row["after_resume"][0]["fresh_in_time_s"] = 3.0
    assert "; fresh requests were answered in time in 3 of the 40s after it." in strategy_line(row)


def test_the_aftermath_counts_the_seconds_whose_fresh_requests_were_answered_in_time():
    from retrystorm.experiment.analysis import Samples, recoveries
    from retrystorm.experiment.analysis.mechanism import after_resumes

    fresh = [1.0] * 20 + [0.0] * 10 + [None, 0.0, 1.0, 0.0] + [0.0] * 6
    samples = Samples(
        step_s=1.0, goodput=[10.0] * 40, in_flight=[5.0] * 20 + [None] * 10 + [900.0] * 10, delay_s=[0.1] * 40,
        fresh_in_time=fresh,
    )  # fmt: skip
    (figures,) = after_resumes(samples, recoveries(samples, [OutageWindow(20.0, 30.0)]))
    assert (figures.fresh_sent_s, figures.fresh_in_time_s) == (9.0, 1.0)  # 30-40 s: one second unsent, one in time
    no_fresh = dataclasses.replace(samples, fresh_in_time=())
    (figures,) = after_resumes(no_fresh, recoveries(no_fresh, [OutageWindow(20.0, 30.0)]))
    assert (figures.fresh_sent_s, figures.fresh_in_time_s) == (None, None)
