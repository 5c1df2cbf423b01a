"""``retrystorm target`` as a real process: freeze and resume, SIGTERM, flags, reporting."""

import asyncio
import os
import signal
import subprocess
import sys

import pytest

from retrystorm.target.probe import fetch, read_reply, send_and_leave
from tests.support.waiting import wait_until_async

pytestmark = pytest.mark.live

OK = 'retrystorm_target_requests_total{outcome="ok"}'
ABANDONED = 'retrystorm_target_requests_total{outcome="abandoned"}'
IN_FLIGHT = "retrystorm_target_in_flight_requests"


async def wait_for_metric(target, name, value):
    async def reached():
        return (await target.metrics()).get(name) == value

    await wait_until_async(reached, what=f"{name} to read {value}")


@pytest.mark.signals
def test_requests_sent_during_a_freeze_are_answered_after_it(live, target_process):
    target = target_process()  # the seed model: 100 ms below 30 in flight

    async def scenario():
        before = await live.open_requests(target.port, 1)
        await wait_for_metric(target, IN_FLIGHT, 1)
        os.kill(target.proc.pid, signal.SIGSTOP)
        try:
            # The kernel completes these handshakes and queues them: nothing answers yet.
            during = await live.open_requests(target.port, 20)
            for _ in range(5):
                await send_and_leave(target.port)  # clients that give up while it is frozen
            with pytest.raises(TimeoutError):  # frozen: nothing is answered
                await asyncio.wait_for(fetch(target.port, "/healthz"), 3.0)
        finally:
            os.kill(target.proc.pid, signal.SIGCONT)
        answered = [await read_reply(reader) for reader, _ in before + during]
        assert [reply.status for reply in answered] == [200] * 21
        await wait_for_metric(target, ABANDONED, 5)
        samples = await target.metrics()
        assert samples[OK] == 21
        # The request admitted before the freeze (over 3 s) was released only after it:
        # its modelled age caught up with the real time that passed.
        slow = samples[OK] - samples['retrystorm_target_response_time_seconds_bucket{le="2.5",outcome="ok"}']
        assert slow == 1
        for _, writer in before + during:
            writer.close()

    live.run(scenario())


@pytest.mark.signals
def test_sigterm_answers_what_is_in_flight_and_exits_0(live, target_process):
    target = target_process("--model", "fixed", "--base-delay", "1m")

    async def scenario():
        streams = await live.open_requests(target.port, 3)
        await wait_for_metric(target, IN_FLIGHT, 3)
        target.proc.send_signal(signal.SIGTERM)
        answered = [await read_reply(reader) for reader, _ in streams]
        assert {(reply.status, reply.text) for reply in answered} == {(503, "the server is shutting down\n")}
        for _, writer in streams:
            writer.close()

    live.run(scenario())
    # Generous bound: the requirement is 5 s; the test fails only if it has not exited by then.
    assert target.proc.wait(timeout=15) == 0
    with pytest.raises(ConnectionRefusedError):
        asyncio.run(asyncio.open_connection("127.0.0.1", target.port))


def retrystorm(*args):
    return subprocess.run(
        [sys.executable, "-m", "retrystorm", *args], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--limit", "-1"], "limit: got -1, expected a whole number >= 0"),
        (["--workers", "3"], "--workers does not apply to --model exponential; its flags: --base-delay"),
        (["--model", "queue", "--limit", "3"], "--limit does not apply to --model queue"),
        (["--model", "quadratic"], "unknown model 'quadratic'; valid: exponential, fixed, linear, queue"),
        (["--tick", "1us"], "tick: got 1us, expected a duration"),
        (["--base-delay", "100"], "add a unit"),
        (["--port", "70000"], "--port"),
        (["--backlog", "0"], "--backlog"),
        (["--report-interval", "soon"], "report_interval: got 'soon'"),
        (["--max-delay", "1e300s"], "max_delay: got '1e300s', expected finite durations"),
        (["--max-delay", "2h"], "max_delay: got 2h, expected a duration"),
        (["--model", "queue", "--workers", str(10**12)], "workers: got 1000000000000, expected a whole number >= 1"),
        (["--limit", "1" + "0" * 5000], "limit: got '10000000000000000...000000000000000000' (5001 characters)"),
        (["--k", "1" + "0" * 5000], "k: got inf, expected a finite number > 0 and <= 1000000"),
        (["--header-timeout", "0"], "header_timeout: got 0s, expected a duration > 0s and <= 1h"),
        (["--idle-timeout", "2h"], "idle_timeout: got 2h, expected a duration > 0s and <= 1h"),
        (["--idle-timeout", "forever"], "idle_timeout: got 'forever', expected finite durations"),
        (["--max-connections", "0"], "--max-connections"),
        (["--max-connections", "1000001"], "--max-connections"),
    ],
)
def test_bad_flags_print_one_line_and_exit_2(args, expected):
    result = retrystorm("target", *args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert expected in lines[0]


def test_a_busy_port_is_one_line_and_exit_2(target_process):
    first = target_process()
    result = retrystorm("target", "--port", str(first.port))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"retrystorm: error: cannot listen on 127.0.0.1:{first.port}: Address already in use"
    ]


def test_report_interval_prints_the_seed_line():
    proc = subprocess.Popen(
        [sys.executable, "-m", "retrystorm", "target", "--port", "0", "--report-interval", "100ms"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.rstrip().endswith("concurrency:    0, last delay: 100ms")
    finally:
        proc.terminate()
        proc.communicate(timeout=15)  # waits, and closes the pipe
    assert proc.returncode == 0


def test_the_service_never_imports_locust():
    # import locust monkey-patches the process with gevent; the target is asyncio code.
    code = (
        "import sys, retrystorm.target.cli, retrystorm.target.service\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('locust', 'gevent')))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "[]"
