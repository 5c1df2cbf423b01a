"""scenarios/README.md lists every shipped scenario, each linked to its file, and nothing else."""

from __future__ import annotations

import re
from pathlib import Path

from retrystorm.experiment.scenario.catalog import shipped_names

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "scenarios" / "README.md"
_ROW = re.compile(r"^\| \[`(?P<name>[\w-]+)`\]\((?P<target>[^)]+)\) \|", re.MULTILINE)


def test_the_readme_lists_every_shipped_scenario_once_linked_to_its_file() -> None:
    rows = [(match["name"], match["target"]) for match in _ROW.finditer(README.read_text(encoding="utf-8"))]
    assert sorted(name for name, _ in rows) == shipped_names()
    for name, target in rows:
        linked = (README.parent / target).resolve()
        assert linked == (ROOT / "experiment" / "scenario" / "shipped" / f"{name}.yaml").resolve(), name
        assert linked.is_file(), name
