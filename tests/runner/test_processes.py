"""A child process that fails: the first line of its own error, not the tail of its traceback."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from retrystorm.runner.local.processes import ManagedProcess, first_error

#: The head of gunicorn 27's log for ``gunicorn -w 2 nosuchapp:app`` (paths shortened): the cause is line 32,
#: and more lines follow it (the next worker's boot and traceback, the arbiter's shutdown).
GUNICORN_LOG = Path(__file__).with_name("gunicorn_missing_app.log").read_text()


def test_the_first_exception_line_is_the_cause():
    assert first_error(GUNICORN_LOG) == (32, "ModuleNotFoundError: No module named 'nosuchapp'")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("starting\nError: listen EADDRINUSE: address already in use :::8000\n  at Server\n", (2, "Error: listen")),
        ("2026 FATAL:  could not bind IPv4 address\nLOG:  shut down\n", (1, "2026 FATAL:  could not bind")),
        ("raise ValueError(x)\nValueError: bad\n", (2, "ValueError: bad")),
        ("all is well\nserving on 8000\n", None),
    ],
)
def test_other_error_lines_are_found_and_a_clean_log_has_none(text, expected):
    found = first_error(text)
    if expected is None:
        assert found is None
    else:
        assert found is not None and found[0] == expected[0] and found[1].startswith(expected[1])


@pytest.mark.live
def test_a_failed_process_names_its_error_on_one_line(tmp_path):
    code = "import sys; print('booting'); print('Traceback ...'); print('KeyError: missing'); sys.exit(4)"
    process = ManagedProcess("the command", [sys.executable, "-c", code], tmp_path / "x.log")
    status = process.popen.wait(timeout=30)
    assert status == 4
    message = str(process.failure("exited before the service was ready"))
    assert message == (
        f"the command exited before the service was ready: exited with status 4: KeyError: missing "
        f"(line 3 of {tmp_path / 'x.log'})"
    )


@pytest.mark.live
def test_a_child_gets_this_environment_without_the_projects_secrets(tmp_path, monkeypatch):
    """A user's service read RETRYSTORM_CHAOS_TOKEN and RETRYSTORM_ADMIN_TOKEN from the runner's environment."""
    for name in ("RETRYSTORM_CHAOS_TOKEN", "RETRYSTORM_ADMIN_TOKEN", "RETRYSTORM_WEB_TOKEN", "GRAFANA_PASSWORD"):
        monkeypatch.setenv(name, "s3cret")
    monkeypatch.setenv("RETRYSTORM_KEEP_ME", "kept")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    code = "import json, os; print(json.dumps(dict(os.environ)))"
    for tools_on_path in (False, True):
        log = tmp_path / f"env-{tools_on_path}.log"
        process = ManagedProcess("the command", [sys.executable, "-c", code], log, tools_on_path=tools_on_path)
        assert process.popen.wait(timeout=30) == 0
        environment = json.loads(log.read_text())
        assert "s3cret" not in environment.values()
        assert environment["RETRYSTORM_KEEP_ME"] == "kept"
        assert environment["PATH"].startswith(str(Path(sys.executable).parent)) is tools_on_path
