"""``retrystorm strategies plot``: each strategy stops at its own attempt cap; the legend covers neither panel."""

from __future__ import annotations

from retrystorm.loadgen.strategies import parse_strategy
from retrystorm.loadgen.strategy_plot import strategies_figure


def test_a_preset_stops_at_its_attempt_cap_and_the_legend_covers_no_panel():
    specs = ["exponential:base=100ms,factor=2,max=20s,jitter=full", "aws-standard", "envoy"]
    figure = strategies_figure([parse_strategy(spec) for spec in specs], retries=12, draws=50, think_time_s=1, seed=1)
    for axis in figure.axes:
        lines = {line.get_label(): line for line in axis.get_lines()}
        retries = {label.split(":")[0]: int(max(line.get_xdata(), default=0)) for label, line in lines.items()}
        assert retries == {"exponential": 12, "aws-standard": 2, "envoy": 1}  # 3 and 2 attempts: 2 and 1 retries
        capped = [label for label in lines if label.endswith(" (at most 3 attempts)")]
        assert [label.split(":")[0] for label in capped] == ["aws-standard"]
        assert axis.get_legend() is None
    figure.draw_without_rendering()
    (legend,) = figure.legends
    box = legend.get_window_extent()
    assert not any(box.overlaps(axis.get_window_extent()) for axis in figure.axes)
