"""What the torture benches share: processes started in sessions of their own and killed by group, the chaos
API on loopback, and the deadline a journal gives a fault (``bench/torture.py``, ``bench/torture_throttles.py``).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path
from typing import Any

from benchlib import free_port, wait_until

from retrystorm.chaos.journal import Journal
from tests.support.http import answers
from tests.support.processes import kill_group

PYTHON = sys.executable
#: A controller whose dead-man switch arms nothing: the state of things before the watchdog. Its argv:
#: ``pause|throttle process|docker PID|PROJECT SECONDS JOURNAL [CAPACITY]``; it prints the op once the
#: fault is in place and then sleeps until it is killed.
BASELINE = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from retrystorm.chaos.controller import OutageController
    from retrystorm.chaos.journal import Journal
    from retrystorm.chaos.targets import FaultTarget

    class Nothing:
        def arm(self, ref, outage_id, hold_s, *, fault, undo):
            class Armed:
                def disarm(self):
                    pass
                def count_from(self, start_monotonic):
                    pass
            return Armed()

    async def main():
        op, kind, what, seconds, journal = sys.argv[1:6]
        if kind == "process":
            from retrystorm.chaos.backends import ProcessBackend
            backend = ProcessBackend({"victim": int(what)})
        else:
            from retrystorm.chaos.backends.docker import DockerBackend
            backend = DockerBackend(project=what)
        controller = OutageController(Journal(Path(journal)), dead_man=Nothing(), recovery_backends=[backend])
        target = FaultTarget("victim", backend)
        if op == "pause":
            await controller.pause(target, float(seconds))
        else:
            await controller.throttle(target, float(sys.argv[6]), float(seconds))
        print(op, flush=True)
        await asyncio.sleep(3600)

    asyncio.run(main())
    """
)


def wait(predicate, timeout_s: float, what: str):
    """``predicate()``'s first true answer, polled every 20 ms; an error after ``timeout_s``."""
    return wait_until(predicate, timeout_s=timeout_s, what=what)


def start(argv: list[str], env: dict[str, str], log: Path | None = None, **kwargs) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a session (and process group) of its own; its stderr to ``log`` if given."""
    with log.open("ab") if log is not None else contextlib.nullcontext() as stderr:
        return subprocess.Popen(
            argv,
            stdout=subprocess.DEVNULL,
            stderr=stderr if stderr is not None else subprocess.DEVNULL,
            start_new_session=True,
            env=env,
            **kwargs,
        )


def post_json(port: int, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST ``body`` to the chaos API on 127.0.0.1 (loopback: no token; JSON, so no cross-site refusal)."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310 - loopback, our own server
        return json.loads(answer.read())


def healthy(port: int) -> bool:
    """Whether the chaos API on ``port`` answers its health check now."""
    return answers(f"http://127.0.0.1:{port}/healthz")


def wall(record: dict[str, Any]) -> float:
    """The wall-clock time of a journal record."""
    return datetime.datetime.fromisoformat(record["utc"]).timestamp()


def last_deadline(journal: Path, op: str = "pause") -> float:
    """The wall-clock deadline of the latest ``op`` (pause, throttle) in the journal: its time plus its duration."""
    record = [record for record in Journal(journal).records() if record.get("op") == op][-1]
    return wall(record) + float(record["duration_s"])


__all__ = [
    "BASELINE",
    "PYTHON",
    "free_port",
    "healthy",
    "kill_group",
    "last_deadline",
    "post_json",
    "start",
    "wait",
    "wall",
]
