"""``retrystorm run --junit FILE``: the assertions, validity and stop conditions as JUnit XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from retrystorm.errors import UserError
from retrystorm.runner.junit import check_junit_path, junit_xml

from .test_cli import error_line, retrystorm

DOCUMENT = {
    "experiment": "gate",
    "results": [
        {
            "strategy": "fixed:100ms",
            "assertions": [
                {"check": "server_recovers_within", "bound": "20s", "measured": None, "passed": False},
                {"check": "max_amplification", "bound": 3, "measured": 1.2, "passed": True},
            ],
            "validity": {"valid": True, "saturated_share": 0.0},
        },
        {"strategy": "smira", "validity": {"valid": False, "saturated_share": 0.125}},
    ],
}


def cases(xml: str) -> list[tuple[str, str, str | None]]:
    root = ET.fromstring(xml)  # noqa: S314 (the XML this project wrote)
    found = []
    for case in root.iter("testcase"):
        outcome = next((child for child in case if child.tag in ("failure", "error", "skipped")), None)
        found.append((case.get("classname"), case.get("name"), None if outcome is None else outcome.get("message")))
    return found


def test_each_assertion_and_each_runs_validity_is_a_test_case():
    xml = junit_xml(DOCUMENT, 1)
    assert cases(xml) == [
        ("fixed:100ms", "server_recovers_within 20s", "server_recovers_within 20s: measured null"),
        ("fixed:100ms", "max_amplification 3", None),
        ("fixed:100ms", "valid", None),
        ("smira", "valid", "not valid: the load generator was saturated 12.5% of the run"),
    ]
    suites = ET.fromstring(xml).findall("testsuite")  # noqa: S314 (the XML this project wrote)
    assert [(s.get("name"), s.get("tests"), s.get("failures")) for s in suites] == [
        ("gate: fixed:100ms", "3", "1"),
        ("gate: smira", "1", "1"),
    ]


def test_a_confirmed_never_is_an_expected_failure_not_a_plain_pass_and_an_unexpected_recovery_fails():
    document = {
        "experiment": "gate",
        "results": [
            {
                "strategy": "fixed:100ms",
                "assertions": [{"check": "server_recovers_within", "bound": "never", "measured": None, "passed": True}],
            },
            {
                "strategy": "backoff",
                "assertions": [{"check": "server_recovers_within", "bound": "never", "measured": 6.0, "passed": False}],
            },
        ],
    }
    xml = junit_xml(document, 1)
    assert cases(xml) == [
        (
            "fixed:100ms",
            "server_recovers_within never",
            "expected failure, confirmed: server_recovers_within never: measured null",
        ),
        ("backoff", "server_recovers_within never", "server_recovers_within never: measured 6.0"),
    ]
    root = ET.fromstring(xml)  # noqa: S314 (the XML this project wrote)
    (skipped,) = root.iter("skipped")
    assert skipped.get("type") == "xfail"
    suites = root.findall("testsuite")
    assert [(s.get("tests"), s.get("failures"), s.get("skipped")) for s in suites] == [("1", "0", "1"), ("1", "1", "0")]


@pytest.mark.parametrize(("status", "words"), [(3, "could not go on"), (130, "interrupted")])
def test_a_run_without_results_is_one_error_never_a_green_report(status, words):
    ((classname, name, message),) = cases(junit_xml(None, status))
    assert (classname, name) == ("retrystorm", "run")
    assert message.startswith(f"exit status {status}: ") and words in message


def test_bad_paths_are_refused_before_the_run(tmp_path):
    with pytest.raises(UserError, match="is a folder"):
        check_junit_path(tmp_path)
    with pytest.raises(UserError, match="does not exist"):
        check_junit_path(tmp_path / "missing" / "junit.xml")
    check_junit_path(tmp_path / "junit.xml")


def test_junit_into_a_missing_folder_is_one_line_and_exit_2(tmp_path):
    line = error_line(retrystorm("run", "smira-laptop", "--junit", tmp_path / "no" / "j.xml", cwd=tmp_path,
                                 journal=tmp_path / "j.jsonl"))  # fmt: skip
    assert (
        line
        == f"retrystorm: error: --junit: the folder {tmp_path / 'no'} does not exist; create it or give another path"
    )
