"""The tiers hold: a test outside ``live`` that starts a process fails, whatever it does with the refusal."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.tiers import StartedAProcessError, forbid_processes

pytest_plugins = ["pytester"]

#: The inner runs load the tiers as a plugin (the outer run imported it already: no assertion rewriting there).
INNER = ("-p", "tests.support.tiers", "-p", "no:cacheprovider", "-W", "ignore::pytest.PytestAssertRewriteWarning")

INNER_TESTS = """
import multiprocessing, os, subprocess, sys
import pytest

def test_plain():
    assert True

def test_starts_a_child():
    subprocess.run([sys.executable, "-c", "pass"], check=True)

def test_catches_the_refusal():
    try:
        subprocess.run(["true"], check=True)
    except Exception:
        pass

def test_forks():
    if os.fork() == 0:
        os._exit(0)

def test_multiprocessing():
    multiprocessing.get_context("spawn").Process(target=print).start()

@pytest.fixture
def victim():
    return "a fixture that would start a process"

def test_uses_a_process_fixture(victim):
    assert victim

@pytest.mark.signals
def test_signals_imply_live():
    assert True
"""


def test_forbid_processes_refuses_and_records_then_restores():
    attempts: list[str] = []
    before = (subprocess._fork_exec, os.fork)  # type: ignore[attr-defined]
    with forbid_processes("t::x", attempts), pytest.raises(StartedAProcessError, match="t::x started a process"):
        subprocess.run([sys.executable, "-c", "pass"], check=False)
    assert attempts == [f"{sys.executable} -c pass"]
    assert (subprocess._fork_exec, os.fork) == before  # type: ignore[attr-defined]


def test_only_tests_outside_live_that_start_a_process_fail(pytester):
    pytester.makepyfile(test_inner=INNER_TESTS)
    result = pytester.runpytest_inprocess(*INNER, "-m", "not live")
    result.assert_outcomes(passed=1, failed=4, deselected=2)
    result.stdout.fnmatch_lines(
        [
            "*test_starts_a_child started a process*-c pass*",
            "*test_catches_the_refusal started a process but is not marked live: true*",
            "*test_forks started a process (os.fork())*",
            "*test_multiprocessing started a process*",
        ]
    )


def test_process_fixtures_and_signals_mark_a_test_live(pytester):
    pytester.makepyfile(test_inner=INNER_TESTS)
    result = pytester.runpytest_inprocess(*INNER, "-m", "live", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["*test_uses_a_process_fixture", "*test_signals_imply_live", "2/7 tests collected*"])
