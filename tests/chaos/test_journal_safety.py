"""The journal is private and distrusted (issue 23, items 5 to 7 and the low items): each reproducer of the issue.

A symlink at the journal's path is never followed; the journal and its folder are private whatever the umask; a
record is checked before any undo acts on it, and a bad one is skipped in one line while recovery goes on; a FIFO,
an empty or overlong name, a full or read-only file system are refused in one line before any fault; a journal
that fills up during a pause still lets it end, resumed, in one line.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from retrystorm.chaos.backends.base import TargetRef
from retrystorm.chaos.journal import Journal
from retrystorm.chaos.journal_file import JournalRefusedError
from retrystorm.cli import main

from .conftest import is_stopped, wait_for

REF = TargetRef("process", "target", "123@456")


def chaos(capsys, *args: str) -> tuple[int, str, str]:
    """``retrystorm chaos ARGS`` in this process: exit code, stdout, stderr."""
    with pytest.raises(SystemExit) as exited:
        main(["chaos", *args])
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


def test_a_symlink_at_the_journal_path_is_never_followed(tmp_path):
    precious = tmp_path / "precious"
    precious.write_text("root's data\n")
    (tmp_path / "state").mkdir(mode=0o700)
    link = tmp_path / "state" / "chaos-journal.jsonl"
    link.symlink_to(precious)
    with pytest.raises(JournalRefusedError, match="a symbolic link, which the journal never follows"):
        Journal(link).append("pause", REF, "o1")
    Journal(link).compact()  # logged, not raised, and nothing truncated
    assert precious.read_text() == "root's data\n"
    with pytest.raises(JournalRefusedError):
        Journal(link).records()


def test_a_folder_another_user_owns_or_may_write_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # no sticky bit: anyone could swap the journal
    with pytest.raises(JournalRefusedError, match=r"others may write it \(mode 777\)"):
        Journal(shared / "j.jsonl").append("pause", REF, "o1")
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 65534, 65534)
    with pytest.raises(JournalRefusedError, match="belongs to uid 65534"):
        Journal(theirs / "j.jsonl").append("pause", REF, "o1")


def test_under_umask_0_the_journal_is_0600_in_a_0700_folder(tmp_path):
    old = os.umask(0)
    try:
        path = tmp_path / "new" / "deeper" / "j.jsonl"
        Journal(path).append("pause", REF, "o1")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.parent.parent.stat().st_mode) == 0o700


@pytest.mark.parametrize(
    "line",
    [
        '{"op":"throttle","backend":"cgroup","target":"x","ident":"/y","undo":{"version":1e999}}',
        '{"op":"throttle","backend":"cgroup","target":"x","ident":"/y","undo":{"version":NaN}}',
        '{"op":"pause","backend":"process","target":"x","ident":"1@2","duration_s":-Infinity}',
        '{"op":"throttle","backend":"docker","target":"x","ident":"c0ffee","undo":{"restore":{"CpuQuota":9e99}}}',
        '{"op":"throttle","backend":"docker","target":"x","ident":"c0ffee","undo":{"restore":{"CpuQuota":'
        + "9" * 40
        + "}}}",
        '{"op":"pause","backend":"cgroup","target":"x","ident":"relative/path"}',
        '{"op":"pause","backend":"docker","target":"x","ident":"../../etc"}',
        '{"op":"pause","backend":"process","target":"x\\u0000y","ident":"1@2"}',
    ],
)
def test_a_record_with_an_unbounded_number_or_a_name_nothing_writes_is_skipped_in_one_line(tmp_path, caplog, line):
    path = tmp_path / "j.jsonl"
    Journal(path).append("pause", REF, "o1")
    with path.open("a") as handle:
        handle.write(line + "\n")
    assert [record["ident"] for record in Journal(path).records()] == [REF.ident]
    (warning,) = [r.getMessage() for r in caplog.records if r.name == "retrystorm.chaos.journal"]
    assert ":2: skipped:" in warning and "\n" not in warning


def test_one_bad_line_bricks_nothing_and_recovery_still_resumes_a_later_pending_pause(tmp_path, victim, capsys):
    """Item 6: the 1e999 line used to stop chaos recover (and pause, serve, run) with an OverflowError traceback."""
    path = tmp_path / "j.jsonl"
    journal = Journal(path)
    journal.controller = "999999999@1"
    path.write_text('{"op":"throttle","backend":"cgroup","target":"x","ident":"y","undo":{"version":1e999}}\n')
    path.chmod(0o600)
    ticks = Path(f"/proc/{victim.pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    journal.append("pause", TargetRef("process", "v", f"{victim.pid}@{ticks}"), "o9")
    os.kill(victim.pid, signal.SIGSTOP)
    wait_for(lambda: is_stopped(victim.pid))
    code, out, err = chaos(capsys, "recover", "--journal", str(path))
    assert code == 0, err
    assert "resumed process 'v'" in out
    assert not is_stopped(victim.pid)


def test_recovery_acts_on_no_path_a_record_merely_names(tmp_path, capsys, caplog):
    """Item 5: a symlinked original, or an ordinary folder named like a throttle group, is never acted on."""
    folder = tmp_path / "retrystorm-throttle-planted"
    folder.mkdir()
    (folder / "keep.txt").write_text("mine")
    (folder / "cgroup.procs").write_text("")
    link = tmp_path / "cpu-link"
    link.symlink_to("/sys/fs/cgroup/cpu")
    path = tmp_path / "j.jsonl"
    journal = Journal(path)
    journal.controller = "999999999@1"
    for group, original in ((str(folder), str(tmp_path)), (f"{link}/retrystorm-throttle-z", str(link))):
        undo = {"kind": "cgroup", "version": 1, "group": group, "original": original, "quota_us": 1, "period_us": 1}
        journal.append("throttle", TargetRef("cgroup", "x", group), "t1", undo=undo)
    code, _out, _err = chaos(capsys, "recover", "--journal", str(path))
    assert code == 0
    refusals = [record.getMessage() for record in caplog.records if record.levelname == "ERROR"]
    assert any("not under a mounted cgroup hierarchy" in line for line in refusals), refusals
    assert any("a symbolic link" in line for line in refusals), refusals
    assert (folder / "keep.txt").read_text() == "mine"


@pytest.mark.parametrize(
    ("journal", "message"),
    [
        ("", "expected a file name"),
        ("/" + "n" * 300 + "/j.jsonl", "File name too long"),
        ("FIFO", "not a regular file"),
    ],
)
def test_a_journal_that_is_no_file_is_one_line_exit_2_and_nothing_hangs(tmp_path, capsys, journal, message):
    if journal == "FIFO":
        journal = str(tmp_path / "fifo")
        os.mkfifo(journal)
    code, _, err = chaos(capsys, "recover", "--journal", journal)
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1


@pytest.fixture
def small_fs(tmp_path):
    """A 64 KiB tmpfs of this test's own (root), unmounted afterwards."""
    mount = tmp_path / "small"
    mount.mkdir(mode=0o700)
    if os.geteuid() != 0:
        pytest.skip("mounts a tmpfs: needs root")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=True)


def fill(folder: Path) -> None:
    """Fill ``folder``'s file system to the last byte."""
    descriptor = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        while os.write(descriptor, b"x" * 512):
            pass
    except OSError:
        pass
    finally:
        os.close(descriptor)


@pytest.mark.signals
def test_a_full_or_read_only_journal_is_refused_before_anything_is_frozen(small_fs, victim, capsys):
    fill(small_fs)
    code, _, err = chaos(capsys, "pause", f"pid:{victim.pid}", "--for", "1s", "--journal", str(small_fs / "j.jsonl"))
    assert code == 2
    assert "bytes free" in err or "No space left" in err
    assert not is_stopped(victim.pid)
    (small_fs / "filler").unlink()
    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True)
    code, _, err = chaos(capsys, "pause", f"pid:{victim.pid}", "--for", "1s", "--journal", str(small_fs / "j.jsonl"))
    assert code == 2
    assert "ead-only file system" in err
    assert not is_stopped(victim.pid)


@pytest.mark.signals
def test_a_journal_that_fills_up_during_a_pause_still_ends_it_resumed_in_one_line(small_fs, victim):
    """Item 7: chaos pause used to resume the target and then never exit (its SIGTERM handler died on ENOSPC).

    The journal's last page is padded with blank lines (skipped when read) and the file system filled, so the
    resume's record needs a block there is none of.
    """
    journal = small_fs / "j.jsonl"
    pause = subprocess.Popen(
        [sys.executable, "-m", "retrystorm", "chaos", "pause", f"pid:{victim.pid}", "--for", "5m",
         "--journal", str(journal)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    wait_for(lambda: is_stopped(victim.pid), what="the pause")
    with journal.open("ab") as handle:
        handle.write(b"\n" * (4096 - journal.stat().st_size % 4096))
    fill(small_fs)
    pause.send_signal(signal.SIGTERM)
    _, err = pause.communicate(timeout=30)  # it exits: no hang
    assert not is_stopped(victim.pid)
    assert pause.returncode == 3
    last = err.strip().splitlines()[-1]
    assert "could not record a resume" in last and "the fault itself was reverted" in last
    assert "Traceback" not in err
    assert json.loads(journal.read_text().splitlines()[0])["op"] == "pause"
