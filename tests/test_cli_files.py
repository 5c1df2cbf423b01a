"""Files and folders named on the command line: ``--out`` into earlier results needs ``--force``, a folder that
cannot take results is one line before any work, ``init -o`` never writes through a symbolic link, and a name too
long for the file system is one line, not a traceback."""

import json

import pytest

from tests.support.cli import run_cli

SIM = ["sim", "run", "-s", "fixed:100ms", "--users", "20", "--duration", "5s"]


def one_line(done) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


def cli(*args, cwd):
    return run_cli(*args, cwd=cwd, env={"RETRYSTORM_CHAOS_JOURNAL": str(cwd / "journal.jsonl"), "COLUMNS": "100"})


@pytest.fixture
def earlier(tmp_path):
    """A folder holding an earlier run's results."""
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "results.json").write_text('{"earlier": true}\n')
    return folder


@pytest.mark.parametrize(
    "command",
    [
        SIM,
        ["run", "smira-laptop"],
        ["demo"],
        ["map", "smira-laptop", "--vary", "load.users=100,200"],
    ],
    ids=["sim run", "run", "demo", "map"],
)
def test_out_into_earlier_results_needs_force_and_nothing_is_overwritten(tmp_path, earlier, command):
    done = cli(*command, "--out", earlier, cwd=tmp_path)
    assert done.returncode == 2
    assert one_line(done) == (
        f"retrystorm: error: --out: {earlier} already holds results (results.json); pass --force to overwrite "
        "them, or name another folder"
    )
    assert json.loads((earlier / "results.json").read_text()) == {"earlier": True}
    assert [path.name for path in earlier.iterdir()] == ["results.json"]  # nothing started, nothing written


def test_with_force_the_results_are_written_over_and_a_label_is_drawn_as_written(tmp_path, earlier):
    """One simulation for two checks (drawing a report costs seconds): ``--force``, and a label matplotlib would
    read as mathtext it cannot parse (issue 23, item 10) gives a report all the same."""
    label = r"$\undefinedcmd{x}$"
    done = cli(*SIM[:2], "-s", f"{label}=fixed:100ms", *SIM[4:], "--out", earlier, "--force", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    document = json.loads((earlier / "results.json").read_text())
    assert "earlier" not in document
    assert [row["strategy"] for row in document["results"]] == [label]
    assert label in (earlier / "report.html").read_text()
    assert (earlier / "comparison.png").stat().st_size > 0


@pytest.mark.parametrize(
    ("folder", "message"),
    [
        ("/dev/full", "--out: /dev/full exists and is not a folder; name a folder for the results"),
        ("/dev/full/run", "--out: cannot write into /dev/full/run: Not a directory"),
        ("n" * 300, "File name too long"),
    ],
)
@pytest.mark.parametrize("command", [SIM, ["run", "smira-laptop"]], ids=["sim run", "run"])
def test_an_out_folder_that_cannot_take_results_is_one_line_exit_2(tmp_path, folder, message, command):
    done = cli(*command, "--out", folder, cwd=tmp_path)
    assert done.returncode == 2
    assert message in one_line(done)


@pytest.mark.parametrize("argument", ["./" + "n" * 300 + ".yaml", "n" * 300])
@pytest.mark.parametrize("command", [["run"], ["sim", "run"]], ids=["run", "sim run"])
def test_a_scenario_name_too_long_is_one_line_exit_2(tmp_path, argument, command):
    done = cli(*command, argument, cwd=tmp_path)
    assert done.returncode == 2
    one_line(done)


@pytest.mark.parametrize("force", [[], ["--force"]], ids=["", "--force"])
@pytest.mark.parametrize("dangling", [True, False], ids=["dangling", "to a file"])
def test_init_never_writes_through_a_symbolic_link(tmp_path, force, dangling):
    """Another user's link at the output path, even one to a file not there yet, never gets root's scenario."""
    victim = tmp_path / "victim"
    if not dangling:
        victim.write_text("keep\n")
    (tmp_path / "scenario.yaml").symlink_to(victim)
    done = cli("init", "http://127.0.0.1:8000", "--no-probe", *force, cwd=tmp_path)
    assert done.returncode == 2
    assert "scenario.yaml: a symbolic link; init never writes through one" in one_line(done)
    assert (victim.read_text() == "keep\n") if not dangling else not victim.exists()


def test_init_writes_no_device(tmp_path):
    done = cli("init", "http://127.0.0.1:8000", "--no-probe", "-o", "/dev/null", "--force", cwd=tmp_path)
    assert done.returncode == 2
    assert one_line(done) == (
        "retrystorm: error: /dev/null: cannot write it: not a regular file (a character device); name a file"
    )


def test_init_example_never_writes_through_a_symbolic_link(tmp_path):
    victim = tmp_path / "victim"
    (tmp_path / "app.py").symlink_to(victim)
    done = cli("init", "--example", "--force", cwd=tmp_path)
    assert done.returncode == 2
    assert "app.py: a symbolic link; init never writes through one" in one_line(done)
    assert not victim.exists()
