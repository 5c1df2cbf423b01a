"""The ``retrystorm`` command line: listing, plotting, and one-line errors with exit 2.

In this process through click's runner; two smoke tests run the installed command and ``python -m retrystorm``.
"""

import subprocess
import sys
from pathlib import Path

import pytest

from retrystorm.cli import main
from tests.support.cli import run_cli as run


def test_strategies_lists_every_strategy_and_budget():
    result = run("strategies")
    assert result.returncode == 0
    for name in ["exponential", "decorrelated", "grpc", "table", "smira", "tokens", "quota", "ratio", "adaptive"]:
        assert name in result.stdout


def test_models_lists_every_model():
    result = run("models")
    assert result.returncode == 0
    for name in ["exponential", "queue", "fixed"]:
        assert name in result.stdout


def test_plot_writes_a_png(tmp_path):
    output = tmp_path / "plot.png"
    result = run(
        "strategies", "plot", "fixed:100ms", "exponential:jitter=full", "smira", "--draws", "50", "-o", str(output)
    )
    assert result.returncode == 0, result.stderr
    assert output.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert output.stat().st_size > 10_000


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["strategies", "plot", "bogus"], "unknown strategy 'bogus'; valid:"),
        (["strategies", "plot", "exponential:factor=0.5"], "factor: got 0.5, expected a number >= 1"),
        (["strategies", "plot", "fixed:100"], "add a unit"),
        (["strategies", "plot", "fixed", "--think-time", "ten"], "think_time: got 'ten'"),
        (["strategies", "plot", "fixed", "--retries", "0"], "--retries"),
        (["nosuchcommand"], "no command 'nosuchcommand'; commands:"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, expected):
    result = run(*args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert expected in lines[0]
    assert "Traceback" not in result.stderr


def test_main_returns_normally_for_help(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    assert "strategies" in capsys.readouterr().out


@pytest.mark.live
def test_the_installed_command_lists_its_subcommands():
    command = Path(sys.executable).with_name("retrystorm")
    result = subprocess.run([command, "--help"], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert "strategies" in result.stdout
    assert "sim" in result.stdout


@pytest.mark.live
def test_python_m_retrystorm_says_a_bad_command_in_one_line_and_exits_2():
    result = subprocess.run(
        [sys.executable, "-m", "retrystorm", "nosuchcommand"], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "no command 'nosuchcommand'; commands:" in result.stderr
