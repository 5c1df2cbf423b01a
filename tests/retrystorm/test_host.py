"""Where retrystorm runs: an old Python, a Linux-only command elsewhere, an old pip each get one line and exit 2.

In this process: ``sys.platform`` and ``sys.version_info`` are replaced for the test, the real entry points run.
"""

import importlib
import runpy
import sys
from pathlib import Path

import pytest

from retrystorm import host
from tests.support.cli import run_cli

ROOT = Path(__file__).resolve().parents[2]


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


@pytest.mark.parametrize("version", [(3, 11, 0), (3, 12, 4), (4, 0, 0)])
def test_python_3_11_and_later_run(version):
    assert host.python_problem(version) is None


@pytest.mark.parametrize("version", [(3, 10, 14), (3, 8, 10), (2, 7, 18)])
def test_an_older_python_is_told_which_to_install(version):
    problem = host.python_problem(version)
    assert problem is not None
    assert f"Python {'.'.join(map(str, version))} is too old" in problem
    assert "Linux with Python >= 3.11" in problem
    assert "python3.11 -m venv" in problem


@pytest.mark.parametrize("command", sorted(host.LINUX_COMMANDS))
@pytest.mark.parametrize("platform", ["darwin", "win32", "freebsd14"])
def test_a_command_that_freezes_processes_is_refused_off_linux(command, platform):
    problem = host.command_problem(["-v", command, "scenario.yaml"], platform)
    assert problem is not None
    assert problem.startswith(f"retrystorm {command} needs Linux")
    assert f"not {platform}" in problem
    assert host.command_problem([command, "x"], "linux") is None


@pytest.mark.parametrize(
    "argv", [["sim", "smira"], ["strategies"], ["map", "smira"], ["run", "--help"], ["--version"], [], ["-v"]]
)
def test_pure_commands_help_and_version_run_anywhere(argv):
    assert host.command_problem(argv, "darwin") is None


def test_the_command_line_refuses_run_on_macos_in_one_line_before_reading_the_scenario(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    result = run_cli("run", "no-such-file.yaml")
    assert result.returncode == 2
    line = one_line(result.stderr)
    assert line.startswith("retrystorm: error: retrystorm run needs Linux")
    assert "no-such-file" not in line


def test_the_command_line_runs_the_simulator_on_macos(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    result = run_cli("strategies")
    assert result.returncode == 0, result.stderr
    assert "exponential" in result.stdout


def test_map_live_is_refused_off_linux_before_simulating(monkeypatch, tmp_path):
    importlib.import_module("retrystorm.runner.map_cli")  # imported on Linux (psutil refuses to import elsewhere)
    monkeypatch.setattr(sys, "platform", "win32")
    result = run_cli("map", "smira-sigstop", "--vary", "faults[0].for=5s,10s", "--live", "1", "--out", tmp_path / "map")
    assert result.returncode == 2
    assert one_line(result.stderr).startswith("retrystorm: error: retrystorm map --live needs Linux")
    assert not (tmp_path / "map").exists()


def test_the_command_line_refuses_an_old_python(monkeypatch):
    monkeypatch.setattr(sys, "version_info", (3, 10, 2, "final", 0))
    result = run_cli("sim", "smira")
    assert result.returncode == 2
    assert one_line(result.stderr).startswith("retrystorm: error: Python 3.10.2 is too old")


def test_python_m_retrystorm_checks_the_python_before_importing_the_cli(monkeypatch, capsys):
    monkeypatch.setattr(sys, "version_info", (3, 9, 18, "final", 0))
    monkeypatch.delitem(sys.modules, "retrystorm.cli")
    with pytest.raises(SystemExit) as done:
        runpy.run_module("retrystorm", run_name="__main__")
    assert done.value.code == 2
    assert one_line(capsys.readouterr().err).startswith("retrystorm: error: Python 3.9.18 is too old")
    assert "retrystorm.cli" not in sys.modules


def test_setup_py_run_by_an_old_pip_says_to_upgrade_pip(monkeypatch, capsys):
    # pip < 21.3 runs `setup.py develop` itself (no PEP 660), outside setuptools.build_meta
    monkeypatch.delitem(sys.modules, "setuptools.build_meta", raising=False)
    monkeypatch.setattr(sys, "argv", ["setup.py", "develop", "--no-deps"])
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(ROOT / "setup.py"))
    assert done.value.code == 2
    line = one_line(capsys.readouterr().err)
    assert "pip >= 21.3" in line
    assert "python3 -m pip install --upgrade pip" in line
    assert "Linux with Python >= 3.11" in line


def test_setup_py_inside_a_pep_517_build_hands_over_to_setuptools(monkeypatch):
    import setuptools
    import setuptools.build_meta  # present in sys.modules, as in a build

    calls = []
    monkeypatch.setattr(setuptools, "setup", lambda **kwargs: calls.append(kwargs))
    runpy.run_path(str(ROOT / "setup.py"))
    assert calls == [{}], "everything is in pyproject.toml"
