"""``--live``'s pure part: which cells a live run confirms, and whether live and simulated agree."""

import pytest

from retrystorm.sim.map.confirm import agreement, boundary_pairs, choose_live_cells, spread, with_agreements

R, M, X = "recovers", "metastable", "mixed"


def document(axes, verdicts_by_strategy):
    """A map.json with ``axes`` ((path, values) pairs) and each strategy's verdicts in grid order."""
    cells = []
    for label, verdicts in verdicts_by_strategy.items():
        for index, verdict in enumerate(verdicts):
            recovered = {R: 1, M: 0, X: 1}[verdict]
            runs = 2 if verdict == X else 1
            cells.append({
                "strategy": label, "at": {"i": index}, "verdict": verdict, "runs": runs,
                "server_recovered": recovered, "client_recovered": recovered,
                "server_recovery_s": 4.0 if recovered else None, "client_recovery_s": 8.0 if recovered else None,
                "agreement": None,
            })  # fmt: skip
    return {
        "axes": [{"path": path, "values": values} for path, values in axes],
        "strategies": [{"strategy": label} for label in verdicts_by_strategy],
        "cells": cells,
    }


def test_spread_is_every_index_once_the_middle_first():
    for count in range(12):
        assert sorted(spread(count)) == list(range(count))
    assert spread(7)[:3] == [3, 1, 5]


def test_the_boundary_of_a_row_is_the_last_recovering_cell_and_the_first_that_tips():
    assert boundary_pairs([R, R, M, M], (4, 1)) == [(1, 2)]
    assert boundary_pairs([R, X, M], (3, 1)) == [(0, 1)]  # mixed is on the side that did not recover
    assert boundary_pairs([R, R, R], (3, 1)) == []


def test_two_axes_pair_cells_along_the_first_then_the_second():
    # first axis 3 values (i0), second 2 (i1); index i0 * 2 + i1
    #           i1=0 i1=1
    # i0=0:      R    R
    # i0=1:      R    M
    # i0=2:      M    M
    assert boundary_pairs([R, R, R, M, M, M], (3, 2)) == [(2, 4), (1, 3), (2, 3)]


def test_picks_alternate_sides_along_one_strategy_s_boundary():
    axes = [("for", [1, 2, 3, 4]), ("users", [10, 20, 30])]
    # edge per row (users): 10 -> at 4; 20 -> at 3; 30 -> at 2 (index i0 * 3 + i1)
    grid = [R, R, R, R, R, M, R, M, M, M, M, M]
    picks = choose_live_cells(document(axes, {"s": grid}), 4)
    assert [pick.side for pick in picks] == ["tips", "recovers", "tips", "recovers"]
    assert all(grid[pick.cell] == (R if pick.side == "recovers" else M) for pick in picks)
    assert all(grid[pick.across] != grid[pick.cell] for pick in picks)
    assert len({pick.cell for pick in picks}) == 4
    rows = {pick.cell % 3 for pick in picks}
    assert len(rows) >= 2  # spread along the boundary, not all on one row


def test_picks_take_strategies_in_turn_and_skip_one_without_a_boundary():
    axes = [("for", [1, 2, 3])]
    found = choose_live_cells(document(axes, {"a": [R, R, M], "calm": [R, R, R], "b": [R, M, M]}), 3)
    assert [(pick.strategy, pick.side) for pick in found] == [("a", "tips"), ("b", "tips"), ("a", "recovers")]
    assert [pick.cell for pick in found] == [2, 1, 1]


def test_no_more_picks_than_asked_nor_than_the_boundary_has():
    axes = [("for", [1, 2, 3])]
    assert choose_live_cells(document(axes, {"a": [R, R, M]}), 0) == []
    assert len(choose_live_cells(document(axes, {"a": [R, R, M]}), 10)) == 2


def test_agreement_compares_verdicts_and_takes_live_over_simulated_times():
    sim = {"runs": 1, "server_recovered": 1, "client_recovered": 1, "server_recovery_s": 4.0, "client_recovery_s": 8.0}
    found = agreement(sim, {"server_recovery_s": 6.0, "client_recovery_s": None})
    assert (found["server_live"], found["server_agrees"], found["server_recovery_ratio"]) == (R, True, 1.5)
    assert (found["client_live"], found["client_agrees"], found["client_recovery_ratio"]) == (M, False, None)
    assert found["agrees"] is True


def test_a_metastable_cell_that_recovers_live_disagrees_and_a_mixed_one_is_undecided():
    stuck = {"runs": 1, "server_recovered": 0, "client_recovered": 0, "server_recovery_s": None,
             "client_recovery_s": None}  # fmt: skip
    assert agreement(stuck, {"server_recovery_s": 2.0, "client_recovery_s": 1.0})["agrees"] is False
    assert agreement(stuck, {"server_recovery_s": None, "client_recovery_s": None})["agrees"] is True
    mixed = {**stuck, "runs": 2, "server_recovered": 1, "server_recovery_s": 3.0}
    assert agreement(mixed, {"server_recovery_s": None, "client_recovery_s": None})["server_agrees"] is None
    assert agreement(stuck, {"error": "the target died"})["agrees"] is None


def test_with_agreements_fills_the_slot_of_the_picked_cell_only_and_counts():
    axes = [("for", [1, 2, 3])]
    doc = document(axes, {"a": [R, R, M], "b": [R, M, M]})
    picks = choose_live_cells(doc, 2)
    lives = [{"server_recovery_s": None, "client_recovery_s": None, "folder": "x"},
             {"server_recovery_s": 1.0, "client_recovery_s": 1.0, "folder": "y"}]  # fmt: skip
    found = with_agreements(doc, picks, lives)
    filled = [(cell["strategy"], index % 3) for index, cell in enumerate(found["cells"]) if cell["agreement"]]
    assert filled == [("a", 2), ("b", 1)]
    assert (found["live"]["cells"], found["live"]["agree"], found["live"]["disagree"]) == (2, 1, 1)
    assert doc["cells"][2]["agreement"] is None  # the input is left alone
    with pytest.raises(ValueError, match="zip"):
        with_agreements(doc, picks, lives[:1])
