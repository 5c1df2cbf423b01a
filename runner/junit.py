"""``retrystorm run --junit FILE``: the run's assertions as a JUnit XML report that CI systems display.

One ``<testsuite>`` per strategy (``name``: the scenario and the label). Each assertion of the strategy is a
``<testcase>`` (``classname``: the strategy, ``name``: the assertion and its bound) with a ``<failure>`` naming what
was measured when it did not hold. An assertion that a strategy never recovers (bound ``never``) that held is an
expected failure, confirmed, not a success: its case is ``<skipped type="xfail">`` with that message, as pytest
reports an ``xfail``, so a test reporter counts it apart from the passes. Two more cases per strategy say whether
its verdicts can be trusted: ``valid`` (a ``<failure>`` when its load generator was saturated) and, when the
scenario has stop conditions, ``slo`` (a ``<failure>`` naming the breach that stopped the run there; the strategies
it skipped are ``<skipped>``).
A run that could not produce results (it could not go on, or was interrupted) is one suite with an ``<error>``
case naming the exit status, so a CI step never shows a green report for it.

The layout is the one GitHub Actions' test reporters, GitLab (``artifacts:reports:junit``) and Jenkins read: Ant's
JUnit schema (``testsuites/testsuite/testcase`` with ``failure``, ``error``, ``skipped``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from retrystorm.errors import UserError

#: What an exit status without results means, for the ``<error>`` case.
STATUS_WORDS = {3: "the run could not go on, or its figures are not valid", 130: "the run was interrupted"}


def check_junit_path(path: Path) -> None:
    """Refuse, before the run, a ``--junit`` path that cannot be written (:class:`UserError`, exit 2)."""
    if path.is_dir():
        raise UserError(f"--junit: {path} is a folder; give a file name, e.g. {path / 'junit.xml'}")
    parent = path.parent if str(path.parent) else Path()
    if not parent.is_dir():
        raise UserError(f"--junit: the folder {parent} does not exist; create it or give another path")
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise UserError(f"--junit: {path} cannot be written")


def _case(suite: ET.Element, classname: str, name: str) -> ET.Element:
    return ET.SubElement(suite, "testcase", {"classname": classname, "name": name, "time": "0"})


@dataclasses.dataclass(frozen=True, slots=True)
class Case:
    """One ``<testcase>``: a ``failure`` message when it did not hold, an ``expected`` one for a confirmed xfail."""

    name: str
    classname: str
    failure: str | None = None
    expected: str | None = None


def _suite(root: ET.Element, name: str, cases: Sequence[Case], time_s: float) -> None:
    """A suite of cases, with its counts."""
    suite = ET.SubElement(root, "testsuite", {"name": name, "time": f"{time_s:.3f}"})
    for each in cases:
        case = _case(suite, each.classname, each.name)
        if each.failure is not None:
            ET.SubElement(case, "failure", {"message": each.failure, "type": "AssertionError"}).text = each.failure
        elif each.expected is not None:
            ET.SubElement(case, "skipped", {"message": each.expected, "type": "xfail"}).text = each.expected
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(each.failure is not None for each in cases)))
    suite.set("errors", "0")
    suite.set("skipped", str(sum(each.failure is None and each.expected is not None for each in cases)))


def _assertion_case(verdict: Mapping[str, Any], label: str) -> Case:
    name = f"{verdict['check']} {verdict['bound']}"
    measured = f"{name}: measured {json.dumps(verdict['measured'])}"
    if not verdict["passed"]:
        return Case(name, label, failure=measured)
    if verdict["bound"] == "never":  # a strategy that never recovers, as the scenario expected: no success
        return Case(name, label, expected=f"expected failure, confirmed: {measured}")
    return Case(name, label)


def _strategy_cases(row: Mapping[str, Any], slo: Mapping[str, Any] | None) -> list[Case]:
    label = str(row["strategy"])
    cases = [_assertion_case(verdict, label) for verdict in row.get("assertions") or []]
    validity = row.get("validity")
    if isinstance(validity, Mapping):
        share = validity.get("saturated_share", 0)
        not_valid = f"not valid: the load generator was saturated {share:.1%} of the run"
        cases.append(Case("valid", label, failure=None if validity.get("valid", True) else not_valid))
    if slo is not None:
        breach = slo.get("breached")
        message = None
        if isinstance(breach, Mapping) and breach.get("strategy") == label:
            message = f"stopped early: {breach['condition']}: {breach['value']} at {breach['at_s']}s"
        cases.append(Case("slo", label, failure=message))
    return cases


def junit_xml(document: Mapping[str, Any] | None, status: int) -> str:
    """The JUnit XML of a run's ``results.json`` document (``None``: the run wrote none) ending with ``status``."""
    root = ET.Element("testsuites", {"name": "retrystorm"})
    if document is None:
        suite = ET.SubElement(root, "testsuite", {"name": "retrystorm run", "tests": "1", "errors": "1"})
        case = _case(suite, "retrystorm", "run")
        reason = STATUS_WORDS.get(status, "the run ended without results")
        ET.SubElement(case, "error", {"message": f"exit status {status}: {reason}"})
        return _text(root)
    experiment = str(document.get("experiment", "run"))
    slo = document.get("slo") if isinstance(document.get("slo"), Mapping) else None
    for row in document.get("results", []):
        _suite(root, f"{experiment}: {row['strategy']}", _strategy_cases(row, slo), 0.0)
    for label in (slo or {}).get("skipped", []):
        suite = ET.SubElement(
            root, "testsuite", {"name": f"{experiment}: {label}", "tests": "1", "skipped": "1", "failures": "0"}
        )
        ET.SubElement(_case(suite, str(label), "run"), "skipped", {"message": "not run: a stop condition was breached"})
    return _text(root)


def _text(root: ET.Element) -> str:
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(path: Path, folder: Path, status: int, *, since_epoch_s: float) -> None:
    """Write the JUnit XML of the run in ``folder`` (its ``results.json``, if this run, started at ``since_epoch_s``,
    wrote one) to ``path``."""
    results = folder / "results.json"
    fresh = results.is_file() and results.stat().st_mtime >= since_epoch_s - 1.0
    document = json.loads(results.read_text(encoding="utf-8")) if fresh else None
    path.write_text(junit_xml(document, status), encoding="utf-8")
