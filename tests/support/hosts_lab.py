"""A lab of hosts running retrystorm: the target and its chaos agent on ``app``, workers on theirs, the runner on
``runner`` (network namespaces, :mod:`tests.support.netns`); and a whole scenario run across them.

Ports are fixed inside the lab's own namespaces, where nothing else listens. Every process started here runs inside
the lab, so the lab's removal kills it; :func:`hosts_lab` then reaps each one and checks that no namespace of the lab
remains, on every exit path.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from tests.support.netns import Lab, namespaces

TOKEN = "lab-token"
ADMIN = "lab-admin"
MASTER_PORT, TARGET_PORT, AGENT_PORT = 5557, 8070, 8071


def start(lab: Lab, host: str, log: Path, argv: list[str]) -> subprocess.Popen[bytes]:
    """``retrystorm ARGV`` on ``host``, its output in ``log``."""
    with log.open("wb") as out:
        return lab[host].popen([sys.executable, "-m", "retrystorm", *argv], stdout=out, stderr=subprocess.STDOUT)


@contextlib.contextmanager
def hosts_lab(folder: Path, workers: Sequence[str], agent_options: Callable[[Lab, int], list[str]]) -> Iterator[Lab]:
    """Hosts ``runner``, each of ``workers`` and ``app``: ``retrystorm target`` and ``chaos serve`` (with
    ``agent_options(lab, target_pid)``) on ``app``, a worker on each worker host; all removed after."""
    started: list[subprocess.Popen[bytes]] = []
    lab = Lab(["runner", *workers, "app"])
    try:
        with lab:
            app = lab["app"].address
            target = start(lab, "app", folder / "target.log", [
                "target", "--model", "fixed", "--host", app, "--port", str(TARGET_PORT), "--admin-token", ADMIN,
            ])  # fmt: skip
            started.append(target)
            started.append(start(lab, "app", folder / "agent.log", [
                "chaos", "serve", "--host", app, "--port", str(AGENT_PORT), "--token", TOKEN,
                "--journal", str(folder / "agent.jsonl"), *agent_options(lab, target.pid),
            ]))  # fmt: skip
            assert lab["runner"].wait_listening(app, AGENT_PORT), "the agent never listened"  # asked first thing
            master = f"{lab['runner'].address}:{MASTER_PORT}"
            started += [start(lab, host, folder / f"{host}.log", ["worker", "--master", master]) for host in workers]
            yield lab
    finally:
        for process in started:  # the lab's removal killed every process inside its namespaces: reap ours
            process.wait(timeout=30)
        assert not [name for name in namespaces() if name.startswith(lab.tag)], "the lab's namespaces remain"


def run_scenario(lab: Lab, folder: Path, text: str) -> dict[str, Any]:
    """``retrystorm run`` on ``runner`` of the scenario ``text`` (formatted with the lab's addresses and ports);
    asserts exit 0 and returns its ``results.json``."""
    addresses = {"runner": lab["runner"].address, "app": lab["app"].address}
    ports = {"master_port": MASTER_PORT, "target_port": TARGET_PORT, "agent_port": AGENT_PORT}
    scenario = folder / "scenario.yaml"
    scenario.write_text(text.format(**addresses, **ports))
    env = {**os.environ, "RETRYSTORM_CHAOS_TOKEN": TOKEN, "RETRYSTORM_ADMIN_TOKEN": ADMIN}
    run = subprocess.run(
        lab["runner"].argv(
            sys.executable, "-m", "retrystorm", "run", str(scenario), "--out", str(folder / "run"),
            "--journal", str(folder / "runner.jsonl"),
        ),
        capture_output=True, text=True, timeout=180, env=env, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    return dict(json.loads((folder / "run" / "results.json").read_text()))
