"""The map's phase diagram and page, drawn from a map.json alone."""

from matplotlib.colors import to_rgba

from retrystorm.experiment.report.map_page import grids, summary
from retrystorm.experiment.report.phase import METASTABLE, edges_of, phase_figure


def cell(strategy, at, verdict, time_s=None, *, recovered=0, runs=1):
    return {"strategy": strategy, "at": at, "verdict": verdict, "runs": runs, "server_recovered": recovered,
            "client_recovered": recovered, "server_recovery_s": time_s, "client_recovery_s": time_s,
            "peak_in_flight": 10, "amplification": 1.0, "agreement": None, "seeds": []}  # fmt: skip


def document(two_axes=True):
    """fixed tips over from a 20 s freeze at 100 users and from 10 s at 200; EB never."""
    fors, users = [10.0, 20.0, 30.0], [100, 200]
    cells = []
    for strategy in ("fixed", "EB"):
        for f in fors:
            for u in users if two_axes else [None]:
                stuck = strategy == "fixed" and (f >= 20 or (u == 200))
                at = {"faults[0].for": f, **({"load.users": u} if two_axes else {})}
                verdict, time_s = ("metastable", None) if stuck else ("recovers", f / 10)
                cells.append(cell(strategy, at, verdict, time_s, recovered=0 if stuck else 1))
    axes = [{"path": "faults[0].for", "values": fors, "unit": "s", "scale": "linear"}]
    if two_axes:
        axes.append({"path": "load.users", "values": users, "unit": "", "scale": "log"})
    edges = [{"load.users": u, "edge": 20.0 if u == 100 else 10.0} for u in users] if two_axes else [{"edge": 20.0}]
    return {
        "map": "t", "scenario": "t.yaml", "description": "", "axes": axes, "seeds": [1], "horizon_s": 60.0,
        "rule": "r", "choices": [], "cells": cells,
        "marks": [{"label": "published", "at": {"faults[0].for": 20.0, **({"load.users": 100} if two_axes else {})}}],
        "strategies": [
            {"strategy": "fixed", "recovers": 1, "mixed": 0, "metastable": 5, "edge": edges},
            {"strategy": "EB", "recovers": 6, "mixed": 0, "metastable": 0,
             "edge": [{**e, "edge": None} for e in edges]},
        ],
    }  # fmt: skip


def test_cell_edges_are_midpoints_and_geometric_on_a_log_axis():
    assert edges_of([10.0, 20.0, 30.0], "linear") == [5.0, 15.0, 25.0, 35.0]
    low, middle, high = edges_of([10.0, 1000.0], "log")
    assert abs(middle - 100.0) < 1e-9 and abs(low - 1.0) < 1e-9 and abs(high - 10_000.0) < 1e-6


def test_each_strategy_has_a_panel_with_metastable_cells_dark_and_the_edge_drawn():
    figure = phase_figure(document())
    fixed, eb = figure.axes[0], figure.axes[1]
    assert [fixed.get_title(), eb.get_title()] == ["fixed", "EB"]
    dark = to_rgba(METASTABLE)
    assert sum(patch.get_facecolor() == dark for patch in fixed.patches) == 5
    assert sum(patch.get_facecolor() == dark for patch in eb.patches) == 0
    assert len([line for line in fixed.lines if line.get_linewidth() > 2]) == 2  # the edge: two segments
    assert [line for line in eb.lines if line.get_linewidth() > 2] == []
    assert fixed.get_yscale() == "log"
    assert [text.get_text() for text in fixed.texts] == ["published"]


def test_a_one_axis_map_is_one_row():
    figure = phase_figure(document(two_axes=False))
    assert len(figure.axes[0].patches) == 3
    assert list(figure.axes[0].get_yticks()) == []


def test_the_page_tables_and_summary():
    tables = grids(document())
    assert tables[0].columns == ("10s", "20s", "30s")
    assert [row.value for row in tables[0].rows] == ["200", "100"]  # highest first
    assert [cell.text for cell in tables[0].rows[1].cells] == ["1s", "never", "never"]
    assert summary(document())[0] == (
        "fixed: 1 cells recover, 0 mixed, 5 metastable; edge along faults[0].for: 100: 20s; 200: 10s"
    )


def test_cells_confirmed_live_carry_a_ring_coloured_by_their_agreement():
    from retrystorm.experiment.report.map_page import live_lines
    from retrystorm.experiment.report.phase import LIVE_COLOURS

    found = document()
    found["cells"][1]["agreement"] = {"agrees": False}  # fixed at 10 s, 200 users
    found["cells"][0]["agreement"] = {"agrees": True}  # fixed at 10 s, 100 users
    fixed, eb = phase_figure(found).axes[:2]
    rings = [(line.get_xdata()[0], line.get_ydata()[0], line.get_color()) for line in fixed.lines
             if line.get_marker() == "o"]  # fmt: skip
    assert sorted(rings) == sorted([(10.0, 100.0, LIVE_COLOURS[True]), (10.0, 200.0, LIVE_COLOURS[False])])
    assert [line for line in eb.lines if line.get_marker() == "o"] == []
    assert live_lines(found) == []  # no live summary: no section on the page
