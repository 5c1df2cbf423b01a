"""Ties and margins: no winner inside the run-to-run noise, a winner beyond it; the headline says which."""

from __future__ import annotations

import pytest

from retrystorm.experiment.report.ranking import decide, headline
from retrystorm.experiment.report.why import winner_line

from .conftest import curves, document, result


def row(label, **figures):
    """A results row with only the figures the ranking reads."""
    base = {
        "strategy": label, "outages": [[20.0, 35.0]], "server_recovery_s": 1.0, "client_recovery_s": 3.0,
        "success_ratio": 0.99, "amplification": 1.05, "peak_in_flight": 100, "latency_p99": 1.0,
    }  # fmt: skip
    return {**base, **figures}


def test_two_identical_strategies_tie():
    one, two = result(curves("one")), result(curves("two"))
    assert headline(document(one, two)).title == "No clear winner: one, two tie"
    assert winner_line(document(one, two)).startswith("No clear winner: one, two tie. They tie on every ranking key.")


@pytest.mark.parametrize(
    ("figures", "reason"),
    [
        (({"server_recovery_s": 0.978}, {"server_recovery_s": 0.988}), "server recovery time (0.978s for a against"),
        (({"success_ratio": 0.999}, {"success_ratio": 0.998}), "success ratio (99.9 % for a against 99.8 % for b)"),
        (({"amplification": 1.02}, {"amplification": 1.05}), "amplification (1.02× for a against 1.05× for b)"),
        (({"peak_in_flight": 81}, {"peak_in_flight": 423}), "peak in flight (81 for a against 423 for b)"),
        (({"client_recovery_s": 14.0}, {"client_recovery_s": 17.0}), "user recovery time (14s for a against 17s"),
    ],
)
def test_differences_within_the_margin_are_a_tie_said_in_the_headline(figures, reason):
    doc = {"results": [row("a", **figures[0]), row("b", **figures[1])]}
    line = winner_line(doc)
    assert line.startswith("No clear winner: a, b tie. Their first difference, ")
    assert reason in line and "is within the run-to-run margin of" in line
    assert decide(doc).winner is None


@pytest.mark.parametrize(
    ("figures", "key"),
    [
        (({"server_recovery_s": 9.0}, {"server_recovery_s": 1.0}), "server recovery time"),
        (({"success_ratio": 0.95}, {"success_ratio": 0.99}), "success ratio"),
        (({"server_recovery_s": None}, {}), "server recoveries"),
        (({"peak_in_flight": 5900}, {"peak_in_flight": 420}), "peak in flight"),
    ],
)
def test_differences_beyond_the_margin_name_a_winner(figures, key):
    doc = {"results": [row("a", **figures[0]), row("b", **figures[1])]}
    decision = decide(doc)
    assert decision.winner is not None and decision.winner.label == "b"
    assert decision.comparison.key is not None and decision.comparison.key.name == key


def test_a_tie_on_one_key_within_its_margin_passes_to_the_next():
    # b's users are back 1 s later (within the margin) but a sends 30 % more attempts: b wins on amplification
    doc = {"results": [row("a", client_recovery_s=3.0, amplification=1.3), row("b", client_recovery_s=4.0)]}
    decision = decide(doc)
    assert decision.winner is not None and decision.winner.label == "b"
    assert decision.comparison.key is not None and decision.comparison.key.name == "amplification"


def test_a_spread_over_repeats_wider_than_the_margin_makes_a_tie():
    runs = [row("a", server_recovery_s=s, repeat=i) for i, s in enumerate((3.0, 9.0, 5.0), 1)]
    runs += [row("b", server_recovery_s=s, repeat=i) for i, s in enumerate((11.0, 12.0, 10.0), 1)]
    medians = [row("a", server_recovery_s=5.0), row("b", server_recovery_s=11.0)]
    single = decide({"results": medians})
    assert single.winner is not None and single.winner.label == "a"  # 6 s apart: beyond 2 s or 25 %
    repeated = decide({"results": medians, "repeats": {"count": 3, "runs": runs}})
    assert repeated.winner is None and repeated.comparison.margin == pytest.approx(6.0)  # a's own spread, 3 to 9 s


def test_three_strategies_a_winner_must_beat_each_of_the_others():
    doc = {"results": [row("a", server_recovery_s=1.0), row("b", server_recovery_s=1.2), row("c", server_recovery_s=9)]}
    decision = decide(doc)
    assert decision.winner is None and decision.tied == ["a", "b"]
