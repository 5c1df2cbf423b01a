"""Live slow and errors triggers on a real ``retrystorm target`` process, through its admin API.

The orchestration's order on every path is tested with fakes (``test_execute_triggers.py``);
here the real target takes each change and gives back exactly what it had, and one
``retrystorm run`` plays both kinds end to end with real Locust.
"""

import asyncio
import json
import os
import socket
import subprocess
import sys
import textwrap

import pytest

from retrystorm.chaos.cgroups import CgroupUnavailableError, locate
from retrystorm.experiment.scenario import ErrorWindow, SlowWindow
from retrystorm.runner.live_triggers import LiveTriggers
from retrystorm.runner.local.target import LocalTargets
from retrystorm.runner.runtime import Runtime
from retrystorm.target.models import parse_model
from tests.support.waiting import wait_until_async

pytestmark = [pytest.mark.live]

#: The fault rule and capacity the target has before the run: a restore must give back exactly these.
BEFORE_RULE = {"status": 500, "retry_after": 1, "first_attempts": 1, "probability": 0.25, "count": None}


async def until(check, timeout_s=20.0):
    """Poll ``check`` (a coroutine function) until it returns something true."""
    return await wait_until_async(check, timeout_s=timeout_s, every_s=0.05)


def test_a_cut_and_a_burst_reach_the_target_and_an_interrupt_restores_exactly_what_it_had(tmp_path):
    async def scenario():
        target = await LocalTargets(tmp_path).start("t", parse_model("fixed:base_delay=0"), 1)
        try:
            api = target.api
            await api.call_json("PUT", "/admin/faults", json_body=BEFORE_RULE)
            await api.call_json("PUT", "/admin/capacity", json_body={"capacity": 0.8})
            windows = [SlowWindow(0.0, 30.0, capacity=0.5), ErrorWindow(0.5, 30.0, status=503, probability=1.0)]
            triggers = LiveTriggers(windows, target.controls, Runtime())
            playing = asyncio.create_task(triggers.play(Runtime().clock()))

            async def bursting():
                rule = (await api.call_json("GET", "/admin/faults"))["rule"]
                return rule is not None and rule["status"] == 503

            await until(bursting)
            assert await api.call_json("GET", "/admin/capacity") == {"capacity": 0.5}
            answer = await api.call_json("GET", "/admin/faults")
            assert answer["rule"] == {"status": 503, "retry_after": None, "first_attempts": None,
                                      "probability": 1.0, "count": None}  # fmt: skip
            playing.cancel()  # as SIGINT cancels the run
            with pytest.raises(asyncio.CancelledError):
                await playing
            await triggers.restore()
            assert await api.call_json("GET", "/admin/capacity") == {"capacity": 0.8}
            assert (await api.call_json("GET", "/admin/faults"))["rule"] == BEFORE_RULE
            [slow, errors] = triggers.actual(0.0)
            assert (slow.kind, slow.capacity, errors.kind, errors.status) == ("slow", 0.5, "errors", 503)
            assert slow.end_s == errors.end_s == triggers.restored_at
        finally:
            await target.stop()

    asyncio.run(scenario())


LIVE = textwrap.dedent(
    """\
    name: live-triggers
    model: fixed:base_delay=200ms
    load: {users: 10, think_time: constant:100ms, attempt_timeout: 2s, duration: 18s}
    strategies: [fixed:100ms]
    faults:
      - {slow: target, capacity: 0.25, at: 4s, for: 4s}
      - {errors: target, status: 503, probability: 1, at: 10s, for: 3s}
    """
)


def test_retrystorm_run_plays_a_capacity_cut_and_an_error_burst_and_undoes_them(tmp_path):
    (tmp_path / "live.yaml").write_text(LIVE)
    folder = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "retrystorm", "run", tmp_path / "live.yaml", "--allow-saturated", "--out", folder],
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    [row] = json.loads((folder / "results.json").read_text())["results"]
    [slow, errors] = row["triggers"]
    assert (slow["kind"], slow["capacity"], errors["kind"], errors["status"]) == ("slow", 0.25, "errors", 503)
    assert 4.0 <= slow["start_s"] < slow["end_s"] <= 9.0 and 10.0 <= errors["start_s"] < errors["end_s"] <= 14.0
    rows = {
        float(line.split(",")[header.index("t_s")]): dict(zip(header, line.split(","), strict=True))
        for header in [(folder / "timeseries.csv").read_text().splitlines()[0].split(",")]
        for line in (folder / "timeseries.csv").read_text().splitlines()[1:]
    }
    assert float(rows[3.0]["delay_s"]) == pytest.approx(0.2)  # the model's delay, read from the target
    assert float(rows[7.0]["delay_s"]) == pytest.approx(0.8)  # a quarter of the capacity: four times as long
    assert float(rows[16.0]["delay_s"]) == pytest.approx(0.2)
    # every attempt of the burst failed at once (readings are a few ms off the whole second: a sliver remains)
    assert float(rows[12.0]["goodput"]) < 0.05 * float(rows[3.0]["goodput"])
    assert float(rows[17.0]["goodput"]) > 0.5 * float(rows[3.0]["goodput"])
    log = (folder / "logs" / "fixed-100ms-target.log").read_text()
    changes = [line.split(": ", 1)[1] for line in log.splitlines() if "capacity" in line or "fault rule" in line]
    assert changes == [
        "capacity set to 0.25",
        "capacity set to 1.0",
        "fault rule armed: FaultRule(status=503, retry_after_s=None, first_attempts=None, probability=1.0, count=None)",
        "fault rule disarmed",
        "fault rule disarmed",  # the restore at the end: no rule, as before the run
        "capacity set to 1.0",
    ]


SPIKE = textwrap.dedent(
    """\
    name: live-spike
    model: fixed:base_delay=50ms
    load: {users: 5, spawn_rate: 5, think_time: constant:200ms, attempt_timeout: 2s, duration: 16s}
    strategies: [fixed:100ms]
    faults:
      - {spike: load, factor: 3, at: 5s, for: 5s}
    """
)


@pytest.mark.parametrize("workers", ["1", "2"])  # one Locust process plays it; with workers, the master does
def test_retrystorm_run_plays_a_spike_with_the_locust_user_count_and_ends_it(tmp_path, workers):
    (tmp_path / "spike.yaml").write_text(SPIKE)
    folder = tmp_path / "run"
    command = ["retrystorm", "run", tmp_path / "spike.yaml", "--allow-saturated", "--workers", workers, "--out", folder]
    done = subprocess.run(
        [sys.executable, "-m", *command],
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    [row] = json.loads((folder / "results.json").read_text())["results"]
    assert [(w["kind"], w["start_s"], w["end_s"], w["factor"]) for w in row["triggers"]] == [("spike", 5.0, 10.0, 3.0)]
    text = (folder / "timeseries.csv").read_text().splitlines()
    header = text[0].split(",")
    goodput = {float(values[header.index("t_s")]): float(values[header.index("goodput")]) for values in
               (line.split(",") for line in text[1:])}  # fmt: skip
    before, during, after = goodput[3.0] + goodput[4.0], goodput[8.0] + goodput[9.0], goodput[14.0] + goodput[15.0]
    assert during > 2 * before  # 15 users instead of 5: three times the requests, give or take a second
    assert after < 0.6 * during  # back to 5 users


SERVER = textwrap.dedent(
    """\
    import sys
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Busy(BaseHTTPRequestHandler):
        def do_GET(self):
            end = time.thread_time() + 0.01  # 10 ms of CPU per request
            while time.thread_time() < end:
                pass
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"OK")

        def log_message(self, *args):
            pass

    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Busy).serve_forever()
    """
)


def test_retrystorm_run_cuts_the_cpu_of_a_service_it_started_through_a_cgroup_and_lifts_it(tmp_path):
    try:
        base = locate(os.getpid()).base()  # where the command's throttle group is made (it starts in our cgroup)
    except CgroupUnavailableError as error:
        pytest.skip(f"needs a writable cgroup cpu controller: {error}")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    (tmp_path / "server.py").write_text(SERVER)
    (tmp_path / "own.yaml").write_text(
        textwrap.dedent(
            f"""\
            name: own-slow
            target: {{url: "http://127.0.0.1:{port}", command: python server.py {port}, ready: /}}
            load: {{users: 4, think_time: constant:100ms, attempt_timeout: 10s, duration: 16s}}
            strategies: [fixed:100ms]
            faults: [{{slow: target, capacity: 0.02, at: 5s, for: 5s}}]
            """
        )
    )
    before = {path.name for path in base.iterdir()}
    folder = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "retrystorm", "run", tmp_path / "own.yaml", "--allow-saturated", "--out", folder,
         "--journal", tmp_path / "journal.jsonl"],
        capture_output=True, text=True, timeout=180, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    [row] = json.loads((folder / "results.json").read_text())["results"]
    [slow] = row["triggers"]
    assert (slow["kind"], slow["capacity"]) == ("slow", 0.02) and 5.0 <= slow["start_s"] < slow["end_s"] <= 11.0
    text = (folder / "timeseries.csv").read_text().splitlines()
    header = text[0].split(",")
    latency = {float(values[header.index("t_s")]): values[header.index("attempt_latency_s")] for values in
               (line.split(",") for line in text[1:])}  # fmt: skip
    steady, cut = float(latency[4.0]), max(float(latency[t]) for t in (7.0, 8.0, 9.0, 10.0) if latency[t])
    assert cut > 5 * steady  # 2 % of the CPUs: each request's 10 ms of CPU takes far longer
    assert {path.name for path in base.iterdir()} == before  # every throttle group removed (another run's may stay)
