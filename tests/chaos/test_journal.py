import json
import logging
import os
import signal
import subprocess
import sys

import pytest

from retrystorm.chaos.backends import TargetRef
from retrystorm.chaos.backends.procfs import process_start_ticks
from retrystorm.chaos.journal import Journal, controller_alive, this_controller

from .conftest import is_stopped, wait_for

REF = TargetRef("process", "target", "123@456")


def test_pause_without_resume_is_pending(tmp_path):
    journal = Journal(tmp_path / "j.jsonl")
    journal.append("pause", REF, "o1")
    (pending,) = journal.pending()
    assert pending.ref == REF
    assert pending.fault == "o1"
    journal.append("resume", REF, "o1")
    assert journal.pending() == []


def test_records_carry_time_controller_and_status(tmp_path):
    journal = Journal(tmp_path / "j.jsonl")
    journal.append("resume", REF, "o1", status="failed", error="boom")
    (record,) = journal.records()
    assert record["utc"].endswith("+00:00")
    assert record["controller"] == this_controller()
    assert (record["status"], record["error"]) == ("failed", "boom")


def test_a_torn_last_line_is_skipped(tmp_path):
    path = tmp_path / "j.jsonl"
    journal = Journal(path)
    journal.append("pause", REF, "o1")
    with path.open("a") as handle:
        handle.write('{"op": "resume", "backe')
    assert len(journal.pending()) == 1


def test_orphaned_means_the_controller_is_dead(tmp_path):
    journal = Journal(tmp_path / "j.jsonl")
    journal.append("pause", REF, "o1")
    assert journal.orphaned() == []  # this process is alive
    journal.controller = "999999999@1"
    journal.append("pause", TargetRef("process", "t2", "9@9"), "o2")
    assert [p.fault for p in journal.orphaned()] == ["o2"]
    assert not controller_alive("999999999@1")


def test_compact_only_when_nothing_is_pending(tmp_path):
    journal = Journal(tmp_path / "j.jsonl")
    journal.append("pause", REF, "o1")
    journal.compact()
    assert len(journal.records()) == 1
    journal.append("resume", REF, "o1")
    journal.compact()
    assert journal.records() == []


# A damaged journal: every unusable line is skipped with a warning naming the file and line; nothing raises.

BAD_LINES = {
    "pause missing keys": b'{"op": "pause"}',
    "resume missing keys": b'{"op": "resume"}',
    "ident of the wrong type": b'{"op": "pause", "backend": "process", "target": "t", "ident": 123}',
    "backend of the wrong type": b'{"op": "resume", "backend": ["process"], "ident": "123@456"}',
    "empty target": b'{"op": "pause", "backend": "process", "target": "", "ident": "5@6"}',
    "process ident not PID@TICKS": b'{"op": "pause", "backend": "process", "target": "t", "ident": "abc"}',
    "a JSON list": b'[{"op": "resume", "backend": "process", "ident": "123@456"}]',
    "a JSON string": b'"resume"',
    "JSON null": b"null",
    "unknown op": b'{"op": "frobnicate", "backend": "process", "target": "t", "ident": "123@456"}',
    "op not hashable": b'{"op": ["resume"], "backend": "process", "ident": "123@456"}',
    "binary garbage": b"\xff\xfe\x00\x9c garbage \x00",
    "nested too deep": b"[" * 100_000,
    "not JSON": b"op=pause backend=process",
}


@pytest.mark.parametrize("line", BAD_LINES.values(), ids=BAD_LINES.keys())
def test_an_unusable_line_is_skipped_with_a_warning_naming_file_and_line(tmp_path, caplog, line):
    path = tmp_path / "j.jsonl"
    journal = Journal(path)
    journal.append("pause", REF, "o1")
    with path.open("ab") as handle:
        handle.write(line + b"\n")
    journal.append("pause", TargetRef("process", "t2", "7@8"), "o2")
    with caplog.at_level(logging.WARNING, logger="retrystorm.chaos.journal"):
        pending = journal.pending()
    # The bad line neither closes o1 (it is no resume of 123@456) nor hides o2 after it.
    assert [p.fault for p in pending] == ["o1", "o2"]
    (warning,) = caplog.records
    assert warning.getMessage().startswith(f"{path}:2: skipped: ")
    assert "\n" not in warning.getMessage()


def test_a_torn_last_line_is_named_in_the_warning(tmp_path, caplog):
    path = tmp_path / "j.jsonl"
    journal = Journal(path)
    journal.append("pause", REF, "o1")
    with path.open("ab") as handle:
        handle.write(b'{"op": "resume", "backe')
    with caplog.at_level(logging.WARNING, logger="retrystorm.chaos.journal"):
        assert len(journal.pending()) == 1
    (warning,) = caplog.records
    assert warning.getMessage().startswith(f"{path}:2: skipped: not JSON (")
    assert warning.getMessage().endswith("(torn last line: a write cut short)")


def test_a_record_appended_after_a_torn_line_gets_its_own_line(tmp_path):
    path = tmp_path / "j.jsonl"
    journal = Journal(path)
    path.write_bytes(b'{"op": "resume", "backe')  # a writer killed mid-write
    journal.append("pause", REF, "o1")
    assert [p.fault for p in journal.pending()] == ["o1"]
    assert path.read_bytes().count(b"\n") == 2


def test_a_pause_whose_controller_names_no_process_is_kept_and_counted_dead(tmp_path, caplog):
    path = tmp_path / "j.jsonl"
    record = {"op": "pause", "backend": "process", "target": "t", "ident": "123@456", "outage": "o1", "utc": "x"}
    lines = [{**record, "controller": "x@y"}, {**record, "ident": "5@6", "controller": 42}, {**record, "ident": "7@8"}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    journal = Journal(path)
    with caplog.at_level(logging.WARNING, logger="retrystorm.chaos.journal"):
        orphaned = journal.orphaned()
    # Left out, these pauses would never be resumed: kept, their controllers count as not running.
    assert [p.ref.ident for p in orphaned] == ["123@456", "5@6", "7@8"]
    assert [r.getMessage() for r in caplog.records] == [
        f"{path}:1: controller 'x@y' names no process: counted as not running",
        f"{path}:2: controller 42 names no process: counted as not running",
        f"{path}:3: controller None names no process: counted as not running",
    ]


@pytest.mark.parametrize("text", ["x@y", "", "@", "12@", "@34", "1@2@3", "-1@5", "١٢@٣"])
def test_controller_alive_is_false_for_text_that_names_no_process(text):
    assert controller_alive(text) is False


def test_compact_empties_a_damaged_file_when_nothing_is_pending(tmp_path):
    path = tmp_path / "j.jsonl"
    journal = Journal(path)
    journal.append("pause", REF, "o1")
    with path.open("ab") as handle:
        handle.write(b"\xff\xfe garbage\n")
    journal.append("resume", REF, "o1")
    journal.compact()
    assert path.read_bytes() == b""


@pytest.mark.signals
def test_recover_command_resumes_through_a_damaged_journal(victim, tmp_path):
    """`retrystorm chaos recover` on every bad line shape at once: exit 0, warnings, and the real pause resumed."""
    path = tmp_path / "j.jsonl"
    ident = f"{victim.pid}@{process_start_ticks(victim.pid)}"
    journal = Journal(path)
    journal.controller = "x@y"  # and its controller names no process
    path.write_bytes(b"".join(line + b"\n" for line in BAD_LINES.values()))
    journal.append("pause", TargetRef("process", "target", ident), "o1")
    with path.open("ab") as handle:
        handle.write(b'{"op": "resume", "backend": "process", "ident": "' + ident.encode())  # torn: no resume
    os.kill(victim.pid, signal.SIGSTOP)
    wait_for(lambda: is_stopped(victim.pid), what="the target to stop")
    result = subprocess.run(
        [sys.executable, "-m", "retrystorm", "chaos", "recover", "--journal", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert f"resumed process 'target' ({ident})" in result.stdout
    assert not is_stopped(victim.pid)
    for number in range(1, len(BAD_LINES) + 3):
        assert f"{path}:{number}: " in result.stderr
