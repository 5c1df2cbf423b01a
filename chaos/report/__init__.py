"""The run report: a PNG per strategy, a comparison PNG and one self-contained ``report.html``.

Importing this package is light (no matplotlib): the plotting modules load when
:func:`write_report` runs, so the shared text helpers can serve terminal output too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from chaos.report.curves import StrategyCurves


def write_report(
    folder: Path,
    document: Mapping[str, Any],
    live: Sequence[StrategyCurves],
    simulated: Sequence[StrategyCurves] = (),
) -> list[Path]:
    """Writes one PNG per strategy, comparison.png and report.html into folder; returns their paths.

    ``document`` is :func:`chaos.analysis.results_document`'s output; ``live`` the
    measured curves, one per strategy; ``simulated`` (optional) the simulator's curves
    of the same strategies, matched by label and drawn dashed beside the live ones.
    See :mod:`chaos.report.write` and :mod:`chaos.report.ranking` (who wins, and why).
    """
    from chaos.report.write import write_report as write  # noqa: PLC0415 - matplotlib only when writing

    return write(folder, document, live, simulated)


__all__ = ["StrategyCurves", "write_report"]
