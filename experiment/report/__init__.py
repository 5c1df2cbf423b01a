"""The run report: a PNG per strategy, a comparison PNG and one self-contained ``report.html``.

``write_report(folder, document, live, simulated=())`` (:mod:`retrystorm.experiment.report.write`)
writes them; :class:`StrategyCurves` are what it draws; :mod:`retrystorm.experiment.report.ranking`
says who wins and why. Importing this package is light (no matplotlib): the
plotting modules load on first use of ``write_report``, so the shared text helpers
(:mod:`retrystorm.experiment.report.text`) serve terminal output too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from retrystorm.experiment.report.curves import StrategyCurves

if TYPE_CHECKING:
    from retrystorm.experiment.report.write import write_report


def __getattr__(name: str) -> Any:
    if name == "write_report":
        from retrystorm.experiment.report.write import write_report  # noqa: PLC0415 - matplotlib only when writing

        return write_report
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["StrategyCurves", "write_report"]
