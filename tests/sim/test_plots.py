"""The simulator's per-request plot: readable axes (no offset, log where values span decades) and a legend."""

import re

from retrystorm.experiment.scenario import scenario_from_data
from retrystorm.sim.config import RunConfig
from retrystorm.sim.plots import requests_figure
from retrystorm.sim.result import RunOutput
from retrystorm.sim.series import Series

PLAIN = re.compile(r"^[\d,.]*$")  # a tick label in plain numbers (or none)


def run_output(latencies, attempts, label="fixed:100ms") -> RunOutput:
    """A finished run of ``label`` whose requests took ``latencies`` over ``attempts``."""
    data = {"name": "t", "model": "exponential", "load": {"users": 10, "duration": 10.0}, "strategies": [label]}
    scenario = scenario_from_data(data)
    config = RunConfig.from_scenario(scenario, scenario.strategies[0], ())
    return RunOutput(
        config=config,
        counts={},
        latencies=list(latencies),
        request_attempts=list(attempts),
        peak_in_flight=0,
        series=Series.empty(10.0, 1.0),
    )


def drawn(run: RunOutput):
    figure = requests_figure([run], "t")
    figure.draw_without_rendering()  # lays the ticks out and sets the offset text, as saving does
    latency_axis, attempts_axis = figure.axes
    return latency_axis, attempts_axis


def test_flat_latencies_have_no_offset_and_a_legend():
    # a metastable run: every finished request took the base delay, give or take rounding
    latencies = [0.1 + (i % 3) * 1e-14 for i in range(2000)]
    latency_axis, attempts_axis = drawn(run_output(latencies, [1] * 2000))
    for axis in (latency_axis.yaxis, attempts_axis.yaxis, latency_axis.xaxis):
        assert axis.get_offset_text().get_text() == ""
    assert latency_axis.get_yscale() == "linear" and latency_axis.get_ylim()[0] == 0
    assert latency_axis.get_ylim()[1] > max(latencies)  # the line clears the top of the axes
    assert latency_axis.get_ylabel() == "latency (s)" and attempts_axis.get_ylabel() == "attempts"
    legend = latency_axis.get_legend()
    assert legend is not None
    assert [text.get_text() for text in legend.get_texts()] == ["latency (left axis)", "attempts (right axis)"]
    assert all(PLAIN.match(label.get_text()) for label in latency_axis.get_yticklabels())
    assert {label.get_text() for label in attempts_axis.get_yticklabels()} >= {"0", "1", "2"}


def test_latencies_spanning_decades_go_on_a_log_axis_in_plain_numbers():
    latencies = [0.1] * 900 + [1.5, 4.0, 12.0, 45.0]
    latency_axis, attempts_axis = drawn(run_output(latencies, [1] * 900 + [2, 3, 4, 5], label="smira"))
    assert latency_axis.get_yscale() == "log" and latency_axis.get_ylabel() == "latency (s), log scale"
    assert attempts_axis.get_yscale() == "linear"
    shown = [label.get_text() for label in latency_axis.get_yticklabels() if label.get_text()]
    assert {"0.1", "1", "10"} <= set(shown) and all(PLAIN.match(text) for text in shown)
    assert latency_axis.yaxis.get_offset_text().get_text() == ""
    assert latency_axis.get_legend() is not None


def test_unfinished_requests_are_drawn_at_their_age_and_marked():
    from retrystorm.sim.latency import Unfinished
    from retrystorm.sim.plots import sorted_requests

    run = run_output([0.1] * 20, [1] * 20)
    run.unfinished = Unfinished(ages=[30.0, 0.05], attempts=[12, 1])
    latencies, attempts, censored = sorted_requests(run)
    assert latencies[0] == 0.05 and censored[0] and attempts[0] == 1  # just started when the run ended
    assert latencies[-1] == 30.0 and censored[-1] and attempts[-1] == 12
    assert sum(censored) == 2
    latency_axis, _ = drawn(run)
    legend = [text.get_text() for text in latency_axis.get_legend().get_texts()]
    assert "unfinished: age so far (censored)" in legend
    assert "2 unfinished (x)" in latency_axis.get_title()
