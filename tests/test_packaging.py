"""What the distribution ships: its license and version, and every data file the code reads as package data.

setuptools puts a non-Python file in the wheel only when ``[tool.setuptools.package-data]``
names it; a file left out works in a checkout and is missing once installed. This reads
the same globs setuptools does, over the files in the packages' folders.
"""

import re
import tomllib
from pathlib import Path

import retrystorm
from tests.support.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("retrystorm", "chaos", "loadgen", "target", "experiment", "sim", "runner", "dashboards", "integrations")
#: Files inside a package folder that are not for the installed package, and why.
NOT_SHIPPED = {
    "dashboards/prometheus/debian.Dockerfile": "an image build file, built from the checkout by scripts/offline-images",
}


def package_data() -> set[str]:
    """The files (relative to the repository) that the package-data globs select."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    selected = set()
    for package, patterns in config.items():
        folder = ROOT / package.replace(".", "/")
        for pattern in patterns:
            selected |= {str(path.resolve().relative_to(ROOT)) for path in folder.glob(pattern) if path.is_file()}
    return selected


def data_files() -> set[str]:
    """Every non-Python file in the packages' folders (caches aside)."""
    found = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*"):  # the subpackages' folders, not their links in retrystorm/
            if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in path.parts:
                found.add(str(path.relative_to(ROOT)))
    return found


def test_every_data_file_is_package_data_or_left_out_on_purpose():
    shipped = package_data()
    missing = data_files() - shipped - set(NOT_SHIPPED)
    assert not missing, f"add to [tool.setuptools.package-data] in pyproject.toml: {sorted(missing)}"
    assert not shipped & set(NOT_SHIPPED)


def test_what_the_code_reads_at_run_time_is_selected():
    shipped = package_data()
    for needed in (
        "experiment/scenario/shipped/smira-laptop.yaml",
        "target/openapi.json",
        "loadgen/chaos_tab.js",
        "dashboards/grafana/dashboards/retrystorm.json",
        "dashboards/grafana/provisioning/datasources/prometheus.yaml",
        "dashboards/prometheus/prometheus.yml",
    ):
        assert needed in shipped, needed


def project() -> dict:
    """``pyproject.toml``'s ``[project]`` table and the setuptools settings, as one dict."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return {**config["project"], "setuptools": config["tool"]["setuptools"]}


def test_the_version_is_written_once_in_the_package():
    config = project()
    assert "version" not in config, "pyproject.toml reads the version from retrystorm.__version__; do not repeat it"
    assert "version" in config["dynamic"]
    assert config["setuptools"]["dynamic"]["version"] == {"attr": "retrystorm.__version__"}


def test_version_option_prints_the_package_version():
    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"retrystorm, version {retrystorm.__version__}"


def test_the_license_file_is_the_apache_2_text_the_metadata_names():
    config = project()
    assert config["license"] == "Apache-2.0"
    assert config["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    for section in ("1. Definitions.", "9. Accepting Warranty or Additional Liability.", "END OF TERMS AND CONDITIONS"):
        assert section in text, section


def test_the_changelog_keeps_an_unreleased_section_in_keep_a_changelog_form():
    lines = (ROOT / "CHANGELOG.md").read_text().splitlines()
    unreleased = lines.index("## [Unreleased]")
    released = next(i for i, line in enumerate(lines) if line.startswith("## [") and i > unreleased)
    headings = [line for line in lines[unreleased:released] if line.startswith("### ")]
    kinds = [f"### {name}" for name in ("Added", "Changed", "Deprecated", "Removed", "Fixed", "Security")]
    assert headings, "## [Unreleased] lists its changes under ### Added, ### Changed, ..."
    assert headings == sorted(headings, key=kinds.index), f"headings in Keep a Changelog's order: {kinds}"
    assert f"## [{retrystorm.__version__}]" in lines


def pinned() -> dict[str, str]:
    """constraints.txt's pins, by normalized distribution name."""
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    return pins


def test_constraints_pin_every_requirement_of_the_test_install_to_one_version():
    config = project()
    requirements = [*config["dependencies"], *(r for rs in config["optional-dependencies"].values() for r in rs)]
    names = {re.sub(r"[-_.]+", "-", re.split(r"[\s\[<>=!~;]", r, maxsplit=1)[0]).lower() for r in requirements}
    pins = pinned()
    assert all(version and "*" not in version for version in pins.values())
    assert not names - {"retrystorm"} - set(pins), "run scripts/refresh-constraints and commit constraints.txt"
    assert "retrystorm" not in pins
    assert "-c constraints.txt" in (ROOT / "scripts" / "test").read_text()


def test_mypy_is_strict_over_the_whole_package_and_no_module_relaxes_it():
    # `strict` is a global option of mypy: set in a [[tool.mypy.overrides]] table, it turns strict on for every
    # module, not for the ones listed (python/mypy#11401), so a per-module list only looks narrower than it is.
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert config.get("strict") is True, "[tool.mypy] strict = true: the whole package is type-checked strictly"
    relaxed = [
        (override["module"], key)
        for override in config.get("overrides", [])
        for key, value in override.items()
        if key == "ignore_errors" or (key.startswith(("disallow_", "warn_", "strict", "check_")) and value is False)
    ]
    assert not relaxed, f"per-module relaxations of strict: {relaxed}"
