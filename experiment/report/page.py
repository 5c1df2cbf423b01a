"""``report.html``: one self-contained page (inline CSS, images as data URIs, no scripts).

The page is the template ``templates/report.html.j2``, rendered by jinja2 with
autoescaping on: every string from the results document (labels, names, descriptions,
metadata; labels come from user YAML) reaches the template as plain text and is
escaped there. The only markup made here is the ranking rule's, by
:func:`retrystorm.experiment.report.markup.to_html`, which escapes the text before adding its tags.
This module turns the document into what the template shows: tables of strings,
definition-list entries, images.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
from collections.abc import Mapping, Sequence
from typing import Any

import jinja2

from retrystorm.experiment.analysis.steady_state import SteadyRule
from retrystorm.experiment.analysis.validity import ValidityRule
from retrystorm.experiment.report.markup import to_html
from retrystorm.experiment.report.metadata import Entry, row_entries, run_entries
from retrystorm.experiment.report.model_fit import FitRow
from retrystorm.experiment.report.ranking import Headline, headline
from retrystorm.experiment.report.text import DASH, count, per_outage, percent, recovery_text, seconds, times
from retrystorm.experiment.report.why import headline_lines, steady_phrase, validity_phrase

TEMPLATE = "report.html.j2"


@dataclasses.dataclass(frozen=True, slots=True)
class Image:
    """A PNG to embed, with its caption."""

    caption: str
    png: bytes

    @property
    def data_uri(self) -> str:
        """The PNG as a ``data:`` URI, so the page needs no other file."""
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")


@dataclasses.dataclass(frozen=True, slots=True)
class Table:
    """A table of text: a header and rows; columns from ``numeric_from`` on are right-aligned."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    numeric_from: int = 1


@dataclasses.dataclass(frozen=True, slots=True)
class VerdictRow:
    """One assertion: its check, measured value and bound as the tables show them, and whether it held."""

    check: str
    measured: str
    bound: str
    passed: bool
    #: A check that the strategy never recovers, held: the failure the scenario expected, not a success.
    expected_failure: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class Titled:
    """A strategy's label above what the page shows for it (verdicts, a fit, its other figures)."""

    label: str
    verdicts: tuple[VerdictRow, ...] = ()
    tables: tuple[Table, ...] = ()
    entries: tuple[Entry, ...] = ()


def measured_text(check: str, value: object) -> str:
    """A verdict's measured value or bound as the tables show it (``never`` for a recovery not seen)."""
    if isinstance(value, str):
        return value
    values = value if isinstance(value, list) else [value]
    numbers = [float(item) if isinstance(item, int | float) else None for item in values]
    if check.endswith("_within"):
        return recovery_text(numbers, has_outage=True)
    show = {"min_success_ratio": percent, "max_amplification": times, "max_peak_in_flight": count}.get(check)
    return ", ".join((show or (lambda v: DASH if v is None else f"{v:.4g}"))(n) for n in numbers)


def _verdicts(document: Mapping[str, Any]) -> list[Titled]:
    found = []
    for row in document.get("results", []):
        rows = tuple(
            VerdictRow(
                check=str(verdict["check"]),
                measured=measured_text(str(verdict["check"]), verdict["measured"]),
                bound=measured_text(str(verdict["check"]), verdict["bound"]),
                passed=bool(verdict["passed"]),
                expected_failure=bool(verdict["passed"]) and verdict["bound"] == "never",
            )
            for verdict in row.get("assertions") or []
        )
        found.append(Titled(str(row["strategy"]), verdicts=rows))
    return found


FIGURE_COLUMNS = (
    "strategy", "attempts", "requests", "succeeded", "gave up", "unfinished", "success", "amplification",
    "p50", "p95", "p99", "peak in flight", "server recovery", "client recovery", "server judged from",
)  # fmt: skip
#: The figures table is shown as two, each fitting the page: requests, then latency and recovery.
REQUEST_COLUMNS = 8
#: The keys of a results row that the figures, verdicts, why and validity tables show; the rest go under "every figure".
FIGURE_KEYS = (
    "strategy", "attempts", "requests", "succeeded", "gave_up", "unfinished", "success_ratio", "amplification",
    "latency_p50", "latency_p95", "latency_p99", "peak_in_flight", "server_recovery_s", "client_recovery_s",
    "assertions", "after_resume", "validity", "server_recovery_signals", "steady_state",
)  # fmt: skip


def _figure_cells(row: Mapping[str, Any]) -> tuple[str, ...]:
    has_outage = bool(row.get("outages"))
    return (
        str(row["strategy"]),
        count(row.get("attempts")),
        count(row.get("requests")),
        count(row.get("succeeded")),
        count(row.get("gave_up")),
        count(row.get("unfinished")),
        percent(row.get("success_ratio")),
        times(row.get("amplification")),
        seconds(row.get("latency_p50"), none=DASH),
        seconds(row.get("latency_p95"), none=DASH),
        seconds(row.get("latency_p99"), none=DASH),
        count(row.get("peak_in_flight")),
        recovery_text(per_outage(row, "server_recovery_s"), has_outage, none="no outage"),
        recovery_text(per_outage(row, "client_recovery_s"), has_outage, none="no outage"),
        str(row.get("server_recovery_signals") or DASH),
    )


def figures_table(rows: Sequence[Mapping[str, Any]]) -> Table:
    """One row per strategy run: counts, success, amplification, latencies, peak, recoveries."""
    return Table(FIGURE_COLUMNS, tuple(_figure_cells(row) for row in rows))


def figures_tables(rows: Sequence[Mapping[str, Any]]) -> tuple[Table, Table]:
    """:func:`figures_table` as two tables that fit the page: the requests, then latency and recovery (each
    starting with the strategy)."""
    whole = figures_table(rows)
    first = Table(whole.header[:REQUEST_COLUMNS], tuple(row[:REQUEST_COLUMNS] for row in whole.rows))
    rest = (0, *range(REQUEST_COLUMNS, len(whole.header)))
    second = Table(tuple(whole.header[i] for i in rest), tuple(tuple(row[i] for i in rest) for row in whole.rows))
    return first, second


#: The curves ``simulated.compared`` holds per strategy, as the page names them, and how to show a value.
CURVES = {
    "goodput": ("goodput (req/s)", lambda v: f"{v:,.1f}"),
    "attempts": ("attempts/s", lambda v: f"{v:,.1f}"),
    "in_flight": ("in flight", lambda v: f"{v:,.1f}"),
    "delay_s": ("modelled delay", seconds),
}


def curves_table(compared: object) -> Table | None:
    """Each curve's mean absolute difference per second, simulated against live, beside the live mean."""
    if not isinstance(compared, Mapping) or not isinstance(compared.get("curves"), Mapping):
        return None
    rows = []
    for name, difference in compared["curves"].items():
        label, show = CURVES.get(name, (name.replace("_", " "), lambda v: f"{v:.4g}"))
        diff, mean = difference.get("mean_abs_diff"), difference.get("live_mean")
        rows.append(
            (
                label,
                DASH if diff is None else show(diff),
                DASH if mean is None else show(mean),
                count(difference.get("seconds")),
            )
        )
    return Table(("curve", "mean |simulated − live| per second", "live mean", "seconds compared"), tuple(rows))


def _fits(fits: Mapping[str, Sequence[FitRow]], simulated: Mapping[str, Any]) -> list[Titled]:
    compared = simulated.get("compared") or {}
    found = []
    for label, rows in fits.items():
        table = Table(
            ("figure", "live", "simulated", "simulated off by"),
            tuple((r.figure, r.live, r.simulated, r.off) for r in rows),
        )
        curves = curves_table(compared.get(label))
        found.append(Titled(label, tables=(table,) if curves is None else (table, curves)))
    return found


AFTERMATH_COLUMNS = (
    "strategy", "outage", "window after the resume", "steady attempts/s", "attempts/s in the window", "×",
    "in flight, first reading", "peak in flight", "in flight, last reading", "goodput, last 10 s of the run",
    "steady goodput",
)  # fmt: skip


def _rate(value: object) -> str:
    return f"{value:,.1f}" if isinstance(value, int | float) else DASH


def _window(row: Mapping[str, Any], index: int, length_s: object) -> str:
    """``2s, until the server recovered``, ``40s, until the run ended`` (or ``until the next outage``): the window
    the figures beside it cover, ``index`` counting the outages from 0."""
    if not isinstance(length_s, int | float):
        return DASH
    recovered = per_outage(row, "server_recovery_s")
    if index < len(recovered) and recovered[index] is not None:
        return f"{seconds(length_s)}, until the server recovered"
    last = index + 1 >= len(row.get("outages") or [])
    return f"{seconds(length_s)}, until {'the run ended' if last else 'the next outage'}"


def aftermath_table(rows: Sequence[Mapping[str, Any]]) -> Table | None:
    """What each strategy's users offered after each resume and what the server held (``after_resume``)."""
    cells = []
    for row in rows:
        found = row.get("after_resume") or []
        for index, figures in enumerate(found, start=1):
            cells.append(
                (
                    str(row["strategy"]),
                    f"{index} of {len(found)}",
                    _window(row, index - 1, figures.get("window_s")),
                    _rate(figures.get("steady_attempts_per_s")),
                    _rate(figures.get("attempts_per_s")),
                    times(figures.get("attempts_ratio")),
                    count(figures.get("in_flight_at_resume")),
                    count(figures.get("peak_in_flight")),
                    count(figures.get("in_flight_end")),
                    _rate(figures.get("goodput_end_per_s")),
                    _rate(figures.get("steady_goodput_per_s")),
                )
            )
    return Table(AFTERMATH_COLUMNS, tuple(cells), numeric_from=1) if cells else None


VALIDITY_COLUMNS = (
    "strategy", "valid", "steady state (attempts answered 1xx-3xx)", "saturated",
    "busiest process (peak, mean share of a core)", "requests started/s", "demanded/s", "worst 5-s window",
    "users late (mean, worst second)",
)  # fmt: skip


def _late(validity: Mapping[str, Any]) -> str:
    """``3 ms, 12 ms``: how late the users started against their plan; the event loop's lag when they were not
    read; a dash when neither was."""
    for key in ("schedule_lag", "loop_lag"):
        mean, worst = validity.get(f"{key}_mean_s"), validity.get(f"{key}_worst_s")
        if isinstance(mean, int | float) and isinstance(worst, int | float):
            loop = " (event loop)" if key == "loop_lag" else ""
            return f"{mean * 1000:,.0f} ms, {worst * 1000:,.0f} ms{loop}"
    return DASH


def validity_table(rows: Sequence[Mapping[str, Any]]) -> Table | None:
    """Each live run's saturation verdict with its figures (``validity``); ``None`` without any (simulated)."""
    cells = []
    for row in rows:
        validity = row.get("validity")
        if not isinstance(validity, Mapping):
            continue
        peaks, means = validity.get("cpu_peak") or {}, validity.get("cpu_mean") or {}
        busiest = max(peaks, key=peaks.__getitem__, default=None)
        cpu = f"{busiest}: {peaks[busiest]:.0%}, {means.get(busiest, 0.0):.0%}" if busiest else DASH
        ratio = validity.get("worst_started_to_demanded")
        found = row.get("steady_state")
        steady: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        working = DASH if not steady else ("working" if steady.get("valid") else "NOT working")
        share = steady.get("ok_share")
        valid = validity.get("valid") is not False and steady.get("valid") is not False
        cells.append(
            (
                str(row["strategy"]),
                "yes" if valid else "NO",
                f"{working}, {percent(share)}" if isinstance(share, int | float) else working,
                f"{count(validity.get('saturated_s'))} of {count(validity.get('seconds'))} s",
                cpu,
                _rate(validity.get("started_per_s")),
                _rate(validity.get("demanded_per_s")),
                percent(ratio) if isinstance(ratio, int | float) else DASH,
                _late(validity),
            )
        )
    return Table(VALIDITY_COLUMNS, tuple(cells)) if cells else None


def _details(document: Mapping[str, Any]) -> list[Titled]:
    rows = document.get("results", [])
    return [Titled(str(row["strategy"]), entries=row_entries(row, FIGURE_KEYS)) for row in rows]


def _tally_css(top: Headline) -> str:
    return "pass" if top.assertions.startswith("All") else "fail"


@functools.cache
def environment() -> jinja2.Environment:
    """The template environment: the package's templates, autoescaping on, undefined names an error."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("retrystorm.experiment.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render(
    document: Mapping[str, Any], images: Sequence[Image], fits: Mapping[str, Sequence[FitRow]], rule: str
) -> str:
    """The whole page: title, headline (who wins and why, each strategy in a line), why (the mechanism, its
    figures and the comparison plot), validity, verdicts, figures, simulation fit, run metadata, plots,
    details, rule. ``images[0]`` is the comparison of every strategy, shown under "Why".

    ``rule`` is the ranking rule in the report's markup (:mod:`retrystorm.experiment.report.markup`).
    """
    top = headline(document)
    *why, winner = headline_lines(document)
    invalid = [
        str(row.get("strategy")) for row in document.get("results", []) if validity_phrase(row) or steady_phrase(row)
    ]
    simulated = document.get("simulated")
    simulated = simulated if isinstance(simulated, Mapping) else {}
    description = document.get("description")
    findings = [(bool(f.get("holds")), str(f.get("text"))) for f in document.get("findings") or []]
    template = environment().get_template(TEMPLATE)
    return template.render(
        title=str(document.get("experiment", "run")),
        description=str(description) if description else "",
        top=top,
        winner=winner,
        why=why,
        invalid=invalid,
        aftermath=aftermath_table(document.get("results", [])),
        validity=validity_table(document.get("results", [])),
        validity_rule=f"{SteadyRule().describe()} {ValidityRule().describe()}",
        tally_css=_tally_css(top),
        verdicts=_verdicts(document),
        figures=figures_tables(document.get("results", [])),
        simulated_figures=figures_table(simulated["results"]) if simulated.get("results") else None,
        fits=_fits(fits, simulated),
        run=run_entries(document),
        choices=[str(item) for key in ("notes", "choices") for item in document.get(key) or []],
        findings=findings,
        images=images,
        details=_details(document),
        rule=to_html(rule),
    )
