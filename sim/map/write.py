"""Write a map: ``map.json``, ``map.csv``, ``map.png`` (the phase diagram) and ``report.html``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from retrystorm.sim.map.document import csv_rows
from retrystorm.sim.report import csv_text

FILES = ("map.json", "map.csv", "map.png", "report.html")


def write_map(folder: Path, document: dict[str, Any]) -> list[Path]:
    """The map's files in ``folder`` (created if need be); their paths."""
    from retrystorm.experiment.report.map_page import render  # noqa: PLC0415 - matplotlib and jinja2 only when writing
    from retrystorm.experiment.report.page import Image  # noqa: PLC0415
    from retrystorm.experiment.report.phase import phase_figure  # noqa: PLC0415
    from retrystorm.experiment.report.plots import png_bytes  # noqa: PLC0415

    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / name for name in FILES]
    paths[0].write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    paths[1].write_text(csv_text(csv_rows(document)), encoding="utf-8")
    png = png_bytes(phase_figure(document))
    paths[2].write_bytes(png)
    caption = "Each strategy's phase diagram: cells coloured by time to recover, metastable cells dark, the edge black"
    paths[3].write_text(render(document, Image(caption, png)), encoding="utf-8")
    return paths
