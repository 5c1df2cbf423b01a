"""The built-in experiments reproduce their sources' findings, checked with margins."""

import statistics

import pytest

from retrystorm.sim.experiments import contention, edge, smira, wyegelwel


@pytest.fixture(scope="module")
def wyegelwel_report():
    return wyegelwel.run()


@pytest.fixture(scope="module")
def smira_report():
    return smira.run()


def by_label(report):
    return {result.strategy: result for result in report.results}


def test_wyegelwel_backing_off_sends_over_ten_times_fewer_attempts(wyegelwel_report):
    runs = by_label(wyegelwel_report)
    for fast in ("NB", "CB", "URB"):
        for backing_off in ("EB", "REB"):
            assert runs[fast].attempts >= 10 * runs[backing_off].attempts


def test_wyegelwel_backing_off_has_far_lower_latency_and_everyone_finishes(wyegelwel_report):
    runs = by_label(wyegelwel_report)
    for backing_off in ("EB", "REB"):
        assert runs[backing_off].succeeded == 800
        assert runs[backing_off].latency.p50 < 20  # ticks
        assert runs[backing_off].latency.max < 1000
    for fast in ("NB", "CB", "URB"):
        assert runs[fast].latency.p50 > 150
        assert runs[fast].unfinished > 400  # still retrying at tick 3000


def test_wyegelwel_nb_plateaus_at_the_overwhelm_threshold(wyegelwel_report):
    nb = next(run for run in wyegelwel_report.runs if run.config.spec.label == "NB")
    received = nb.series.attempts
    for start in range(100, 1000, 100):
        assert statistics.fmean(received[start : start + 100]) == pytest.approx(25, abs=2)
    assert all(finding.holds for finding in wyegelwel_report.findings)
    assert len(wyegelwel_report.findings) == 3


def test_wyegelwel_states_its_unstated_choices(wyegelwel_report):
    text = " ".join(wyegelwel_report.notes)
    for choice in ("Spike timing", "Progress when overwhelmed", "Run length"):
        assert choice in text


def test_smira_fixed_retries_never_recover(smira_report):
    fixed = by_label(smira_report)["fixed:100ms"]
    (recovery,) = fixed.recoveries
    assert recovery.server_s is None
    assert recovery.client_s is None
    run = next(run for run in smira_report.runs if run.config.spec.label == "fixed:100ms")
    after = run.series.in_flight[55:]
    assert min(after) > 5000  # jumps on resume and keeps growing
    assert after[-1] > after[0]
    assert sum(run.series.goodput[55:]) == 0


def test_smira_recovers_the_server_within_15_s_while_goodput_lags(smira_report):
    smira_run = by_label(smira_report)["smira"]
    (recovery,) = smira_run.recoveries
    assert recovery.server_s is not None
    assert recovery.server_s <= 15
    assert recovery.client_s is None or recovery.client_s >= recovery.server_s + 20
    run = next(run for run in smira_report.runs if run.config.spec.label == "smira")
    steady = statistics.fmean(run.series.goodput[10:20])
    assert statistics.fmean(run.series.goodput[55:65]) < 0.6 * steady  # +5..15 s after the resume
    assert all(finding.holds for finding in smira_report.findings)
    assert smira_report.ok


def test_smira_explains_the_go_servers_plateau_and_what_the_clamp_does_instead(smira_report):
    text = " ".join(smira_report.notes)
    assert "7,792" in text and "overflow" in text and "max_delay" in text
    assert "0.0 OK/s" in smira_report.findings[0].text


@pytest.fixture(scope="module")
def smira_go_report():
    return smira.run(smira.load(overflow="go"))


def test_smira_with_the_go_overflow_settles_at_7792_and_lets_tens_of_answers_through(smira_go_report):
    fixed = by_label(smira_go_report)["fixed:100ms"]
    (recovery,) = fixed.recoveries
    assert recovery.server_s is None
    run = next(run for run in smira_go_report.runs if run.config.spec.label == "fixed:100ms")
    after = run.series.in_flight[60:]
    assert statistics.median(after) == 7792  # the Go server's int64 delay overflows from 7,793
    assert max(after) <= 7800
    ok_per_s = statistics.fmean(run.series.goodput[60:])
    assert ok_per_s >= 10  # tens per second; the clamped model gives none
    assert all(finding.holds for finding in smira_go_report.findings)
    assert smira_go_report.ok  # fixed's client recovery is reported as a finding, not asserted


def test_contention_reproduces_the_posts_charts():
    report = contention.run(clients=(10, 100, 190), repetitions=4)
    at = {(row["strategy"], row["clients"]): row for row in report.rows}
    for count in (10, 100, 190):
        slowest = max(contention.STRATEGIES, key=lambda s: at[(s, count)]["completion_time_s"])
        assert slowest == "exponential"
    for jittered in ("full-jitter", "equal-jitter", "decorrelated"):
        assert 2 * at[(jittered, 190)]["calls"] < at[("none", 190)]["calls"]
    assert at[("none", 190)]["calls"] > 10 * at[("none", 10)]["calls"]  # work grows faster than N
    assert all(finding.holds for finding in report.findings)
    assert set(report.rows[0]) == {"strategy", "clients", "calls", "completion_time_s"}


def test_contention_is_deterministic():
    first = contention.run({"full": "exponential:base=10ms,max=2s,jitter=full"}, (20,), 3, seed=4)
    again = contention.run({"full": "exponential:base=10ms,max=2s,jitter=full"}, (20,), 3, seed=4)
    assert first.rows == again.rows


def test_edge_smira_withstands_a_longer_outage_than_fixed():
    report = edge.run(smira.load(), horizon_s=40, max_outage_s=60, resolution_s=2, curve_points=3)
    rows = {row["strategy"]: row for row in report.rows}
    fixed, smira_edge = rows["fixed:100ms"]["edge_s"], rows["smira"]["edge_s"]
    assert fixed is not None and smira_edge is not None
    assert fixed <= 10
    assert smira_edge >= 30
    for row in report.rows:  # the bisection brackets its edge
        curve = {point["outage_s"]: point["server_recovery_s"] for point in row["curve"]}
        assert curve[row["edge_s"]] is None
        assert curve[row["edge_s"] - 2] is not None
