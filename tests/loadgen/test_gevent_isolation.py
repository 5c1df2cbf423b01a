"""``import locust`` patches the process with gevent: asyncio code must never import it.

Imports every module of every package but loadgen/, plus the Locust-free
modules of loadgen/ in a fresh interpreter, and checks that neither Locust nor gevent
came along.
"""

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: loadgen modules that run inside Locust only (they import locust, gevent or flask).
LOCUST_ONLY = {
    f"retrystorm.loadgen.{name}"
    for name in (
        "locustfile", "user", "plugin", "web", "storm_view", "spike_player", "grpc_user", "grpc_locustfile",
        "urllib3_user", "http_clients",
    )
}  # fmt: skip

PROBE = textwrap.dedent(
    """
    import importlib, json, pkgutil, sys
    skip = set(json.loads(sys.argv[1]))
    imported = []
    package = importlib.import_module("retrystorm")
    for info in pkgutil.walk_packages(package.__path__, "retrystorm."):
        if info.name in skip or info.name.endswith("__main__"):
            continue
        importlib.import_module(info.name)
        imported.append(info.name)
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in ("locust", "gevent", "geventhttpclient"))
    print(json.dumps({"imported": imported, "leaked": leaked}))
    """
)


@pytest.mark.live  # a fresh interpreter: what an import pulls in
def test_no_locust_or_gevent_outside_the_locust_process():
    result = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(sorted(LOCUST_ONLY))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["leaked"] == []
    for module in (
        "retrystorm.target",
        "retrystorm.loadgen.strategies",
        "retrystorm.loadgen.options",
        "retrystorm.loadgen.aggregate",
        "retrystorm.loadgen.storm_sources",
    ):
        assert module in report["imported"]


def test_the_locust_modules_are_the_ones_skipped():
    modules = {f"retrystorm.loadgen.{path.stem}" for path in (ROOT / "loadgen").glob("*.py")}
    assert modules >= LOCUST_ONLY
    # a module that imports Locust or gevent when it is imported, itself or through another such module of
    # loadgen/, must be listed, or the live test above fails on it
    texts = {f"retrystorm.loadgen.{path.stem}": path.read_text() for path in (ROOT / "loadgen").glob("*.py")}
    importing = {
        name
        for name, text in texts.items()
        if re.search(r"^(import|from) (locust|gevent|geventhttpclient)\b", text, re.MULTILINE)
    }
    while grown := {
        name
        for name, text in texts.items()
        if name not in importing
        and any(re.search(rf"^from {re.escape(other)} import", text, re.MULTILINE) for other in importing)
    }:
        importing |= grown
    assert importing <= LOCUST_ONLY, sorted(importing - LOCUST_ONLY)
    source = {name: (ROOT / "loadgen" / f"{name.rsplit('.', 1)[1]}.py").read_text() for name in LOCUST_ONLY}
    for name, text in source.items():
        assert "locust" in text or "gevent" in text or "flask" in text, name
