"""Where retrystorm runs: Linux, with Python 3.11 or later; elsewhere, the one line that says so.

The simulator, the map, the strategies and the scenario tools are pure Python and may work on any operating system
(only Linux is tested). The commands that freeze, throttle or read processes need Linux: they signal a process
through a pidfd (``os.pidfd_open``), read ``/proc`` and write cgroups. On another system such a command is refused
before it starts, in one line naming where it runs (exit 2), instead of failing halfway through a run.

``python -m retrystorm`` checks the Python version before it imports anything else, so an older Python gets that
line rather than a ``SyntaxError`` or an ``ImportError`` from deep inside (an install through pip cannot get there:
``requires-python`` refuses it). So this module keeps to what old Pythons parse, and imports only ``sys``.
"""

from __future__ import annotations

import sys

#: The oldest Python retrystorm runs on (``requires-python`` in pyproject.toml says the same).
MIN_PYTHON = (3, 11)
#: The commands that need Linux: they freeze, throttle or read processes.
LINUX_COMMANDS = frozenset({"chaos", "demo", "run", "target"})
#: Where the tool runs, as every refusal ends.
WHERE = "retrystorm runs on Linux with Python >= 3.11"


def python_problem(version: tuple[int, ...] | None = None) -> str | None:
    """The one line for a Python older than :data:`MIN_PYTHON` (this one's by default), else ``None``."""
    version = tuple(sys.version_info[:3]) if version is None else version
    if version[:2] >= MIN_PYTHON:
        return None
    found = ".".join(str(part) for part in version[:3])
    return (
        f"Python {found} is too old: {WHERE}; make a virtual environment with Python 3.11 or later "
        "(python3.11 -m venv .venv) and install retrystorm into it"
    )


def linux_problem(command: str, platform: str | None = None) -> str | None:
    """The one line for ``command`` (as typed) on a system other than Linux (this one by default), else ``None``."""
    platform = sys.platform if platform is None else platform
    if platform.startswith("linux"):
        return None
    return (
        f"{command} needs Linux (it signals processes through pidfds, reads /proc and writes cgroups), "
        f"not {platform}: {WHERE}; use a Linux machine, VM or container "
        "(the simulator, the map, the strategies and the scenarios run here, untested)"
    )


def command_problem(argv: list[str], platform: str | None = None) -> str | None:
    """The one line refusing the command in ``argv`` (the arguments after ``retrystorm``) on this system, else ``None``.

    Only the first word that is not an option names the command; ``--help`` and ``--version`` always run.
    """
    if any(word in ("-h", "--help", "--version") for word in argv):
        return None
    command = next((word for word in argv if not word.startswith("-")), None)
    if command not in LINUX_COMMANDS:
        return None
    return linux_problem(f"retrystorm {command}", platform)
