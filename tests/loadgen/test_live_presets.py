"""A preset on Locust's command line: accepted, and its retry conditions honoured on the wire.

``grpc-retry`` (A6's example policy: 4 attempts, 0.1 s x2, ``[UNAVAILABLE]``) against two
targets that fail attempts 1 and 2 of every logical request: with 500, which gRPC reads
as ``UNKNOWN`` and never retries, and with 503, ``UNAVAILABLE``, which it retries after
``0.1 s x U(0.8, 1.2)`` and ``0.2 s x U(0.8, 1.2)``. One run takes the preset from
``--retry-strategy``, the other from ``--retry-preset`` (the web UI's choice field).
"""

from __future__ import annotations

import itertools

import pytest

pytestmark = pytest.mark.live

#: A retry may come this much before its delay only through clock granularity.
EARLY_S = 0.01


@pytest.fixture(scope="module")
def grpc_runs(module_failing_target, module_start_locust):
    start_target, start = module_failing_target, module_start_locust
    unknown = start_target(fail_first=2, status=500)
    unavailable = start_target(fail_first=2, status=503)
    think = "--think-time=constant:100ms"
    pending = {
        500: (unknown, start(unknown.url, "--retry-strategy=grpc-retry", think, run_time="3s")),
        503: (unavailable, start(unavailable.url, "--retry-preset=grpc-retry", think, run_time="3s")),
    }
    return {status: (target, run.finish()) for status, (target, run) in pending.items()}


def test_grpc_retry_never_retries_an_unknown_status(grpc_runs):
    target, run = grpc_runs[500]
    assert run.returncode == 0, run.output
    started = run.metrics.get("retrystorm_client_requests_started_total", strategy="grpc-retry")
    gave_up = run.metrics.get("retrystorm_client_requests_total", strategy="grpc-retry", outcome="gave_up")
    assert started >= 5
    assert gave_up >= started - 1  # the last one may still be waiting for its answer when the run ends
    assert run.metrics.get("retrystorm_client_requests_total", strategy="grpc-retry", outcome="ok") == 0
    assert run.metrics.get("retrystorm_client_retries_total", strategy="grpc-retry") == 0
    assert {entry["attempt"] for entry in target.judged()} == {1}  # no retry ever reached the server
    assert run.stat("/api (logical)")["num_failures"] == gave_up


def test_grpc_retry_retries_unavailable_with_a6_backoff(grpc_runs):
    target, run = grpc_runs[503]
    assert run.returncode == 0, run.output
    complete = [arrivals for arrivals in target.requests() if len(arrivals) == 3]
    assert len(complete) >= 3, target.judged()
    for arrivals in complete:
        first, second = (later - earlier for earlier, later in itertools.pairwise(arrivals))
        assert first >= 0.8 * 0.1 - EARLY_S, complete
        assert second >= 0.8 * 0.2 - EARLY_S, complete
    ok = run.metrics.get("retrystorm_client_requests_total", strategy="grpc-retry", outcome="ok")
    assert len(complete) - 1 <= ok <= len(complete)
    assert run.metrics.get("retrystorm_client_retries_total", strategy="grpc-retry") >= 2 * ok
