"""Matplotlib figures that show users' names: every text drawn as written, never as mathtext.

Strategy labels, scenario names and map names come from users' files. Matplotlib reads text between two ``$`` as
mathtext, and text it cannot parse (``$\\undefinedcmd{x}$``) fails only when the figure is drawn, after the run.
Every figure retrystorm saves goes through :func:`plain_text` first.
"""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.text import Text


def plain_text(figure: Figure) -> Figure:
    """Every text of ``figure`` drawn as written, without mathtext (see the module docstring); ``figure`` itself.

    Titles, legends, annotations and axis labels become plain text. Tick labels and an axis's offset text keep
    mathtext: matplotlib writes its own there (a log axis's ``10^2``), never a user's name.
    """
    for text in figure.findobj(Text):
        text.set_parse_math(False)
    for axes in figure.axes:
        for axis in (axes.xaxis, axes.yaxis):
            for text in axis.findobj(Text):
                text.set_parse_math(text is not axis.label)
    return figure
