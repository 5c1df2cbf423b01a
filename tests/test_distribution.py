"""The distribution as a user gets it: the sdist is built from the checkout, the wheel from the sdist (so the sdist
holds everything a build needs), and the wheel is installed into a clean virtual environment with the core's
dependencies only, at constraints.txt's versions. There, only ``retrystorm`` is importable of ours, the command
runs, the simulator runs, and a command that needs an extra says which.

Both builds run offline, with the setuptools of the test install (``--no-build-isolation``); the clean venv takes the
core's dependencies from the package index (or pip's cache), pinned by constraints.txt.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import retrystorm

pytestmark = [pytest.mark.live, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("chaos", "loadgen", "target", "experiment", "sim", "runner", "dashboards", "integrations")


def run(*argv: object, cwd: Path | None = None, timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(arg) for arg in argv], cwd=cwd, capture_output=True, text=True, timeout=timeout_s, check=False
    )


def built(what: str, source: Path, out: Path) -> Path:
    """Build ``what`` (``sdist`` or ``wheel``) of the project in ``source`` into ``out``; the file it wrote."""
    code = f"from setuptools import build_meta; print(build_meta.build_{what}({str(out)!r}))"
    done = run(sys.executable, "-c", code, cwd=source)
    assert done.returncode == 0, done.stderr[-3000:]
    return out / done.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    sdist = built("sdist", ROOT, out)
    with tarfile.open(sdist) as archive:
        archive.extractall(out / "unpacked", filter="data")
    (source,) = (out / "unpacked").iterdir()
    return built("wheel", source, out)


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("venv")
    assert run(sys.executable, "-m", "venv", folder).returncode == 0
    done = run(folder / "bin" / "python", "-m", "pip", "install", "--quiet", "-c", ROOT / "constraints.txt", wheel)
    assert done.returncode == 0, done.stderr[-3000:]
    return folder


def test_the_wheel_installs_one_top_level_package_and_the_license(wheel: Path):
    names = zipfile.ZipFile(wheel).namelist()
    dist_info = f"retrystorm-{retrystorm.__version__}.dist-info"
    assert {name.split("/")[0] for name in names} == {"retrystorm", dist_info}
    assert f"{dist_info}/licenses/LICENSE" in names
    for folder in FOLDERS:  # the repository's folders, inside the namespace
        assert f"retrystorm/{folder}/__init__.py" in names, folder
    assert "retrystorm/experiment/scenario/shipped/smira-laptop.yaml" in names


def test_the_installed_command_runs_the_core(venv: Path):
    command = venv / "bin" / "retrystorm"
    version = run(command, "--version")
    assert version.stdout.strip() == f"retrystorm, version {retrystorm.__version__}", version.stderr
    for args in (("--help",), ("sim", "smira", "--help")):
        done = run(command, *args)
        assert done.returncode == 0, done.stderr
    simulated = run(
        command, "sim", "run", "--users", "50", "--duration", "20s", "--outage", "5s@5s", "-s", "smira", "--json"
    )
    assert simulated.returncode == 0, simulated.stderr
    assert '"experiment": "ad-hoc"' in simulated.stdout


def test_only_the_namespace_is_importable_and_extras_are_named(venv: Path, tmp_path: Path):
    python = venv / "bin" / "python"
    assert run(python, "-c", "import retrystorm.chaos.controller", cwd=tmp_path).returncode == 0
    for generic in ("chaos", "sim", "runner", "target"):
        done = run(python, "-c", f"import {generic}", cwd=tmp_path)
        assert done.returncode == 1, generic
        assert f"No module named '{generic}'" in done.stderr
    target = run(venv / "bin" / "retrystorm", "target", cwd=tmp_path)
    assert target.returncode == 2
    assert target.stderr.rstrip().endswith("pip install 'retrystorm[live]'"), target.stderr
