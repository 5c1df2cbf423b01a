"""``import locust`` patches the process with gevent: asyncio code must never import it.

Imports every module of every package but loadgen/, plus the Locust-free
modules of loadgen/ in a fresh interpreter, and checks that neither Locust nor gevent
came along.
"""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: loadgen modules that run inside Locust only (they import locust, gevent or flask).
LOCUST_ONLY = {
    "loadgen.locustfile", "loadgen.user", "loadgen.plugin", "loadgen.web", "loadgen.storm_view", "loadgen.spike_player",
}  # fmt: skip

PROBE = textwrap.dedent(
    """
    import importlib, json, pkgutil, sys
    skip = set(json.loads(sys.argv[1]))
    imported = []
    for name in ("retrystorm", "chaos", "target", "experiment", "sim", "runner", "loadgen", "dashboards"):
        try:
            package = importlib.import_module(name)
        except ModuleNotFoundError:
            continue
        imported.append(name)
        for info in pkgutil.walk_packages(package.__path__, name + "."):
            if info.name in skip or info.name.endswith("__main__"):
                continue
            importlib.import_module(info.name)
            imported.append(info.name)
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in ("locust", "gevent", "geventhttpclient"))
    print(json.dumps({"imported": imported, "leaked": leaked}))
    """
)


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
    for module in ("target", "loadgen.strategies", "loadgen.options", "loadgen.aggregate", "loadgen.storm_sources"):
        assert module in report["imported"]


def test_the_locust_modules_are_the_ones_skipped():
    modules = {f"loadgen.{path.stem}" for path in (ROOT / "loadgen").glob("*.py")}
    assert modules >= LOCUST_ONLY
    source = {name: (ROOT / "loadgen" / f"{name.split('.')[1]}.py").read_text() for name in LOCUST_ONLY}
    for name, text in source.items():
        assert "locust" in text or "gevent" in text or "flask" in text, name
