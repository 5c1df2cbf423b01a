"""A file a user names is read only if it is a regular file: a FIFO or a device is refused at once, never waited on."""

import contextlib
import errno
import os
import threading
import time
from pathlib import Path

import pytest

from retrystorm.errors import SpecError, UserError
from retrystorm.experiment.scenario import ScenarioError, load_scenario
from retrystorm.loadgen.options import read_requests_file
from retrystorm.loadgen.service_config import read_strategy
from retrystorm.user_files import UserFileError, prepare_out_folder, read_user_file, write_user_file

FIFO_REFUSED = "not a regular file (a FIFO); name a file"


@contextlib.contextmanager
def fifo(tmp_path):
    """A FIFO no one writes to; a reader that waits on it is let go after a few seconds, so a test fails, not hangs."""
    path = tmp_path / "fifo"
    os.mkfifo(path)
    stop = threading.Event()

    def release():
        deadline = time.monotonic() + 5
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))  # lets a blocked open() return, at EOF
            except OSError as error:
                if error.errno != errno.ENXIO:  # ENXIO: no reader yet
                    raise
            stop.wait(0.05)

    releaser = threading.Thread(target=release, daemon=True)
    releaser.start()
    try:
        yield path
    finally:
        stop.set()
        releaser.join()


def test_a_regular_file_is_read_up_to_one_byte_past_the_limit(tmp_path):
    file = tmp_path / "f"
    file.write_bytes(b"abcdef")
    assert read_user_file(file, 100) == b"abcdef"
    assert read_user_file(file, 3) == b"abcd"  # the caller sees it is too large


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda tmp_path: tmp_path, "not a regular file (a folder); name a file"),
        (lambda _tmp_path: "/dev/zero", "not a regular file (a character device); name a file"),
        (lambda tmp_path: tmp_path / "missing", "No such file or directory"),
    ],
)
def test_anything_but_a_regular_file_is_one_reason(tmp_path, make, reason):
    with pytest.raises(UserFileError) as refused:
        read_user_file(make(tmp_path), 10)
    assert str(refused.value) == reason


def test_a_fifo_is_refused_at_once(tmp_path):
    with fifo(tmp_path) as path, pytest.raises(UserFileError, match=r"^not a regular file \(a FIFO\); name a file$"):
        read_user_file(path, 10)


def test_a_fifo_as_a_scenario_is_one_line(tmp_path):
    with fifo(tmp_path) as path, pytest.raises(ScenarioError) as refused:
        load_scenario(path)
    assert str(refused.value) == f"{path}: cannot read the scenario: {FIFO_REFUSED}"


def test_a_fifo_as_a_service_config_is_one_line(tmp_path):
    with fifo(tmp_path) as path, pytest.raises(SpecError) as refused:
        read_strategy(f"grpc-service-config:{path}")
    assert str(refused.value).endswith(f"{path}: cannot read it: {FIFO_REFUSED}")


def test_a_fifo_as_a_requests_file_is_one_line(tmp_path):
    with fifo(tmp_path) as path, pytest.raises(SpecError) as refused:
        read_requests_file(str(path))
    assert str(refused.value).endswith(f": {FIFO_REFUSED}")


def test_a_requests_file_too_large_is_refused(tmp_path):
    big = tmp_path / "requests.txt"
    big.write_bytes(b"GET /a\n" * (1 + 20 * 80 * 1024 // 7))
    with pytest.raises(SpecError, match=r"larger than 1600 KiB; a requests file holds at most 20"):
        read_requests_file(str(big))


def test_a_new_file_is_written_and_an_existing_one_only_when_replacing(tmp_path):
    path = tmp_path / "scenario.yaml"
    write_user_file(path, "name: a\n")
    assert path.read_text() == "name: a\n"
    with pytest.raises(UserFileError, match=r"^File exists$"):
        write_user_file(path, "name: b\n")
    write_user_file(path, "b\n", replace=True)
    assert path.read_text() == "b\n"


@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("dangling", [False, True])
def test_a_symbolic_link_is_never_written_through(tmp_path, replace, dangling):
    """A link planted at the path (even one to a file not there yet) must not turn the write onto its target."""
    victim = tmp_path / "victim"
    if not dangling:
        victim.write_text("keep\n")
    link = tmp_path / "scenario.yaml"
    link.symlink_to(victim)
    with pytest.raises(UserFileError):
        write_user_file(link, "name: x\n", replace=replace)
    assert (victim.read_text() == "keep\n") if not dangling else not victim.exists()
    assert link.is_symlink()


def test_a_device_is_never_written_as_a_file(tmp_path):
    with pytest.raises(UserFileError, match=r"^not a regular file \(a character device\); name a file$"):
        write_user_file("/dev/null", "x", replace=True)


def test_an_out_folder_is_made_and_one_with_results_needs_force(tmp_path):
    folder = tmp_path / "a" / "b"
    prepare_out_folder(folder)
    assert folder.is_dir()
    (folder / "results.json").write_text("{}")
    with pytest.raises(UserError) as refused:
        prepare_out_folder(folder)
    assert str(refused.value) == (
        f"--out: {folder} already holds results (results.json); pass --force to overwrite them, or name another folder"
    )
    prepare_out_folder(folder, force=True)
    assert [path.name for path in folder.iterdir()] == ["results.json"]  # nothing left behind by the check


@pytest.mark.parametrize(
    ("folder", "message"),
    [
        ("/dev/full", "--out: /dev/full exists and is not a folder; name a folder for the results"),
        ("/dev/full/run", "--out: cannot write into /dev/full/run: Not a directory"),
        ("/proc/self/run", "--out: cannot write into /proc/self/run: No such file or directory"),
        ("n" * 300, "File name too long"),
    ],
)
def test_an_out_folder_that_cannot_take_results_is_one_line(folder, message):
    with pytest.raises(UserError) as refused:
        prepare_out_folder(Path(folder))
    assert message in str(refused.value)
    assert "\n" not in str(refused.value)
