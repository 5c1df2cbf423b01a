"""The verdict of a load session (pure), the chaos API's outages as pauses, and start_load's argument checks."""

import subprocess
import sys

import pytest

from retrystorm.errors import UserError
from retrystorm.experiment.analysis import Recovery, RunResult
from retrystorm.experiment.analysis.stats import LatencySummary
from retrystorm.experiment.scenario import Assertions, OutageWindow
from retrystorm.integrations.chaostoolkit.session import pauses_of
from retrystorm.integrations.chaostoolkit.settings import build_settings
from retrystorm.integrations.chaostoolkit.verdict import Pause, judge

BOUNDS = Assertions(server_recovers_within=10.0, client_recovers_within=20.0)
PAUSE = Pause(10.0, 14.0, "target")


def result(server_s, client_s, *, valid=True, pauses=(PAUSE,), steady=True):
    recoveries = [Recovery(OutageWindow(p.start_s, p.end_s, p.target), server_s, client_s) for p in pauses]
    return RunResult(
        strategy="s", spec="s", attempts=10, requests=10, succeeded=10, gave_up=0, unfinished=0,
        latency=LatencySummary.of_histogram((), 0), peak_in_flight=1, recoveries=recoveries,
        extra={
            "validity": {"valid": valid, "saturated_s": 9, "seconds": 20},
            "steady_state": {"valid": steady, "problem": None if steady else "GET /api: 100 % answered 404"},
        },
    )  # fmt: skip


@pytest.mark.parametrize(
    ("found", "pauses", "elapsed_s", "running", "expected"),
    [
        (None, [], 3.0, True, "steady"),
        (result(None, None), [], 30.0, False, "no verdict"),
        (result(None, None), [Pause(10.0, None, "target")], 12.0, True, "pending"),
        (result(1.0, 3.0), [PAUSE], 25.0, True, "recovered"),
        (result(1.0, None), [PAUSE], 25.0, True, "pending"),  # the users' bound (20 s) has not passed
        (result(1.0, None), [PAUSE], 14.0 + 20 + 5 + 1.5, True, "not recovered"),
        (result(None, None), [PAUSE], 14.0 + 10 + 5 + 1.5, True, "not recovered"),
        (result(12.0, 3.0), [PAUSE], 30.0, True, "not recovered"),  # seen, but later than its bound
        (result(None, None), [PAUSE], 20.0, False, "no verdict"),  # the load ended before the bounds passed
        (result(1.0, 3.0, valid=False), [PAUSE], 25.0, True, "no verdict"),
        (result(1.0, 3.0, steady=False), [PAUSE], 25.0, True, "no verdict"),
        (result(1.0, 3.0, pauses=[Pause(2.0, 4.0, "target")]), [Pause(2.0, 4.0, "target")], 25.0, True, "no verdict"),
    ],
)
def test_the_verdict(found, pauses, elapsed_s, running, expected):
    judgement = judge(found, pauses, elapsed_s=elapsed_s, running=running, assertions=BOUNDS)
    assert judgement.verdict == expected, judgement.reason
    assert judgement.known == (expected in ("recovered", "not recovered", "no verdict"))


def test_only_the_bounds_set_are_judged():
    only_server = Assertions(server_recovers_within=10.0)
    assert (
        judge(result(1.0, None), [PAUSE], elapsed_s=16.0, running=True, assertions=only_server).verdict == "recovered"
    )


def test_the_chaos_apis_outages_become_pauses_after_the_loads_start():
    wall_t0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z
    outages = [
        {"target": "target", "status": "resumed", "started_utc": "2027-01-15T08:00:10.000+00:00",
         "ended_utc": "2027-01-15T08:00:14.500+00:00"},
        {"target": "target", "status": "active", "started_utc": "2027-01-15T08:00:20.000+00:00", "ended_utc": None},
        {"target": "other", "status": "resumed", "started_utc": "2027-01-15T08:00:11.000+00:00",
         "ended_utc": "2027-01-15T08:00:12.000+00:00"},
        {"target": "target", "status": "resumed", "started_utc": "2027-01-15T07:59:00.000+00:00",
         "ended_utc": "2027-01-15T07:59:05.000+00:00"},  # over before the load started
        {"target": "target", "status": "failed", "started_utc": "2027-01-15T08:00:30.000+00:00",
         "ended_utc": "2027-01-15T08:00:30.100+00:00"},  # nothing was paused
    ]  # fmt: skip
    assert pauses_of(outages, wall_t0, "target") == [Pause(10.0, 14.5, "target"), Pause(20.0, None, "target")]
    assert len(pauses_of(outages, wall_t0, None)) == 3


ARGUMENTS = {"name": "load", "target_url": "http://127.0.0.1:8070", "chaos_url": "http://127.0.0.1:8071",
             "strategy": "smira"}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"load": {"users": 0}}, "start_load: load.users: got 0; expected greater than or equal to 1"),
        ({"load": {"users": 0, "duration": "x"}}, "start_load: load."),
        ({"strategy": "fixed:bogus=1"}, "start_load: strategy: strategy 'fixed': unknown parameter 'bogus'"),
        ({"chaos_url": "ftp://x"}, "start_load: chaos_url: got 'ftp://x'"),
        ({"target_url": "nowhere"}, "start_load: target_url: "),
        ({"server_metrics_given": 5}, "start_load: server_metrics: got '5', expected 'builtin'"),
        ({"assertions": {"server_recovers_within": "soon"}}, "start_load: assertions.server_recovers_within:"),
        ({"assertions": {"max_amplification": 2}}, "start_load: assertions: give server_recovers_within"),
        ({"name": ""}, "start_load: name: got ''"),
    ],
)
def test_a_wrong_argument_is_one_line_naming_it(change, expected):
    with pytest.raises(UserError) as raised:
        build_settings(**{**ARGUMENTS, **change})
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(expected), message


def test_the_settings_are_the_scenario_loaders():
    settings = build_settings(**ARGUMENTS, load={"users": 7, "duration": "20s"}, server_metrics_given="builtin")
    assert (settings.spec.users, settings.spec.duration_s, settings.spec.label) == (7, 20.0, "smira")
    assert settings.metrics is not None and settings.metrics[0] == "http://127.0.0.1:8070/metrics"
    assert settings.assertions.server_recovers_within == 15.0


@pytest.mark.live  # a process without the extra
def test_without_the_extra_the_import_is_one_line():
    code = (
        "import sys; sys.modules['chaoslib'] = None\n"
        "try:\n    import retrystorm.integrations.chaostoolkit.actions\n"
        "except ImportError as error:\n    print(error)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == (
        "retrystorm.integrations.chaostoolkit needs the chaostoolkit extra: pip install 'retrystorm[chaostoolkit]'"
    )
