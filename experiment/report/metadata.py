"""The run's metadata and each strategy's other figures, in words for the page.

The results document carries the run's own keys beside ``results`` (``run``: scenario,
seed, stack, folder and, per strategy, what ran where and when; ``ok``; anything a
caller adds) and each strategy's row carries figures the tables leave out. Here they
become :class:`Entry` trees for a definition list: nested mappings nest, times in UTC
read as dates, yes/no values and outcomes read as words, and ``ok``, a row that would
only repeat that nothing was checked, is left out when nothing was checked.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from retrystorm.experiment.report.text import DASH, count, seconds

#: Top-level keys shown elsewhere on the page (title, tables, their own sections).
SHOWN_ELSEWHERE = frozenset({"experiment", "results", "description", "choices", "notes", "findings", "simulated"})

#: Keys whose names read better spelled out.
TERMS = {
    "spec": "strategy spec",
    "stack": "ran on",
    "ok": "outcome",
    "passed": "assertions",
    "rejected_locally": "rejected locally (budget)",
    "in_flight_end": "in flight at the end",
    "accept_queue_end": "accept queue at the end",
    "late_answers": "late answers",
    "failed_locally": "failed locally (gRPC channel)",
    "cancelled": "cancelled at the resume (gRPC deadline)",
    "readings_missed": "readings missed",
    "planned_outages": "outages planned",
    "outages": "outages (pause to resume)",
}


@dataclasses.dataclass(frozen=True, slots=True)
class Entry:
    """One term of a definition list: its text, or entries nested under it; ``css`` marks a status."""

    term: str
    text: str = ""
    children: tuple[Entry, ...] = ()
    css: str = ""


def term(key: str) -> str:
    """``started_utc`` -> ``started (UTC)``, ``gave_up`` -> ``gave up``."""
    if key in TERMS:
        return TERMS[key]
    if key.endswith("_utc"):
        return f"{key.removesuffix('_utc').replace('_', ' ')} (UTC)"
    return key.replace("_", " ")


def utc_text(value: str) -> str:
    """``2026-01-01T00:00:00.000+00:00`` -> ``2026-01-01 00:00:00.000``; other text unchanged."""
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        return value
    if moment.utcoffset() not in (None, dt.timedelta(0)):
        return value  # not UTC: the text says which zone
    shown = moment.strftime("%Y-%m-%d %H:%M:%S")
    return f"{shown}.{moment.microsecond // 1000:03d}" if moment.microsecond else shown


def _is_span(value: object) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(isinstance(x, int | float) for x in value)


def value_text(key: str, value: object) -> str:
    """One value in words: seconds for times, counts with separators, spans, yes/no, a dash for nothing."""
    if value is None:
        return DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return utc_text(value) if key.endswith("_utc") else value
    if isinstance(value, int | float) and (key.startswith("latency_") or key.endswith("_s")):
        return seconds(float(value))
    if isinstance(value, int):
        return count(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        if all(_is_span(item) for item in value) and value:
            return ", ".join(f"{seconds(start)} to {seconds(end)}" for start, end in value)
        return ", ".join(value_text(key, item) for item in value) or "none"
    if isinstance(value, Mapping):
        return ", ".join(f"{term(str(k))} {value_text(str(k), v)}" for k, v in value.items()) or "none"
    return str(value)


def _nests(value: object) -> bool:
    """A mapping nests its own entries, unless it holds only numbers (``target 5, client 0`` reads as one line)."""
    if not isinstance(value, Mapping) or not value:
        return False
    return not all(isinstance(item, int | float) or item is None for item in value.values())


def entries(pairs: Iterable[tuple[str, object]]) -> tuple[Entry, ...]:
    """Entries for ``pairs``; a mapping's own entries nest under its key (see :func:`_nests`)."""
    found = []
    for key, value in pairs:
        if isinstance(value, Mapping) and _nests(value):
            found.append(Entry(term(key), children=entries((str(k), v) for k, v in value.items())))
        else:
            found.append(Entry(term(key), value_text(key, value)))
    return tuple(found)


def _outcome(document: Mapping[str, Any]) -> Entry | None:
    """``ok`` in words; ``None`` when nothing was checked, where it would say nothing."""
    checked = [verdict for row in document.get("results", []) for verdict in row.get("assertions") or []]
    findings = document.get("findings") or []
    if "ok" not in document or not (checked or findings):
        return None
    what = " and ".join((["every assertion"] if checked else []) + (["every finding"] if findings else []))
    if document["ok"]:
        return Entry(term("ok"), f"{what} held", css="pass")
    return Entry(term("ok"), f"not {what} held: see the verdicts", css="fail")


def run_entries(document: Mapping[str, Any]) -> tuple[Entry, ...]:
    """The run's metadata: the ``run`` mapping first, then the outcome, then any other top-level key."""
    run = document.get("run")
    found: list[Entry] = []
    if isinstance(run, Mapping):
        found.extend(entries((str(key), value) for key, value in run.items()))
    outcome = _outcome(document)
    if outcome is not None:
        found.append(outcome)
    others = [(str(k), v) for k, v in document.items() if k not in SHOWN_ELSEWHERE and k not in ("run", "ok")]
    found.extend(entries(others))
    return tuple(found)


def _window_text(window: object) -> str:
    """``slow target 45s to 55s (capacity 0.5)``: one trigger window of a results row."""
    if not isinstance(window, Mapping):
        return str(window)
    settings = ", ".join(f"{k} {value_text(str(k), v)}" for k, v in window.items() if k not in _WINDOW_KEYS)
    start, end = window.get("start_s"), window.get("end_s")
    span = f"{seconds(float(start))} to {seconds(float(end))}" if start is not None and end is not None else ""
    text = f"{window.get('kind', 'trigger')} {window.get('target', '')} {span}".strip()
    return f"{text} ({settings})" if settings else text


_WINDOW_KEYS = frozenset({"kind", "target", "start_s", "end_s"})


def row_entries(row: Mapping[str, Any], shown: Sequence[str]) -> tuple[Entry, ...]:
    """A results row's figures other than ``shown``; ``passed`` as the assertions' outcome."""
    found = []
    for key, value in row.items():
        if key in shown:
            continue
        if key == "outages" and row.get("triggers"):  # the episodes recovery was judged after
            found.append(Entry("recovery judged after", value_text(key, value)))
        elif key == "triggers" and isinstance(value, list):
            found.append(Entry(term(key), "; ".join(_window_text(window) for window in value) or "none"))
        elif key == "passed" and isinstance(value, bool):
            text = "every one held" if value else "at least one failed"
            found.append(Entry(term(key), text, css="pass" if value else "fail"))
        else:
            found.extend(entries([(str(key), value)]))
    return tuple(found)
