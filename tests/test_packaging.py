"""What the distribution ships: every data file the code reads is package data in pyproject.toml.

setuptools puts a non-Python file in the wheel only when ``[tool.setuptools.package-data]``
names it; a file left out works in a checkout and is missing once installed. This reads
the same globs setuptools does, over the files in the packages' folders.
"""

import tomllib
from pathlib import Path

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
