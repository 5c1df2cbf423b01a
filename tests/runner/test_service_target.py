"""The long-lived target provider against a real ``retrystorm target``, paused through the process backend."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from retrystorm.chaos.backends import ProcessBackend, TargetState
from retrystorm.runner.errors import RunFailedError
from retrystorm.runner.lazy import LazyBackend
from retrystorm.runner.service_target import ServiceTarget, ServiceTargets
from retrystorm.runner.webapi import WebApi
from retrystorm.target.models import parse_model
from tests.loadgen.conftest import (  # the live tests' process helpers live there
    Processes,
    Target,
    free_port,
    get_text,
    target_starter,
    wait_until,
)

pytestmark = [pytest.mark.live, pytest.mark.signals]

MODEL = parse_model("exponential:limit=40")


@pytest.fixture
def processes(tmp_path) -> Iterator[Processes]:
    started = Processes(tmp_path)
    try:
        yield started
    finally:
        started.stop_all()


@pytest.fixture
def slow_target(processes) -> Target:
    """A target whose every request takes a minute (so requests stay in flight)."""
    return target_starter(processes)("--model", "fixed", "--base-delay", "60s")


def admin(target: Target, path: str) -> dict:
    return json.loads(get_text(target.url + path))


def send_and_keep(url: str) -> dict[str, int]:
    """GET ``url`` in a thread; the answer's status lands in the returned dict."""
    answer: dict[str, int] = {}

    def call() -> None:
        try:
            with urllib.request.urlopen(url, timeout=120) as response:
                answer["status"] = response.status
        except urllib.error.HTTPError as error:
            answer["status"] = error.code

    threading.Thread(target=call, daemon=True).start()
    return answer


def test_start_sets_the_model_disarms_faults_releases_in_flight_and_zeroes_counters(slow_target):
    slow_target.fail(count=1)
    failed = send_and_keep(slow_target.url + "/api")  # failed by the rule at once
    wait_until(lambda: failed.get("status") == 503, 10, "the rule's failure")
    held = send_and_keep(slow_target.url + "/api")
    wait_until(lambda: admin(slow_target, "/admin/model")["in_flight"] == 1, 10, "a request in flight")
    provider = ServiceTargets(slow_target.url, backend=ProcessBackend({"target": slow_target.process.pid}))

    async def start_and_stop() -> str:
        handle = await provider.start("smira", MODEL, 1)
        described = handle.describe()
        await handle.stop()
        return described

    described = asyncio.run(start_and_stop())
    assert admin(slow_target, "/admin/model")["spec"] == MODEL.spec()
    assert admin(slow_target, "/admin/faults")["rule"] is None
    wait_until(lambda: held.get("status") == 503, 10, "the held request to be released with 503")
    assert slow_target.metrics().get("retrystorm_target_injected_failures_total") == 0
    assert slow_target.url in described and "process 'target'" in described


def test_a_target_with_an_admin_token_is_reset_with_it_and_refuses_the_runner_without_it(processes):
    target = target_starter(processes)("--model", "fixed", "--base-delay", "60s", "--admin-token", "runner-token")
    backend = ProcessBackend({"target": target.process.pid})

    async def start_and_stop(provider: ServiceTargets) -> None:
        handle = await provider.start("smira", MODEL, 1)
        await handle.stop()

    with pytest.raises(RunFailedError, match=r"answered PUT /admin/model with 401: missing or wrong bearer token"):
        asyncio.run(start_and_stop(ServiceTargets(target.url, backend=backend)))
    asyncio.run(start_and_stop(ServiceTargets(target.url, backend=backend, admin_token="runner-token")))
    request = urllib.request.Request(target.url + "/admin/model", headers={"Authorization": "Bearer runner-token"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert json.loads(response.read())["spec"] == MODEL.spec()


def test_start_refuses_a_target_paused_by_someone_else_and_stop_resumes_it(slow_target):
    backend = ProcessBackend({"target": slow_target.process.pid})
    (ref,) = backend.resolve("target")
    provider = ServiceTargets(slow_target.url, backend=backend, ready_timeout_s=5)
    backend.pause(ref)
    with pytest.raises(RunFailedError, match="is paused by something else"):
        asyncio.run(provider.start("fixed", MODEL, 1))
    backend.resume(ref)

    async def paused_at_the_end() -> None:
        handle = await provider.start("fixed", MODEL, 1)
        backend.pause(ref)  # as if the controller had not resumed it
        await handle.stop()

    asyncio.run(paused_at_the_end())
    assert backend.state(ref) is TargetState.RUNNING
    assert admin(slow_target, "/admin/model")["spec"] == MODEL.spec()


def test_a_paused_target_is_not_a_failure_but_one_that_does_not_answer_is(victim):
    """The victim runs but serves nothing: it does not answer unless it is paused (then it cannot)."""
    backend = ProcessBackend({"target": victim.pid})
    refs = backend.resolve("target")
    handle = ServiceTarget(WebApi(f"http://127.0.0.1:{free_port()}", "the target"), "http://t", backend, refs)

    async def probe() -> str | None:
        try:
            return await handle.probe()
        finally:
            await handle.api.close()

    assert "cannot reach the target" in (asyncio.run(probe()) or "")
    backend.pause(refs[0])
    assert asyncio.run(probe()) is None
    backend.resume(refs[0])
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(timeout=10)
    with pytest.raises(RunFailedError, match="is gone"):
        asyncio.run(probe())


def test_check_fails_the_run_once_a_running_target_stopped_answering(slow_target):
    backend = ProcessBackend({"target": slow_target.process.pid})
    (ref,) = backend.resolve("target")
    provider = ServiceTargets(slow_target.url, backend=backend, unhealthy_after_s=1.0)

    async def scenario() -> None:
        handle = await provider.start("fixed", MODEL, 1)
        try:
            backend.pause(ref)  # paused on purpose: no failure however long
            await asyncio.sleep(2.5)
            handle.check()
            backend.resume(ref)
            handle.api.base_url = f"http://127.0.0.1:{free_port()}"  # from now on it does not answer
            for _ in range(100):
                if handle.watch.failure is not None:
                    break
                await asyncio.sleep(0.1)
            with pytest.raises(RunFailedError, match="has failed for"):
                handle.check()
        finally:
            handle.api.base_url = slow_target.url
            await handle.stop()

    asyncio.run(scenario())


def test_the_backend_is_made_when_first_used():
    made: list[int] = []

    def make() -> ProcessBackend:
        made.append(1)
        return ProcessBackend()

    lazy = LazyBackend("process", make)
    provider = ServiceTargets("http://target:8070", backend=lazy)
    assert provider.fault_target_names() == ["target"]
    assert "through the process backend" in provider.describe(MODEL)
    assert made == []
    assert provider.recovery_backends() == [lazy.backend()]
    assert made == [1]


def test_a_foreign_target_gets_no_admin_call_and_a_busy_one_is_not_a_failure(slow_target):
    from retrystorm.experiment.scenario.service import ServiceTarget as OwnService

    held = send_and_keep(slow_target.url + "/api")
    wait_until(lambda: admin(slow_target, "/admin/model")["in_flight"] == 1, 10, "a request in flight")
    own = OwnService(url=slow_target.url, ready="/healthz", service="target")
    backend = ProcessBackend({"target": slow_target.process.pid})
    provider = ServiceTargets(slow_target.url, backend=backend, foreign=own, unhealthy_after_s=0.5)
    assert "no admin API: nothing is reset between strategies" in provider.describe(None)
    assert provider.trigger_refusal("slow") is None and "fault proxy" in (provider.trigger_refusal("errors") or "")

    async def start_probe_and_stop() -> tuple[str | None, str | None]:
        handle = await provider.start("backoff", None, 1)
        # a slow cuts what a pause freezes, through the controller's throttle; no admin controls
        assert handle.controls is None and handle.cpu_target is handle.faults["target"]
        handle.foreign = own.model_copy(update={"ready": "/api"})  # a path that now takes a minute to answer
        busy = await handle.probe()
        await handle.stop()
        return busy, admin(slow_target, "/admin/model")["spec"]

    busy, spec = asyncio.run(start_probe_and_stop())
    assert busy is None  # running but not answering is no failure for a foreign service: it exists
    assert spec.startswith("fixed")  # no model was set
    assert admin(slow_target, "/admin/model")["in_flight"] == 1  # nothing was released
    assert "status" not in held
