"""The test tiers: which tests need what, decided exactly, and held to it at run time.

Markers (registered here, :data:`MARKERS`):

- ``live``: the test starts a process of its own (a server, Locust, the command line in a child, a browser, a
  container). Every test that uses a fixture of :data:`PROCESS_FIXTURES` is marked here, and a test marked
  ``signals`` or ``docker`` is ``live`` too.
- ``signals``: it sends real ``SIGSTOP``/``SIGCONT``/``SIGTERM``/``SIGKILL`` to processes it started.
- ``docker``: it needs a Docker engine.
- ``slow``: it costs seconds of CPU by design (operation counting, reproductions of published results).

The fast tier (``scripts/test --fast``) is ``-m "not live and not slow"``. A test that is not marked ``live`` and
still starts a process fails, naming the command, so the fast tier cannot quietly start one and the markers stay
exact: :func:`forbid_processes` replaces every way Python starts a process (``fork_exec`` under ``subprocess``
and ``multiprocessing``, ``os.fork``, ``os.posix_spawn``, ``os.system``...) for the length of such a test.
"""

from __future__ import annotations

import _posixsubprocess  # type: ignore[import-not-found]
import contextlib
import os
import platform
import subprocess
from collections.abc import Callable, Generator, Iterator
from typing import Any

import pytest

#: The markers of the tiers, registered by :func:`pytest_configure` (pytest runs with ``--strict-markers``).
MARKERS = {
    "live": "starts a process of its own (a server, Locust, the CLI in a child, a browser, a container); "
    "signals and docker imply it",
    "signals": "sends real SIGSTOP/SIGCONT/SIGTERM/SIGKILL to processes it started",
    "docker": "needs a Docker engine (CI starts one)",
    "slow": "costs seconds of CPU by design (operation counting, reproductions of published results); "
    "not in the fast tier",
}
#: Fixtures that start a process: a test that uses one (even through another fixture) is ``live``.
PROCESS_FIXTURES = frozenset(
    {
        "victim",  # tests/conftest.py: a sleeping process to pause
        "chaos_api",  # tests/chaos/conftest.py: ``retrystorm chaos serve``
        "processes",  # tests/loadgen/conftest.py: targets, Locust, web UIs, clusters
        "module_processes",
        "target_process",  # tests/target/service/conftest.py: ``retrystorm target``
        "stack",  # tests/stack/conftest.py: the compose stack
    }
)
#: Markers that imply ``live``.
IMPLY_LIVE = ("signals", "docker")

_SPAWNERS: tuple[tuple[Any, str], ...] = (
    (subprocess, "_fork_exec"),  # subprocess binds _posixsubprocess.fork_exec at import
    (_posixsubprocess, "fork_exec"),  # multiprocessing's spawn and forkserver
    (os, "fork"),
    (os, "forkpty"),
    (os, "posix_spawn"),
    (os, "posix_spawnp"),
    (os, "system"),
    (os, "execv"),
    (os, "execve"),
)


class StartedAProcessError(RuntimeError):
    """A test outside the ``live`` tier tried to start a process."""


def mark_tiers(items: list[pytest.Item]) -> None:
    """Add ``live`` to every test that starts a process through a fixture or is marked ``signals``/``docker``."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        implied = any(item.get_closest_marker(name) for name in IMPLY_LIVE)
        if (fixtures & PROCESS_FIXTURES or implied) and not item.get_closest_marker("live"):
            item.add_marker(pytest.mark.live)


@contextlib.contextmanager
def forbid_processes(nodeid: str, attempts: list[str]) -> Iterator[None]:
    """Within the block, starting a process raises :class:`StartedAProcessError` and is recorded in ``attempts``."""
    originals = [(owner, name, getattr(owner, name)) for owner, name in _SPAWNERS if hasattr(owner, name)]
    for owner, name, _ in originals:
        setattr(owner, name, _refusing(name, nodeid, attempts))
    try:
        yield
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)


def _refusing(name: str, nodeid: str, attempts: list[str]) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        command = _command(name, args)
        attempts.append(command)
        raise StartedAProcessError(
            f"{nodeid} started a process ({command}) but is not marked live: mark it @pytest.mark.live, "
            "or use click's CliRunner / an in-process server instead"
        )

    return refuse


def _command(name: str, args: tuple[Any, ...]) -> str:
    """What the refused call would have run, for the message."""
    if name in ("fork_exec", "_fork_exec") and args:
        argv = args[0]
        return " ".join(os.fsdecode(part) for part in argv) if argv else name
    if name in ("posix_spawn", "posix_spawnp", "execv", "execve") and len(args) > 1:
        return " ".join(os.fsdecode(part) for part in args[1])
    if name == "system" and args:
        return str(args[0])
    return f"os.{name}()"


# The hooks (imported by tests/conftest.py; a pytester run loads them with ``-p tests.support.tiers``).

#: The commands a test outside the ``live`` tier tried to start, not yet reported.
_ATTEMPTS_KEY = pytest.StashKey[list[str]]()


def pytest_configure(config: pytest.Config) -> None:
    for name, meaning in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {meaning}")
    # The standard library runs ``uname -p`` the first time anything asks for the processor's name; ask now,
    # outside every test, so that first time does not land inside one.
    platform.processor()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_tiers(items)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    """Outside the ``live`` tier a test may not start a process, in its fixtures or its body."""
    if item.get_closest_marker("live"):
        return (yield)
    attempts: list[str] = []
    item.stash[_ATTEMPTS_KEY] = attempts
    with forbid_processes(item.nodeid, attempts):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, object, object]:
    """A test that tried to start a process fails, even if it caught the refusal."""
    report = yield
    recorded = item.stash.get(_ATTEMPTS_KEY, [])
    if recorded and isinstance(report, pytest.TestReport):
        if not report.failed:
            report.outcome = "failed"
            report.longrepr = (
                f"{item.nodeid} started a process but is not marked live: {recorded[0]}\n"
                "Mark it @pytest.mark.live (a test that needs a child process belongs to the live tier), "
                "or drive the code in-process (click's CliRunner, an in-process server)."
            )
        recorded.clear()  # one failed report per attempt, not one per phase after it
    return report
