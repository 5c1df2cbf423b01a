"""Run as root, a scenario file another user can change is refused in one line (the shipped ones never are)."""

import os

import pytest

from retrystorm.cli import main
from retrystorm.experiment.scenario import ScenarioError, load_scenario
from retrystorm.experiment.scenario.trust import refuse_untrusted

NOBODY = 65534
SCENARIO = "name: planted\nmodel: fixed\nload: {users: 1, duration: 5s}\nstrategies: [none]\n"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the check applies to root only")


@pytest.fixture
def shared_folder(tmp_path):
    """A folder like /tmp: anyone may write, the sticky bit set."""
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o1777)
    return folder


@pytest.fixture(autouse=True)
def _no_sudo_user(monkeypatch):
    monkeypatch.delenv("SUDO_UID", raising=False)


def test_another_users_file_in_a_sticky_folder_never_runs_in_place_of_a_shipped_scenario(shared_folder, monkeypatch):
    # The reproducer: another user plants "smira-laptop" in a folder everyone can write; root runs the name.
    planted = shared_folder / "smira-laptop"
    planted.write_text(SCENARIO)
    os.chown(planted, NOBODY, NOBODY)
    monkeypatch.chdir(shared_folder)
    assert load_scenario("smira-laptop").name == "smira-laptop"
    with pytest.raises(ScenarioError) as refused:
        load_scenario("./smira-laptop")
    assert str(refused.value) == (
        "smira-laptop: refused: running as root, and the file belongs to user 65534, so another user can change "
        "what runs; keep the scenario in a folder only root (or you) can write, or run it without root"
    )


def test_roots_own_file_in_a_sticky_folder_runs(shared_folder):
    mine = shared_folder / "mine.yaml"
    mine.write_text(SCENARIO)
    assert load_scenario(mine).name == "planted"


def test_a_file_others_can_write_is_refused(tmp_path):
    loose = tmp_path / "loose.yaml"
    loose.write_text(SCENARIO)
    loose.chmod(0o666)
    with pytest.raises(ScenarioError, match=r"the file is writable by others \(mode -rw-rw-rw-\)"):
        load_scenario(loose)


def test_a_folder_others_can_write_without_the_sticky_bit_is_refused(tmp_path):
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    open_folder.chmod(0o777)
    mine = open_folder / "mine.yaml"
    mine.write_text(SCENARIO)
    with pytest.raises(ScenarioError, match=f"the folder {open_folder} is writable by others without the sticky"):
        load_scenario(mine)


def test_a_link_is_checked_as_given_and_as_resolved(tmp_path, shared_folder):
    theirs = shared_folder / "theirs.yaml"
    theirs.write_text(SCENARIO)
    os.chown(theirs, NOBODY, NOBODY)
    link = tmp_path / "link.yaml"
    link.symlink_to(theirs)
    with pytest.raises(ScenarioError, match="the file belongs to user 65534"):
        refuse_untrusted(link)
    mine = tmp_path / "mine.yaml"
    mine.write_text(SCENARIO)
    their_link = shared_folder / "their-link.yaml"
    their_link.symlink_to(mine)
    os.lchown(their_link, NOBODY, NOBODY)
    with pytest.raises(ScenarioError, match="the file belongs to user 65534"):
        refuse_untrusted(their_link)


def test_the_sudo_users_own_file_runs(shared_folder, monkeypatch):
    theirs = shared_folder / "theirs.yaml"
    theirs.write_text(SCENARIO)
    os.chown(theirs, NOBODY, NOBODY)
    monkeypatch.setenv("SUDO_UID", str(NOBODY))
    assert load_scenario(theirs).name == "planted"


def test_run_refuses_the_planted_file_in_one_line_and_exit_2(shared_folder, capsys):
    planted = shared_folder / "x.yaml"
    planted.write_text(SCENARIO + "target: {url: 'http://127.0.0.1:1', command: 'touch ran-as-root'}\n")
    os.chown(planted, NOBODY, NOBODY)
    with pytest.raises(SystemExit) as done:
        main(["run", str(planted)])
    assert done.value.code == 2
    error = capsys.readouterr().err
    assert error.startswith(f"retrystorm: error: {planted}: refused: running as root") and error.count("\n") == 1
    assert not (shared_folder / "ran-as-root").exists()
