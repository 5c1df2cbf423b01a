"""``retrystorm run`` with real Locust starved of CPU: a generator pinned to one CPU beside two busy loops lags.

The kernel gives the Locust process about a third of its CPU, so its own CPU share stays far below the
saturation rule's 90 %, and its users (300, thinking a constant 20 ms: the demand signal does not judge a
constant think time) cannot say they fell behind. Its lag does: every think time ends late. One 8-s run on
127.0.0.1, the busy loops pinned beside it, bounded in time and stopped by their pid.
"""

import json
import os
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from tests.support.processes import started, stop

pytestmark = [
    pytest.mark.live,
    pytest.mark.slow,
]  # about 80 s on a loaded 2-core machine, one CPU taken by the two loops

STARVED = textwrap.dedent(
    """\
    name: starved
    model: "fixed:base_delay=0s"
    load: {users: 300, think_time: constant:20ms, attempt_timeout: 2s, duration: 8s}
    strategies: [fixed:100ms]
    """
)
#: A busy loop that ends by itself after a minute, whatever happens to the test.
BUSY = "import time\nend = time.monotonic() + 60\nwhile time.monotonic() < end: pass"


def pin_locust(run: subprocess.Popen[str], cpu: int, deadline_s: float) -> int:
    """Pin the run's Locust process to ``cpu`` as soon as it starts; its pid."""
    while time.monotonic() < deadline_s and run.poll() is None:
        for child in psutil.Process(run.pid).children(recursive=True):
            try:
                if any("locust" in part for part in child.cmdline()):
                    os.sched_setaffinity(child.pid, {cpu})
                    return child.pid
            except psutil.Error:
                continue
        time.sleep(0.05)
    raise AssertionError("the run's Locust process never started")


def test_a_generator_starved_beside_a_cpu_hog_is_not_valid_and_the_verdict_names_its_lag(tmp_path):
    (tmp_path / "s.yaml").write_text(STARVED)
    env = {**os.environ, "RETRYSTORM_CHAOS_JOURNAL": str(tmp_path / "journal.jsonl"), "COLUMNS": "200"}
    argv = [sys.executable, "-m", "retrystorm", "run", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "run")]
    cpu = max(os.sched_getaffinity(0))
    run = subprocess.Popen(
        [*argv, "--workers", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        pin_locust(run, cpu, time.monotonic() + 60)
        with started([sys.executable, "-c", BUSY]) as one, started([sys.executable, "-c", BUSY]) as two:
            os.sched_setaffinity(one.pid, {cpu})
            os.sched_setaffinity(two.pid, {cpu})
            out, err = run.communicate(timeout=180)
    finally:
        stop(run)
    assert run.returncode == 3, out + err
    validity = json.loads((tmp_path / "run" / "results.json").read_text())["results"][0]["validity"]
    assert validity["valid"] is False
    assert validity["cpu_saturated_s"] == 0 and max(validity["cpu_peak"].values()) < 0.9  # the CPU signal is blind
    assert validity["lagging_s"] >= 2 and validity["lagging_s"] > 0.05 * validity["seconds"]  # lag alone suffices
    assert validity["schedule_lag_worst_s"] > 0.01  # the limit for a 20 ms think: half of it, at least 10 ms
    shown = " ".join(out.split())
    assert "NOT VALID" in shown and "its users started" in shown and "ms late on average" in shown
    assert "retrystorm run: not valid: the load generator was saturated during fixed:100ms" in " ".join(err.split())
