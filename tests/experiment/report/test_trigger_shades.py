"""Every trigger shaded in its kind's colour, named in a legend, in the run report's plots and page."""

import dataclasses

from matplotlib.colors import to_rgba

from retrystorm.experiment.report import write_report
from retrystorm.experiment.report.panels import TRIGGER_COLOURS
from retrystorm.experiment.report.plots import comparison_figure, strategy_figure
from tests.experiment.report.conftest import curves, document, result, words

KINDS = (("slow", 40.0, 50.0), ("spike", 60.0, 65.0), ("errors", 80.0, 85.0))


def with_triggers(label="smira"):
    return dataclasses.replace(curves(label, outages=((20.0, 30.0),)), triggers=KINDS)


def span_colours(axis):
    """The colours of the shaded spans, as RGB."""
    return {tuple(round(c, 3) for c in patch.get_facecolor()[:3]) for patch in axis.patches}


def rgb(name):
    return tuple(round(c, 3) for c in to_rgba(name)[:3])


def test_each_kind_has_its_own_shade_and_legend_entry():
    figure = strategy_figure(with_triggers())
    top = figure.axes[0]
    assert span_colours(top) == {rgb(TRIGGER_COLOURS[kind]) for kind in ("pause", "slow", "spike", "errors")}
    labels = [text.get_text() for text in top.get_legend().get_texts()]
    assert labels == ["live", "pause", "slow (capacity cut)", "spike (load)", "error burst"]
    assert figure.axes[-1].get_xlabel().endswith("triggers shaded by kind")


def test_pauses_alone_keep_their_grey_and_no_legend():
    figure = strategy_figure(curves("smira"))
    assert span_colours(figure.axes[0]) == {rgb("grey")}
    assert figure.axes[0].get_legend() is None
    assert figure.axes[-1].get_xlabel().endswith("outages shaded")


def test_the_comparison_shades_every_strategys_triggers():
    figure = comparison_figure([with_triggers("a"), with_triggers("b")], "t")
    labels = [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
    assert labels[:2] == ["a", "b"]
    assert "spike (load)" in labels


def test_the_page_says_the_shades_are_triggers(tmp_path):
    live = [with_triggers()]
    write_report(tmp_path, document(result(live[0])), live)
    text = words((tmp_path / "report.html").read_text(encoding="utf-8"))
    assert "Every strategy overlaid: goodput, attempts/s, in flight, censored p99 latency; triggers shaded by kind" in (
        text
    )
    assert "smira: live; triggers shaded by kind" in text
