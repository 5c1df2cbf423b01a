"""Outage annotations in Grafana, against the recorded-contract stub of Grafana's HTTP API.

Outages through the controller on a recording fake backend (what is annotated does not depend on how a target is
frozen); real outages of real processes through ``retrystorm chaos serve`` and ``retrystorm run`` (live). The stub
checks every annotation as Grafana would.
"""

import asyncio
import logging
import os
import subprocess
import sys
import textwrap
import threading

import pytest

from retrystorm.chaos.annotations import (
    GrafanaAnnotations,
    OutageAnnotation,
    annotations_from_env,
    trigger_annotation,
    trigger_tags,
)
from retrystorm.chaos.controller import Outage, OutageController, OutageStatus
from retrystorm.chaos.journal import Journal
from retrystorm.chaos.targets import FaultTarget
from tests.grafana_stub import PASSWORD, TOKEN, USER, running_stub
from tests.loadgen.conftest import free_port
from tests.support.waiting import wait_until_async

from .conftest import FakeBackend, RecordingSwitch, call, wait_for

ENV_NAMES = ("GRAFANA_URL", "GRAFANA_TOKEN", "GRAFANA_USER", "GRAFANA_PASSWORD")


@pytest.fixture
def grafana(monkeypatch):
    """A Grafana stub, named by GRAFANA_URL/GRAFANA_TOKEN for whatever starts after this fixture."""
    with running_stub() as stub:
        for name in ENV_NAMES:
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("GRAFANA_URL", stub.url)
        monkeypatch.setenv("GRAFANA_TOKEN", TOKEN)
        yield stub


def controller_for(tmp_path, listener):
    """A controller whose pauses arm a recording switch."""
    return OutageController(Journal(tmp_path / "j.jsonl"), dead_man=RecordingSwitch(), listener=listener)


@pytest.fixture
def backend():
    """A recording fake backend; what a test paused must be resumed by its end."""
    fake = FakeBackend()
    yield fake
    assert not fake.frozen, "an outage left its target paused"


def target_of(backend):
    """The fake's target (the same ref each time: overlapping pauses hold one target)."""
    return FaultTarget("target", backend)


async def wait_until(predicate, timeout_s=20.0):
    await wait_until_async(predicate, timeout_s=timeout_s)


def ended_outage(**changes):
    outage = Outage(
        id="o1",
        target="target",
        backend="process",
        effects=[],
        requested_s=2.0,
        duration_s=2.0,
        started_utc="2026-01-01T00:00:00.000+00:00",
        started_monotonic=10.0,
        in_force_utc="2026-01-01T00:00:00.000+00:00",
        in_force_monotonic=10.0,
        status=OutageStatus.RESUMED,
        ended_utc="2026-01-01T00:00:02.500+00:00",
        ended_monotonic=12.5,
        end_reason="scheduled",
    )
    for key, value in changes.items():
        setattr(outage, key, value)
    return outage


def test_annotation_of_an_outage():
    annotation = OutageAnnotation.of(ended_outage(), 2.5, "smira-laptop")
    assert annotation.time_ms == 1767225600000
    assert annotation.time_end_ms == annotation.time_ms + 2500
    assert annotation.tags == ("retrystorm", "outage", "target", "smira-laptop")
    assert annotation.text == "outage of target for 2.5 s (scenario smira-laptop): scheduled"
    bare = OutageAnnotation.of(ended_outage(error="kill: no such process"), 2.5)
    assert bare.tags == ("retrystorm", "outage", "target") and bare.text.endswith("; error: kill: no such process")


def test_annotation_of_a_trigger_window():
    annotation = trigger_annotation(
        "errors", 1767225600.0, 1767225605.25, "errors from target", target="target", scenario="s", strategy="fixed"
    )
    assert (annotation.time_ms, annotation.time_end_ms) == (1767225600000, 1767225605250)
    assert annotation.tags == ("retrystorm", "errors", "target", "s", "fixed")
    assert annotation.text == "errors from target for 5.2 s (scenario s, strategy fixed)"
    bare = trigger_annotation("spike", 10.0, 9.0, "load x2")  # an end before the start is clamped, as Grafana wants
    assert (bare.time_end_ms, bare.tags, bare.text) == (10000, ("retrystorm", "spike"), "load x2 for 0.0 s")
    assert [trigger_tags(kind) for kind in ("pause", "slow")] == [("retrystorm", "outage"), ("retrystorm", "slow")]


def test_an_outage_posts_one_region_annotation(backend, tmp_path, grafana):
    listener = annotations_from_env(scenario="demo")
    assert isinstance(listener, GrafanaAnnotations)

    async def scenario():
        async with controller_for(tmp_path, listener) as controller:
            outage = await controller.pause(target_of(backend), 0.3)
            await wait_until(lambda: outage.status is OutageStatus.RESUMED)
            await listener.drain()
            return outage

    outage = asyncio.run(scenario())
    (posted,) = grafana.received("POST", "/api/annotations")
    assert posted.status == 200 and posted.authorization == f"Bearer {TOKEN}"
    body = posted.body
    assert body["tags"] == ["retrystorm", "outage", "target", "demo"]
    assert body["text"].startswith("outage of target for ") and "(scenario demo): scheduled" in body["text"]
    assert body["time"] == OutageAnnotation.of(outage, 0.3).time_ms
    assert body["timeEnd"] > body["time"]
    assert backend.calls[-1] == "resume 100@1"


def test_basic_auth_from_the_environment(backend, tmp_path, grafana, monkeypatch):
    monkeypatch.delenv("GRAFANA_TOKEN")
    monkeypatch.setenv("GRAFANA_USER", USER)
    monkeypatch.setenv("GRAFANA_PASSWORD", PASSWORD)
    listener = annotations_from_env()

    async def scenario():
        async with controller_for(tmp_path, listener) as controller:
            outage = await controller.pause(target_of(backend), 30)
            await controller.resume(outage.id)
            await listener.drain()

    asyncio.run(scenario())
    assert [entry.status for entry in grafana.received("POST", "/api/annotations")] == [200]
    assert grafana.annotations[0]["text"].endswith(": early")


@pytest.fixture(params=["http 500", "wrong token", "unreachable"])
def failing_grafana(request, grafana, monkeypatch):
    """The stub failing one way or another; GRAFANA_* point at it."""
    if request.param == "http 500":
        grafana.fail_with = 500
    elif request.param == "wrong token":
        monkeypatch.setenv("GRAFANA_TOKEN", "wrong")
    else:
        monkeypatch.setenv("GRAFANA_URL", f"http://127.0.0.1:{free_port()}")
    return grafana


def test_a_failing_grafana_never_breaks_an_outage(backend, tmp_path, failing_grafana, caplog):
    listener = annotations_from_env()

    async def scenario():
        async with controller_for(tmp_path, listener) as controller:
            first = await controller.pause(target_of(backend), 0.2)
            await wait_until(lambda: first.status is OutageStatus.RESUMED)
            second = await controller.pause(target_of(backend), 0.2)
            await wait_until(lambda: second.status is OutageStatus.RESUMED)
            await listener.drain()
            return first, second

    with caplog.at_level(logging.WARNING, logger="retrystorm.chaos.annotations"):
        outages = asyncio.run(scenario())
    assert [outage.end_reason for outage in outages] == ["scheduled", "scheduled"]
    assert backend.calls[-1] == "resume 100@1"
    warnings = [record for record in caplog.records if "could not post the outage annotation" in record.message]
    assert len(warnings) == 2
    assert not failing_grafana.annotations


def test_posting_never_holds_up_the_event_loop(backend, tmp_path):
    """A Grafana that hangs: the resume and the loop go on; the post finishes in its thread."""
    release = threading.Event()
    posted = []

    class Hanging:
        def post(self, annotation):
            release.wait(timeout=30)
            posted.append(annotation)

    listener = GrafanaAnnotations(Hanging())

    async def scenario():
        async with controller_for(tmp_path, listener) as controller:
            outage = await controller.pause(target_of(backend), 30)
            await controller.resume(outage.id)
            ticks = 0
            while ticks < 5:  # the loop keeps running while the post hangs
                await asyncio.sleep(0.01)
                ticks += 1
            assert outage.status is OutageStatus.RESUMED and not posted
            release.set()
            await listener.drain()

    asyncio.run(scenario())
    assert len(posted) == 1
    assert backend.calls[-1] == "resume 100@1"


def test_settings_from_the_environment(monkeypatch, caplog):
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)
    assert annotations_from_env() is None
    monkeypatch.setenv("GRAFANA_URL", "grafana:3000")
    with caplog.at_level(logging.WARNING, logger="retrystorm.chaos.annotations"):
        assert annotations_from_env() is None
    assert "Grafana annotations are off: grafana url: got 'grafana:3000'" in caplog.text
    monkeypatch.setenv("GRAFANA_URL", "http://127.0.0.1:3000")
    monkeypatch.setenv("GRAFANA_TOKEN", "t")
    monkeypatch.setenv("GRAFANA_USER", "u")
    assert annotations_from_env() is None


def test_a_failed_pause_posts_nothing():
    posted = []

    class Recorder:
        def post(self, annotation):
            posted.append(annotation)

    listener = GrafanaAnnotations(Recorder())
    never_frozen = ended_outage(status=OutageStatus.FAILED, end_reason="failed to take effect", in_force_utc=None)
    never_frozen.in_force_monotonic = None
    listener.outage_ended(never_frozen, 0.0)
    listener.outage_ended(ended_outage(), 2.5)  # no running loop: posted at once
    assert len(posted) == 1


@pytest.mark.signals
def test_chaos_serve_annotates_outages(grafana, chaos_api, victim):
    base, _ = chaos_api
    status, outage = call(base, "POST", "/outages", {"target": "target", "duration": "300ms"})
    assert status == 201
    wait_for(lambda: grafana.annotations, what="the outage annotation")
    (annotation,) = grafana.annotations
    assert annotation["tags"] == ["retrystorm", "outage", "target"]
    assert annotation["text"].startswith("outage of target for ")
    assert annotation["timeEnd"] >= annotation["time"] > 0
    assert call(base, "GET", f"/outages/{outage['id']}")[1]["status"] == "resumed"


TINY = textwrap.dedent(
    """\
    name: tiny-annotated
    model: exponential:limit=30
    load: {users: 20, think_time: exponential:1s, attempt_timeout: 2s, duration: 8s}
    strategies: [smira]
    faults: [{at: 3s, for: 2s}]
    """
)


@pytest.mark.signals
def test_scenario_run_annotates_its_outage_with_the_scenario(grafana, tmp_path):
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(TINY)
    env_journal = {"RETRYSTORM_CHAOS_JOURNAL": str(tmp_path / "journal.jsonl")}
    done = subprocess.run(
        [sys.executable, "-m", "retrystorm", "run", str(scenario), "--allow-saturated", "--out", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        env={**os.environ, **env_journal},
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (annotation,) = grafana.annotations
    assert annotation["tags"] == ["retrystorm", "outage", "target", "tiny-annotated"]
    assert "(scenario tiny-annotated): scheduled" in annotation["text"]
    assert annotation["timeEnd"] > annotation["time"]
