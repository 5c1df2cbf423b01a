"""Users' names in figures are drawn as written: a label matplotlib would read as mathtext it cannot parse never
fails the drawing (issue 23, item 10), and matplotlib's own tick labels keep their mathtext."""

import io

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

from retrystorm.figures import plain_text

LABEL = r"$\undefinedcmd{x}$"


def labelled_figure() -> Figure:
    """A user's label everywhere a figure of retrystorm puts one: title, axes title, legend, annotation."""
    figure = Figure()
    FigureCanvasAgg(figure)
    axis = figure.subplots()
    axis.plot([1, 10, 100], [1, 10, 100], label=LABEL)
    axis.set_yscale("log")
    axis.set_title(LABEL)
    axis.annotate(LABEL, (10, 10))
    axis.legend()
    figure.suptitle(LABEL)
    return figure


def png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def test_as_matplotlib_draws_it_the_label_fails_the_figure():
    """What the figures of a run met before: the failure comes only when the figure is drawn."""
    with pytest.raises(ValueError, match="Unknown symbol"):
        png(labelled_figure())


def test_plain_text_draws_every_label_as_written():
    figure = plain_text(labelled_figure())
    assert png(figure).startswith(b"\x89PNG")
    shown = [text for text in figure.findobj(Text) if text.get_text() == LABEL]
    assert len(shown) == 4  # suptitle, title, annotation, legend entry
    assert not any(text.get_parse_math() for text in shown)


def test_tick_labels_keep_matplotlibs_own_mathtext():
    figure = plain_text(labelled_figure())
    png(figure)
    (axis,) = figure.axes
    ticks = [tick.label1 for tick in axis.yaxis.get_major_ticks() if tick.label1.get_text()]
    assert ticks and all(tick.get_parse_math() for tick in ticks)
    assert any("10^{" in tick.get_text() for tick in ticks)  # a log axis labels its ticks in mathtext
    assert not axis.yaxis.label.get_parse_math()
