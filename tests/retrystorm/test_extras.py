"""The extras: what each brings matches pyproject.toml, every package the code imports is declared, and a missing one
is one line naming the extra to install."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest

from retrystorm import extras
from retrystorm.extras import EXTRAS, MissingExtraError, missing_extra_of, require_extra

ROOT = Path(__file__).resolve().parents[2]
#: The folders the wheel installs (retrystorm/ and the folders it links in).
PACKAGE_FOLDERS = (
    "retrystorm",
    "chaos",
    "loadgen",
    "target",
    "experiment",
    "sim",
    "runner",
    "dashboards",
    "integrations",
)
#: Packages the core install must not bring: they come with the live and report extras.
NOT_CORE = {"locust", "gevent", "geventhttpclient", "flask", "httptools", "matplotlib", "jinja2", "markupsafe"}


def normalized(name: str) -> str:
    """A distribution's name as the package index compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    return normalized(re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0])


def declared() -> tuple[set[str], dict[str, set[str]]]:
    """The core's distributions, and each extra's (without the ones for working on retrystorm itself)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {requirement_name(r) for r in project["dependencies"]}
    optional = {
        name: {requirement_name(r) for r in requirements if not r.startswith("retrystorm")}
        for name, requirements in project["optional-dependencies"].items()
        if name not in ("test", "docs")
    }
    return core, optional


def imported_top_level_names() -> dict[str, str]:
    """Every third-party top-level module the package's code imports, with one file that does."""
    found: dict[str, str] = {}
    for folder in PACKAGE_FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.partition(".")[0]
                    if top not in sys.stdlib_module_names and top not in ("retrystorm", "_posixsubprocess"):
                        found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def test_every_imported_package_is_declared_in_the_core_or_an_extra():
    core, optional = declared()
    everything = core.union(*optional.values())
    owners = importlib.metadata.packages_distributions()
    undeclared = {
        module: (sorted(owners.get(module, ["?"])), where)
        for module, where in imported_top_level_names().items()
        if not {normalized(d) for d in owners.get(module, [])} & everything
    }
    assert not undeclared, f"declare in pyproject.toml (module: distributions, a file importing it): {undeclared}"


def test_the_core_install_brings_neither_locust_nor_plots():
    core, optional = declared()
    assert not core & NOT_CORE
    assert optional["live"] | optional["report"] >= NOT_CORE
    assert {"locust", "httptools"} <= optional["live"]
    assert {"matplotlib", "jinja2", "markupsafe"} <= optional["report"]


def test_each_extra_a_command_can_ask_for_is_declared():
    _, optional = declared()
    assert set(EXTRAS) <= set(optional), "an extra named in retrystorm/extras.py but not in pyproject.toml"


def test_a_missing_module_of_an_extra_names_the_extra_to_install():
    missing = missing_extra_of(ModuleNotFoundError("No module named 'matplotlib'", name="matplotlib"), "retrystorm sim")
    assert missing is not None
    assert missing.exit_code == 2
    assert str(missing) == (
        "retrystorm sim needs the report extra (matplotlib and Jinja, for plots and report.html; matplotlib is "
        "missing): pip install 'retrystorm[report]'"
    )
    submodule = ModuleNotFoundError("No module named 'locust.runners'", name="locust.runners")
    assert "pip install 'retrystorm[live]'" in str(missing_extra_of(submodule, "retrystorm run"))


def test_a_missing_module_of_no_extra_is_left_alone():
    assert missing_extra_of(ModuleNotFoundError("No module named 'nowhere'", name="nowhere"), "retrystorm") is None
    assert missing_extra_of(ModuleNotFoundError("No module named 'loc'", name="loc"), "retrystorm") is None


def test_require_extra_passes_when_installed_and_names_the_extra_when_not(monkeypatch: pytest.MonkeyPatch):
    require_extra("live", "retrystorm target")  # the test install has every extra
    monkeypatch.setattr(extras, "module_installed", lambda name: name != "httptools")
    with pytest.raises(MissingExtraError, match=r"^retrystorm target needs the live extra .*httptools is missing\)"):
        require_extra("live", "retrystorm target")
