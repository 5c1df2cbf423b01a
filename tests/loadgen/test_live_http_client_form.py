"""The web UI's start form chooses the HTTP client: retrystorm's emulation or urllib3's own ``Retry``.

One web Locust (``loadgen/locustfile.py``) and one ``retrystorm target`` answering 503 to every attempt, on
loopback. The form's ``http_client`` field runs the user it names for each run, the Retry storm tab says which,
and a strategy urllib3 cannot run is refused before anything starts. urllib3 sends no attempt number, so the
target sees every one of its attempts as a first one; the emulation numbers its retries.
"""

from __future__ import annotations

import json

import pytest

from .conftest import get_text

pytestmark = pytest.mark.live

PRESET = "urllib3:total=2,backoff_factor=0,status_forcelist=[503]"
FORM = {"user_count": "2", "spawn_rate": "10", "think_time": "constant:100ms", "retry_strategy": PRESET}


def retried_by(web) -> str | None:
    return json.loads(get_text(web.url + "/storm/series"))["client"]


def run_until_retries(web, wait, target, client: str) -> list[int]:
    """Start a run with ``client`` from the form, wait for 3 retries, stop; the attempt numbers the target saw."""
    before = len(target.judged())
    retries = web.metrics().get("retrystorm_client_retries_total", strategy="urllib3")
    answer = web.swarm(**FORM, http_client=client)
    assert answer["success"] is True, answer
    wait(lambda: web.metrics().get("retrystorm_client_retries_total", strategy="urllib3") >= retries + 3, 30,
         f"retries by {client}")  # fmt: skip
    said = retried_by(web)
    assert web.stop()["success"] is True
    wait(lambda: web.stats()["state"] == "stopped", 30, "the run to stop")
    return said, [entry["attempt"] for entry in target.judged()[before:]]


def test_the_start_form_runs_urllib3_s_own_retry_or_the_emulation_and_says_which(target_server, web_locust, wait):
    target = target_server("--model", "fixed", "--base-delay", "0")
    target.fail(status=503)
    web = web_locust(target.url)
    page = web.get_index()
    assert "http_client" in page and "urllib3" in page and "emulation" in page

    refused = web.swarm(**{**FORM, "retry_strategy": "fixed:50ms"}, http_client="urllib3")
    assert refused["success"] is False
    assert "--http-client urllib3: --retry-strategy 'fixed:50ms'" in refused["message"], refused
    assert "urllib3 preset only" in refused["message"]
    assert web.swarm(**FORM, http_client="curl")["success"] is False
    assert web.stats()["state"] == "ready", "a refused swarm must not start"
    assert retried_by(web) is None

    said, attempts = run_until_retries(web, wait, target, "urllib3")
    assert said == "urllib3's own Retry"
    assert attempts and set(attempts) == {1}, attempts  # urllib3 retried without retrystorm's attempt header

    said, attempts = run_until_retries(web, wait, target, "emulation")
    assert said == "retrystorm's emulation (the strategy retries)"
    assert max(attempts) == 3, attempts  # the emulation of the same preset: 3 attempts, numbered
    assert "Traceback" not in web.log.read_text()
