"""A process tree as one target: a root and every descendant, those that ``setsid()`` included, stopped together.

Real processes and real signals; the dead-man switch is a recorder (the watchdogs have their own tests).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest

from retrystorm.chaos.backends import ProcessBackend
from retrystorm.chaos.backends.procfs import descendants
from retrystorm.chaos.controller import OutageController
from retrystorm.chaos.journal import Journal
from retrystorm.chaos.registration import TargetSpec
from retrystorm.chaos.targets import FaultTarget
from retrystorm.errors import UserError

from .conftest import RecordingSwitch, is_stopped, wait_for

pytestmark = pytest.mark.signals

# A root whose children each call setsid() (as every PostgreSQL backend does), one of them with a child of its own.
TREE = textwrap.dedent(
    """\
    import os, sys, time
    def spawn(grandchild):
        if os.fork() == 0:
            os.setsid()
            if grandchild and os.fork() == 0:
                time.sleep(120); os._exit(0)
            time.sleep(120); os._exit(0)
    spawn(False); spawn(True)
    print("ready", flush=True)
    time.sleep(120)
    """
)


@pytest.fixture
def tree() -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    wait_for(lambda: len(descendants(process.pid)) == 4, what="the root, two children and a grandchild")
    yield process
    for pid, _ in descendants(process.pid):
        os.kill(pid, signal.SIGCONT)
        os.kill(pid, signal.SIGKILL)
    process.communicate(timeout=10)


def test_a_pause_stops_the_root_and_every_descendant_though_each_left_the_process_group(tree, tmp_path):
    members = [pid for pid, _ in descendants(tree.pid)]
    assert len({os.getpgid(pid) for pid in members}) == 3  # setsid(): out of the root's process group
    backend = ProcessBackend()
    backend.register_tree("db", tree.pid)

    async def scenario() -> None:
        controller = OutageController(Journal(tmp_path / "j.jsonl"), dead_man=RecordingSwitch())
        outage = await controller.pause(FaultTarget("db", backend), 600)
        assert sorted(int(ref.ident.partition("@")[0]) for ref in outage.refs) == members
        assert all(is_stopped(pid) for pid in members)
        await controller.resume(outage.id)

    asyncio.run(scenario())
    assert not any(is_stopped(pid) for pid in members)


def test_a_tree_target_is_refused_as_a_process_is(tmp_path):
    with pytest.raises(UserError, match="an ancestor of this controller"):
        TargetSpec.parse(f"tree:{os.getppid()}").register("x", {})
    with pytest.raises(UserError, match="expected tree:NUMBER"):
        TargetSpec.parse("tree:abc")
