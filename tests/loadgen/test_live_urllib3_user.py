"""urllib3's own ``Retry`` in the Locust user, side by side with the ``urllib3`` preset's emulation.

Two pairs of headless Locust runs, all four at once, each against a ``retrystorm target`` of its own on
loopback: the urllib3 user (``loadgen/locustfile.py --http-client urllib3``, urllib3 retries) and the emulating
user (its default, the strategy's loop) with the same preset. Every attempt fails:

* ``503``, with ``urllib3:total=3,backoff_factor=0.1,status_forcelist=[503]``: 4 attempts a request, urllib3
  sleeping 0, 0.2 and 0.4 s before its retries (``Retry.get_backoff_time``), and the emulation too;
* attempt timeouts (a target answering after 1 s, a 300 ms attempt timeout), with ``Retry.DEFAULT``
  (``urllib3``: 3 retries, no backoff): urllib3 retries a read timeout of a ``GET``, 4 attempts a request.

Each ~3 s run, all four at once: 22 s in all with the start-up, measured on 2 cores at a load average of 5.
"""

from __future__ import annotations

import itertools
import statistics

import pytest

from tests.loadgen.conftest import LOCUSTFILE, target_starter

pytestmark = [pytest.mark.live, pytest.mark.slow]  # four Locusts and four targets: over 20 s

URLLIB3 = "--http-client=urllib3"
BACKOFF = "urllib3:total=3,backoff_factor=0.1,status_forcelist=[503]"
#: What urllib3 sleeps before retries 1, 2, 3 with BACKOFF (and what the preset draws).
DELAYS_S = [0.0, 0.2, 0.4]
#: A retry may come this much before its delay only through clock granularity.
EARLY_S = 0.01
#: How far apart urllib3's and the emulation's median gap before a retry may be: both pay the same round trip.
MEDIAN_SLACK_S = 0.05
COMMON = ("--think-time=constant:100ms", "--random-seed=3")


def chunks(arrivals: list[float], size: int) -> list[list[float]]:
    """The arrivals of one user's requests, ``size`` attempts each (urllib3 sends no attempt number)."""
    return [arrivals[start : start + size] for start in range(0, len(arrivals) - size + 1, size)]


def gaps(requests: list[list[float]]) -> list[list[float]]:
    return [[later - earlier for earlier, later in itertools.pairwise(arrivals)] for arrivals in requests]


@pytest.fixture(scope="module")
def runs(module_processes, module_start_locust):
    """Both pairs, started together: ``{(case, mode): (target, run)}``."""
    target_server, start_locust = target_starter(module_processes), module_start_locust
    pending = {}
    for case, flags in (
        ("503", ("--model", "fixed", "--base-delay", "0")),
        ("timeout", ("--model", "fixed", "--base-delay", "1s")),
    ):
        for mode, client in (("urllib3", (URLLIB3,)), ("emulated", ())):
            target = target_server(*flags)
            strategy = BACKOFF if case == "503" else "urllib3"
            options = [f"--retry-strategy={strategy}", *COMMON, *client]
            if case == "503":
                target.fail(status=503)
            else:
                options.append("--attempt-timeout=300ms")
            pending[case, mode] = (target, start_locust(target.url, *options, locustfile=LOCUSTFILE))
    return {key: (target, run.finish()) for key, (target, run) in pending.items()}


def counts(run, outcome: str) -> tuple[float, float, float]:
    """Requests given up, attempts ended with ``outcome``, attempts started."""
    get = run.metrics.get
    return (
        get("retrystorm_client_requests_total", strategy="urllib3", outcome="gave_up"),
        get("retrystorm_client_attempts_total", strategy="urllib3", outcome=outcome),
        get("retrystorm_client_attempts_started_total", strategy="urllib3"),
    )


@pytest.mark.parametrize(("case", "outcome"), [("503", "server_error"), ("timeout", "timeout")])
def test_urllib3_gives_up_after_the_preset_s_four_attempts_as_the_emulation_does(runs, case, outcome):
    for mode in ("urllib3", "emulated"):
        _, run = runs[case, mode]
        assert run.returncode == 0, run.output
        gave_up, ended, started = counts(run, outcome)
        assert gave_up >= 2, (mode, run.output)
        assert 4 * gave_up <= ended <= 4 * gave_up + 3, (mode, gave_up, ended)  # + the run's last, unfinished
        assert 4 * gave_up <= started <= 4 * (gave_up + 1), (mode, gave_up, started)
        assert run.metrics.get("retrystorm_client_requests_total", strategy="urllib3", outcome="ok") == 0
        assert run.metrics.get("retrystorm_client_retries_total", strategy="urllib3") >= 3 * gave_up
        assert run.stat("/api (logical)")["num_failures"] == gave_up


def test_urllib3_sleeps_its_backoff_and_the_preset_s_gaps_match_it(runs):
    target, _ = runs["503", "urllib3"]
    real = gaps(chunks([entry["at_seconds"] for entry in target.judged()], 4))
    emulated_target, _ = runs["503", "emulated"]
    emulated = gaps([arrivals for arrivals in emulated_target.requests() if len(arrivals) == 4])
    assert len(real) >= 2 and len(emulated) >= 2, (real, emulated)
    for request in real + emulated:
        for waited, delay in zip(request, DELAYS_S, strict=True):
            assert waited >= delay - EARLY_S, (request, real, emulated)
    for retry, delay in enumerate(DELAYS_S):
        real_median = statistics.median(request[retry] for request in real)
        emulated_median = statistics.median(request[retry] for request in emulated)
        assert abs(real_median - emulated_median) <= MEDIAN_SLACK_S, (delay, real, emulated)
    print("median gaps:", {"urllib3": [statistics.median(g) for g in zip(*real, strict=True)],  # noqa: T201 - figures, -s
                           "preset": [statistics.median(g) for g in zip(*emulated, strict=True)]})  # fmt: skip


def test_a_strategy_urllib3_cannot_run_is_one_line_and_exit_2(start_locust):
    run = start_locust("http://127.0.0.1:9", "--retry-strategy=fixed:100ms", URLLIB3)
    assert run.process.wait(timeout=60) == 2
    errors = [line for line in run.log.read_text().splitlines() if "ERROR" in line or "Traceback" in line]
    assert len(errors) == 1, run.log.read_text()
    assert (
        "--http-client urllib3: --retry-strategy 'fixed:100ms': urllib3's own Retry runs the urllib3 preset only"
        in errors[0]
    )
