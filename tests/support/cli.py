"""The ``retrystorm`` command in this process, through click's ``CliRunner``: what a subprocess test checked, in
milliseconds instead of an interpreter's start-up.

:func:`run_cli` calls the real entry point, :func:`retrystorm.cli.main`, so its error handling (one line and exit 2
for a user's mistake, 3 for the environment) is what is tested; stdout and stderr are captured apart. A test that
needs a fresh interpreter (what an import pulls in, an installed console script) still starts one, marked ``live``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
from collections.abc import Iterator, Mapping
from pathlib import Path

from click.testing import CliRunner

from retrystorm.cli import main


@dataclasses.dataclass(frozen=True)
class CliResult:
    """What the command did, named as :class:`subprocess.CompletedProcess` names it."""

    returncode: int
    stdout: str
    stderr: str


def run_cli(*args: object, env: Mapping[str, str | None] | None = None, cwd: Path | None = None) -> CliResult:
    """``retrystorm ARGS`` in this process, in ``cwd`` and with ``env`` added (``None`` removes a variable)."""
    runner = CliRunner()
    with _signal_handlers_kept(), runner.isolation(env=env) as (stdout, stderr, _), contextlib.chdir(cwd or Path.cwd()):
        try:
            main([str(arg) for arg in args])
        except SystemExit as done:
            code = done.code
        else:  # main() always exits; a return would be a bug worth seeing
            raise AssertionError("retrystorm.cli.main returned instead of exiting")
    returncode = code if isinstance(code, int) else (0 if code is None else 1)
    return CliResult(returncode, stdout.getvalue().decode(), stderr.getvalue().decode())


@contextlib.contextmanager
def _signal_handlers_kept() -> Iterator[None]:
    """A command that installs handlers (a run's SIGINT/SIGTERM undo) leaves the test process's as they were."""
    kept = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for number, handler in kept.items():
            signal.signal(number, handler)
