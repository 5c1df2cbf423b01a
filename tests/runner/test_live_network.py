"""``retrystorm run`` plays network windows live on the local backend, through a real fault proxy process."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from retrystorm.chaos.backends.base import BackendError
from retrystorm.chaos.network.control import ProxyControl
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.live, pytest.mark.slow]  # about 25 s: a 12 s run, its processes and its report

SCENARIO = textwrap.dedent(
    """\
    name: live-network
    model: fixed:base_delay=20ms
    load: {users: 10, think_time: constant:100ms, attempt_timeout: 2s, duration: 12s}
    strategies: [fixed:100ms]
    faults:
      - {delay: target, latency: 300ms, at: 3s, for: 3s}
      - {reset: target, at: 8s, for: 2s}
    """
)


def column(folder, name):
    """``t_s -> value`` of one column of the run's timeseries.csv (empty cells left out)."""
    text = (folder / "timeseries.csv").read_text().splitlines()
    header = text[0].split(",")
    rows = (line.split(",") for line in text[1:])
    return {float(r[header.index("t_s")]): float(r[header.index(name)]) for r in rows if r[header.index(name)]}


def test_retrystorm_run_delays_then_resets_through_a_fault_proxy_and_leaves_nothing_behind(tmp_path):
    (tmp_path / "net.yaml").write_text(SCENARIO)
    folder = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "retrystorm", "run", tmp_path / "net.yaml", "--allow-saturated", "--out", folder],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    document = json.loads((folder / "results.json").read_text())
    [row] = document["results"]
    [delay, reset] = row["triggers"]
    assert (delay["kind"], delay["latency_s"], reset["kind"]) == ("delay", 0.3, "reset")
    assert 3.0 <= delay["start_s"] < delay["end_s"] <= 7.0 and 8.0 <= reset["start_s"] < reset["end_s"] <= 11.0
    target = document["run"]["strategies"]["fixed:100ms"]["target"]
    assert "load through the fault proxy on http://127.0.0.1:" in target
    latency, goodput = column(folder, "attempt_latency_s"), column(folder, "goodput")
    assert latency[2.0] < 0.2 and latency[5.0] > 0.3  # 20 ms served, 300 ms more on the way back
    assert goodput[10.0] < 0.2 * goodput[2.0]  # every connection reset
    assert goodput[12.0] > 0.5 * goodput[2.0]  # served again once the reset ended
    pid = int(target.rpartition("(pid ")[2].rstrip(")"))
    cmdline = Path(f"/proc/{pid}/cmdline")
    assert not cmdline.exists() or b"proxy" not in cmdline.read_bytes()  # the proxy stopped with the strategy


KILLED = textwrap.dedent(
    """\
    name: killed-during-delay
    model: fixed:base_delay=20ms
    load: {users: 5, think_time: constant:100ms, attempt_timeout: 2s, duration: 60s}
    strategies: [fixed:100ms]
    faults: [{delay: target, latency: 300ms, at: 3s, for: 6s}]
    """
)


def proxy_of(runner_pid):
    """The pid and control socket of the fault proxy ``runner_pid`` started, once it runs (``None`` before)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rpartition(")")[2].split()[1])
            argv = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == runner_pid and b"proxy" in argv and b"--control" in argv:
            return int(stat.parent.name), Path(argv[argv.index(b"--control") + 1].decode())
    return None


def test_a_delay_ends_at_its_deadline_after_a_sigkill_of_the_runner(tmp_path):
    (tmp_path / "kill.yaml").write_text(KILLED)
    command = [sys.executable, "-m", "retrystorm", "run", tmp_path / "kill.yaml", "--allow-saturated",
               "--out", tmp_path / "run", "--journal", tmp_path / "journal.jsonl"]  # fmt: skip
    runner = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    proxy, control = None, None
    try:
        proxy, control = wait_until(lambda: proxy_of(runner.pid), timeout_s=60, every_s=0.1)
        toxics = lambda: ProxyControl(control).status()["toxics"]  # noqa: E731
        [delay] = wait_until(toxics, timeout_s=30, every_s=0.1, ignore=(BackendError,))
        runner.kill()  # SIGKILL: nothing of the runner ends the delay
        runner.wait()
        [still] = toxics()  # the runner is gone; the delay is not
        assert still["id"] == delay["id"] and still["toxic"]["latency_s"] == 0.3
        time.sleep(still["left_s"] + 1.0)  # 1 s past its deadline
        assert toxics() == []  # the proxy ended it by itself
        os.kill(proxy, signal.SIGTERM)  # its bounded life, cut short: it leaves nothing in /tmp behind
        wait_until(lambda: not Path(f"/proc/{proxy}").exists(), timeout_s=10)
        assert not control.parent.exists(), sorted(control.parent.iterdir())
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
        if proxy is not None and Path(f"/proc/{proxy}").exists():  # a failure above: stop it now
            os.kill(proxy, signal.SIGTERM)
            wait_until(lambda: not Path(f"/proc/{proxy}").exists(), timeout_s=10)
        if control is not None:
            shutil.rmtree(control.parent, ignore_errors=True)
