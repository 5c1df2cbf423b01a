"""A core install (``pip install retrystorm``, no extra) runs the simulator, the scenario tools, the strategies and the
chaos controller; a command that needs an extra says which in one line and exits 2, having written nothing.

Each command runs in a fresh interpreter in which the extras' packages cannot be imported (an import hook raises
``ModuleNotFoundError`` for them, as an install without them does), so what a command imports is what it would import
there. The wheel in a clean venv is tests/test_distribution.py's.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from retrystorm.extras import EXTRAS

pytestmark = pytest.mark.live

#: The top-level import names of every extra's packages, from the one list of them (retrystorm/extras.py).
EXTRA_MODULES = tuple(sorted({module.partition(".")[0] for extra in EXTRAS.values() for module in extra.modules}))
CORE_ONLY = f"""
import importlib.abc, sys
class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {EXTRA_MODULES!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, Absent())
from retrystorm.cli import main
main(sys.argv[1:])
"""


def core_only(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CORE_ONLY, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.parametrize(
    "args",
    [
        ("sim", "run", "--users", "50", "--duration", "20s", "--outage", "5s@5s", "-s", "smira", "--json"),
        ("strategies",),
        ("scenarios",),
        ("chaos", "serve", "--help"),
        ("run", "smira-laptop", "--dry-run"),
    ],
    ids=lambda args: " ".join(args[:2]),
)
def test_the_core_runs_without_any_extra(args: tuple[str, ...], tmp_path: Path):
    done = core_only(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("args", "extra", "module"),
    [
        (("target",), "live", "httptools"),
        (("demo",), "live", "locust"),
        (("sim", "run", "--users", "50", "--duration", "10s", "-s", "smira", "--out", "out"), "report", "matplotlib"),
        (("strategies", "plot", "smira", "--output", "out.png"), "report", "matplotlib"),
    ],
    ids=lambda value: " ".join(value[:2]) if isinstance(value, tuple) else None,
)
def test_a_command_that_needs_a_missing_extra_says_which_in_one_line(
    args: tuple[str, ...], extra: str, module: str, tmp_path: Path
):
    done = core_only(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"needs the {extra} extra" in done.stderr
    assert f"{module} is missing" in done.stderr
    assert done.stderr.rstrip().endswith(f"pip install 'retrystorm[{extra}]'")
    assert not list(tmp_path.iterdir()), "a command that stops for a missing extra writes nothing"
