"""Spec flags of every command refuse infinity, absurd sizes and absurd lengths: exit 2, one line."""

import pytest

from retrystorm.cli import main

ABSURD = {
    "400-digit duration": "1" * 400 + "s",
    "90-digit duration": "9" * 90 + "s",
    "5000-digit number": "1" * 5000,
    "1e309": "1e309",
    "inf": "inf",
}
ONE_MB = "x" * 1_000_000
#: One representative spec flag per command, with where the absurd value goes.
COMMANDS = {
    "strategies plot": ["strategies", "plot", "uniform:max={}"],
    "target --model": ["target", "--model", "exponential:limit={}"],
    "target --model duration": ["target", "--model", "fixed:base_delay={}"],
    "sim run --strategy": ["sim", "run", "--strategy", "smira:factor={}"],
    "sim run --model": ["sim", "run", "--strategy", "fixed:1s", "--model", "queue:tick={}"],
}


def run_main(capsys, argv: list[str]) -> tuple[int, list[str], str]:
    with pytest.raises(SystemExit) as done:
        main(argv)
    captured = capsys.readouterr()
    return done.value.code, captured.err.strip().splitlines(), captured.out


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("absurd", list(ABSURD))
def test_absurd_spec_values_exit_2_with_one_line(capsys, command, absurd):
    argv = [arg.format(ABSURD[absurd]) for arg in COMMANDS[command]]
    code, lines, out = run_main(capsys, argv)
    assert code == 2
    assert len(lines) == 1, lines
    assert "Traceback" not in lines[0]
    assert len(lines[0]) < 500
    assert out == ""


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_one_megabyte_spec_exits_2_with_one_line(capsys, command):
    argv = [*COMMANDS[command][:-1], ONE_MB]
    code, lines, _ = run_main(capsys, argv)
    assert code == 2
    assert len(lines) == 1
    assert "expected a spec of at most 10000 characters" in lines[0]


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["strategies", "plot", "fixed:1e309s"], ["delay", "finite"]),
        (["target", "--model", "fixed:base_delay=forever"], ["base_delay: got inf, expected a finite duration"]),
        (["target", "--model", "exponential:limit=" + "1" * 5000], ["limit", "5000 characters", "<= 1000000000"]),
        (["sim", "run", "--strategy", "uniform:max=" + "9" * 400 + "s"], ["max", "401 characters"]),
        (["sim", "run", "--strategy", "fixed:1s", "--deadline", "inf"], ["--deadline", "finite"]),
    ],
)
def test_messages_name_the_field_and_what_is_accepted(capsys, argv, words):
    code, lines, _ = run_main(capsys, argv)
    assert code == 2
    assert len(lines) == 1
    for word in words:
        assert word in lines[0]
