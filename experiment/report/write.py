"""Write a run's report into its folder: a PNG per strategy, ``comparison.png``, ``report.html``."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from retrystorm.experiment.report import ranking
from retrystorm.experiment.report.curves import StrategyCurves
from retrystorm.experiment.report.model_fit import fit_rows, simulated_by_label
from retrystorm.experiment.report.page import Image, render
from retrystorm.experiment.report.plots import comparison_figure, png_bytes, shaded, strategy_figure

logger = logging.getLogger(__name__)

COMPARISON = "comparison.png"
REPORT = "report.html"


def strategy_file_name(index: int, label: str) -> str:
    """``strategy-2-exponential-base-100ms.png`` for the 2nd strategy, whatever its label.

    Characters other than ASCII letters, digits, ``.``, ``_`` and ``-`` become ``-``
    (runs collapsed, ends trimmed, at most 60 kept); the position makes the name unique
    even when two labels map to the same text or differ only in case.
    """
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", label).strip(".-_")[:60].rstrip(".-_")
    return f"strategy-{index}-{slug}.png" if slug else f"strategy-{index}.png"


def write_report(
    folder: Path,
    document: Mapping[str, Any],
    live: Sequence[StrategyCurves],
    simulated: Sequence[StrategyCurves] = (),
    *,
    source: Literal["live", "simulated"] = "live",
    more_images: Sequence[Image] = (),
) -> list[Path]:
    """Writes one PNG per strategy, comparison.png and report.html into folder; returns their paths.

    ``live`` are the run's curves, measured live or, with ``source="simulated"``, a
    simulator's own run (the captions say which). ``simulated`` curves are matched to
    ``live`` ones by label and drawn dashed beside them; the page then also tabulates
    how far the simulation is from the live run. ``more_images`` (already written
    elsewhere) are shown after the plots drawn here.
    """
    folder.mkdir(parents=True, exist_ok=True)
    model = simulated_by_label(simulated)
    unmatched = sorted(set(model) - {curves.label for curves in live})
    if unmatched:
        logger.warning("simulated curves without a live run, not drawn: %s", ", ".join(unmatched))
    written: list[Path] = []
    images: list[Image] = []
    for index, curves in enumerate(live, start=1):
        simulation = model.get(curves.label)
        png = png_bytes(strategy_figure(curves, simulation))
        path = folder / strategy_file_name(index, curves.label)
        path.write_bytes(png)
        written.append(path)
        beside = ", simulated dashed" if simulation is not None else ""
        images.append(Image(f"{curves.label}: {source}{beside}; {shaded([curves])}", png))
    title = str(document.get("experiment", "run"))
    comparison = png_bytes(comparison_figure(live, f"{title}: every strategy"))
    (folder / COMPARISON).write_bytes(comparison)
    written.append(folder / COMPARISON)
    overlaid = f"Every strategy overlaid: goodput, attempts/s, in flight, censored p99 latency; {shaded(live)}"
    images.insert(0, Image(overlaid, comparison))
    fits = {curves.label: fit_rows(curves, model[curves.label]) for curves in live if curves.label in model}
    page = render(document, [*images, *more_images], fits, rule=ranking.__doc__ or "")
    (folder / REPORT).write_text(page, encoding="utf-8")
    written.append(folder / REPORT)
    return written
