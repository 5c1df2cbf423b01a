"""Consoles that are not terminals are wide: a piped table is not cut to 80 columns."""

import io

from click.testing import CliRunner
from rich.console import Console
from rich.table import Table

from retrystorm.cli import cli
from retrystorm.console import PIPE_WIDTH, WideWhenPiped, wide
from retrystorm.errors import did_you_mean

LONG = "Exponential backoff: jitter(min(max, base * factor ** (n - 1)))."


def table_text(console: Console) -> str:
    table = Table("name", "what it does", "parameters")
    table.add_row("exponential", LONG, "base=100ms  delay before the first retry (duration >= 0 and <= 24h)")
    console.print(table)
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_a_piped_console_is_wide_unless_columns_is_set(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    console = WideWhenPiped(file=io.StringIO())
    assert console.width == PIPE_WIDTH
    assert LONG in table_text(console)  # one line, not wrapped
    monkeypatch.setenv("COLUMNS", "60")
    assert WideWhenPiped(file=io.StringIO()).width == 60


def test_a_plain_console_made_wide_keeps_its_file(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    narrow = Console(file=io.StringIO(), width=80)
    assert LONG not in table_text(narrow)  # what a pipe got before: cut and wrapped
    widened = wide(Console(file=io.StringIO(), width=80))
    assert LONG in table_text(widened)


def test_strategies_piped_keeps_every_column(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    result = CliRunner().invoke(cli, ["strategies"])
    assert result.exit_code == 0, result.output
    assert LONG in result.output
    assert max(len(line) for line in result.output.splitlines()) > 80


def test_did_you_mean():
    assert did_you_mean("smria", ["fixed:100ms", "smira"]) == " (did you mean 'smira'?)"
    assert did_you_mean("fix", ["fixed:100ms", "smira"]) == " (did you mean 'fixed:100ms'?)"
    assert did_you_mean("SMIRA", ["smira"]) == " (did you mean 'smira'?)"
    assert did_you_mean("zzz", ["smira"]) == ""
    assert did_you_mean("x" * 500, ["x"]) == ""
    assert did_you_mean(None, ["x"]) == ""
