"""``report.html``: one self-contained page (inline CSS, images as data URIs, no scripts).

Every string that comes from the results document (labels, names, descriptions,
metadata) is HTML-escaped: labels come from user YAML.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from experiment.report.model_fit import FitRow
from experiment.report.ranking import headline
from experiment.report.text import DASH, count, per_outage, percent, recovery_text, seconds, times

CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1150px;padding:0 1em;color:#222}
h1{margin-bottom:.2em} h2{margin-top:1.6em;border-bottom:1px solid #ddd}
.headline{background:#f4f7fb;border-left:6px solid #2a6fdb;padding:.8em 1.2em;margin:1em 0}
.headline h2{border:0;margin:.1em 0 .3em} .muted{color:#666}
table{border-collapse:collapse;margin:.6em 0 1.2em} th,td{padding:.25em .7em;border-bottom:1px solid #e3e3e3}
th{text-align:left;background:#fafafa} td.num{text-align:right;font-variant-numeric:tabular-nums}
.pass{color:#126b2b;font-weight:600} .fail{color:#b3141b;font-weight:700} tr.failed{background:#fdecec}
.wide{overflow-x:auto} .wide table{font-size:13px}
img{max-width:100%;border:1px solid #eee} figure{margin:1em 0} code{font-size:90%}
"""


@dataclasses.dataclass(frozen=True, slots=True)
class Image:
    """A PNG to embed, with its caption."""

    caption: str
    png: bytes


def _row(cells: Sequence[str], *, header: bool = False, numeric_from: int = 1, css: str = "") -> str:
    tag = "th" if header else "td"
    out = []
    for index, cell in enumerate(cells):
        cls = ' class="num"' if not header and index >= numeric_from else ""
        out.append(f"<{tag}{cls}>{cell}</{tag}>")
    attribute = f' class="{css}"' if css else ""
    return f"<tr{attribute}>{''.join(out)}</tr>"


def _table(header: Sequence[str], rows: Sequence[str]) -> str:
    return f"<table>{_row([escape(h) for h in header], header=True)}{''.join(rows)}</table>"


def _headline(document: Mapping[str, Any]) -> str:
    top = headline(document)
    lines = "".join(f"<li><strong>{escape(label)}</strong>: {escape(text)}</li>" for label, text in top.lines)
    tally = ""
    if top.assertions:
        css = "pass" if top.assertions.startswith("All") else "fail"
        tally = f'<p class="{css}">{escape(top.assertions)}</p>'
    reason = f"<p>{escape(top.reason)}</p>" if top.reason else ""
    rule = '<p class="muted">Ranking rule: see "How the winner is chosen" below.</p>'
    return f'<section class="headline"><h2>{escape(top.title)}</h2>{reason}<ul>{lines}</ul>{tally}{rule}</section>'


def measured_text(check: str, value: object) -> str:
    """A verdict's measured value or bound as the tables show it."""
    if isinstance(value, str):
        return value
    values = value if isinstance(value, list) else [value]
    numbers = [float(item) if isinstance(item, int | float) else None for item in values]
    if check.endswith("_within"):
        return recovery_text(numbers, has_outage=True)
    show = {"min_success_ratio": percent, "max_amplification": times, "max_peak_in_flight": count}.get(check)
    return ", ".join((show or (lambda v: DASH if v is None else f"{v:.4g}"))(n) for n in numbers)


def _verdicts(document: Mapping[str, Any]) -> str:
    parts = []
    for row in document.get("results", []):
        verdicts = row.get("assertions") or []
        label = escape(str(row["strategy"]))
        if not verdicts:
            parts.append(f"<h3>{label}</h3><p class='muted'>No assertions for this strategy.</p>")
            continue
        rows = []
        for verdict in verdicts:
            check, passed = str(verdict["check"]), bool(verdict["passed"])
            result = '<span class="pass">pass</span>' if passed else '<span class="fail">FAIL</span>'
            cells = [
                escape(check),
                escape(measured_text(check, verdict["measured"])),
                escape(measured_text(check, verdict["bound"])),
                result,
            ]
            rows.append(_row(cells, css="" if passed else "failed"))
        parts.append(f"<h3>{label}</h3>" + _table(["assertion", "measured", "bound", "result"], rows))
    return "<h2>Verdicts</h2>" + "".join(parts)


FIGURE_COLUMNS = (
    "strategy", "attempts", "requests", "succeeded", "gave up", "success", "amplification",
    "p50", "p99", "peak in flight", "server recovery", "client recovery",
)  # fmt: skip


def _figures(document: Mapping[str, Any]) -> str:
    rows = []
    for row in document.get("results", []):
        has_outage = bool(row.get("outages"))
        cells = [
            str(row["strategy"]),
            count(row.get("attempts")),
            count(row.get("requests")),
            count(row.get("succeeded")),
            count(row.get("gave_up")),
            percent(row.get("success_ratio")),
            times(row.get("amplification")),
            seconds(row.get("latency_p50"), none=DASH),
            seconds(row.get("latency_p99"), none=DASH),
            count(row.get("peak_in_flight")),
            recovery_text(per_outage(row, "server_recovery_s"), has_outage, none="no outage"),
            recovery_text(per_outage(row, "client_recovery_s"), has_outage, none="no outage"),
        ]
        rows.append(_row([escape(cell) for cell in cells]))
    note = (
        '<p class="muted">Recovery times are seconds after each resume, one per outage; "never": not seen '
        "before the data ended or the next outage began. Latencies are of successful logical requests.</p>"
    )
    return f'<h2>Figures</h2><div class="wide">{_table(FIGURE_COLUMNS, rows)}</div>{note}'


def _model_fit(fits: Mapping[str, Sequence[FitRow]]) -> str:
    if not fits:
        return ""
    parts = ["<h2>Simulation beside the live run</h2>"]
    for label, rows in fits.items():
        body = [_row([escape(r.figure), escape(r.live), escape(r.simulated), escape(r.off)]) for r in rows]
        parts.append(f"<h3>{escape(label)}</h3>" + _table(["figure", "live", "simulated", "simulated off by"], body))
    return "".join(parts)


def _plain(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _findings(findings: Sequence[Mapping[str, Any]]) -> str:
    items = []
    for finding in findings:
        mark = '<span class="pass">holds</span>' if finding.get("holds") else '<span class="fail">FAILS</span>'
        items.append(f"<li>{mark} {escape(str(finding.get('text')))}</li>")
    return "<ul>" + "".join(items) + "</ul>"


def _key_values(pairs: Sequence[tuple[object, object]]) -> str:
    rows = [_row([escape(str(key)), escape(_plain(value))], numeric_from=2) for key, value in pairs]
    return _table(["key", "value"], rows)


def _metadata(document: Mapping[str, Any]) -> str:
    """Notes, findings and every other top-level entry of the document (the run's metadata)."""
    skip = {"experiment", "results", "description", "choices", "notes", "findings"}
    parts = []
    for key in ("notes", "choices"):
        items = document.get(key) or []
        if items:
            parts.append("<ul>" + "".join(f"<li>{escape(_plain(item))}</li>" for item in items) + "</ul>")
    if document.get("findings"):
        parts.append(_findings(document["findings"]))
    kept = [(key, value) for key, value in document.items() if key not in skip]
    if kept:
        parts.append(_key_values(kept))
    return "<h2>Run</h2>" + "".join(parts) if parts else ""


def _details(document: Mapping[str, Any]) -> str:
    shown = {"strategy", "attempts", "requests", "succeeded", "gave_up", "success_ratio", "amplification"}
    shown |= {"latency_p50", "latency_p99", "peak_in_flight", "server_recovery_s", "client_recovery_s", "assertions"}
    parts = []
    for row in document.get("results", []):
        table = _key_values([(key, value) for key, value in row.items() if key not in shown])
        parts.append(f"<details><summary>{escape(str(row['strategy']))}: every figure</summary>{table}</details>")
    return "".join(parts)


def _images(images: Sequence[Image]) -> str:
    parts = ["<h2>Plots</h2>"]
    for image in images:
        data = base64.b64encode(image.png).decode("ascii")
        caption = escape(image.caption)
        image_tag = f'<img src="data:image/png;base64,{data}" alt="{caption}">'
        parts.append(f"<figure>{image_tag}<figcaption>{caption}</figcaption></figure>")
    return "".join(parts)


def render(
    document: Mapping[str, Any], images: Sequence[Image], fits: Mapping[str, Sequence[FitRow]], rule: str
) -> str:
    """The whole page: title, headline, verdicts, figures, simulation fit, run metadata, plots, details."""
    name = escape(str(document.get("experiment", "run")))
    description = document.get("description")
    intro = f"<p>{escape(str(description))}</p>" if description else ""
    body = "".join(
        [
            f"<h1>{name}</h1>{intro}",
            _headline(document),
            _verdicts(document),
            _figures(document),
            _model_fit(fits),
            _metadata(document),
            _images(images),
            "<h2>Every figure, per strategy</h2>" + _details(document),
            f"<h2>How the winner is chosen</h2><pre>{escape(rule)}</pre>",
        ]
    )
    head = f'<meta charset="utf-8"><title>{name}: retrystorm report</title><style>{CSS}</style>'
    return f'<!DOCTYPE html>\n<html lang="en"><head>{head}</head><body>{body}</body></html>\n'
