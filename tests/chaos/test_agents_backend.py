"""Faults through the chaos agent of each host (``AgentsBackend``), against a real ``retrystorm chaos serve``."""

from __future__ import annotations

import pytest

from retrystorm.chaos.backends import TargetState, UnknownTargetError
from retrystorm.chaos.backends.agents import AgentsBackend
from retrystorm.chaos.client import ChaosClient

from .conftest import is_stopped, wait_for

pytestmark = [pytest.mark.live, pytest.mark.signals]


def _backend(base: str, hold_s: float) -> AgentsBackend:
    """Host ``app`` is the agent at ``base``; host ``db`` an agent nothing answers for."""
    clients = {"app": ChaosClient(base), "db": ChaosClient("http://127.0.0.1:9")}
    return AgentsBackend(clients, hold_s=hold_s, locate=lambda written: _locate(written, "app"))


def _locate(written: str, default_host: str) -> tuple[str, str]:
    name, _, host = written.partition("@")
    return host or default_host, name


def test_a_pause_goes_to_its_hosts_agent_and_its_record_comes_back(chaos_api, victim):
    base, _ = chaos_api
    backend = _backend(base, hold_s=60)
    (ref,) = backend.resolve("target")
    assert ref.ident == "target@app"
    backend.pause(ref)
    assert is_stopped(victim.pid)
    assert backend.state(ref) is TargetState.PAUSED
    backend.resume(ref)
    assert not is_stopped(victim.pid)
    (outage,) = backend.take_outages()["app"]  # the agent's own record, as GET /outages lists it
    assert (outage["target"], outage["status"], outage["end_reason"]) == ("target", "resumed", "early")
    assert outage["requested_s"] == 60  # the deadline the agent held it to
    assert backend.take_outages() == {}  # each outage is gathered once


def test_the_agent_resumes_by_itself_at_its_deadline(chaos_api, victim):
    base, _ = chaos_api
    backend = _backend(base, hold_s=0.5)
    (ref,) = backend.resolve("target")
    backend.pause(ref)  # and never resumed from here, as by a runner that died
    wait_for(lambda: not is_stopped(victim.pid), what="the agent to resume the target at its deadline")
    (outage,) = backend.take_outages()["app"]
    assert outage["end_reason"] == "scheduled"


def test_an_unknown_host_or_target_is_refused_naming_what_exists(chaos_api):
    base, _ = chaos_api
    backend = _backend(base, hold_s=60)
    backend.locate = lambda written: _locate(written, "web")
    with pytest.raises(UnknownTargetError, match="no agent for host 'web'; hosts: app, db"):
        backend.resolve("target")
    with pytest.raises(UnknownTargetError, match="ghost"):
        backend.resolve("ghost")


def test_an_agent_gone_is_reported_in_its_place(chaos_api, victim):
    base, process = chaos_api
    backend = _backend(base, hold_s=60)
    (ref,) = backend.resolve("target")
    backend.pause(ref)
    backend.resume(ref)
    process.terminate()
    process.wait(timeout=20)
    ((entry,),) = backend.take_outages().values()
    assert "cannot reach the chaos API" in str(entry["error"])
