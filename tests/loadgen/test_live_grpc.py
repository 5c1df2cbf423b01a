"""The gRPC user against the built-in target's gRPC front: grpcio's own retries beside their emulation.

Both modes run the same policy (gRFC A6's example: 4 attempts, 0.1 s x2 backoff, ``[UNAVAILABLE]``)
against the same target and the same failures, one Locust process each (one channel: one throttle
bucket). The emulation must stay within the documented tolerance of the real library
(docs/guides/grpc.md): attempts per logical call within :data:`ATTEMPTS_TOLERANCE`, the median
logical latency within :data:`LATENCY_TOLERANCE`, and the same outcome for every call.
"""

from __future__ import annotations

import json
import re
import sys
import urllib.request
from pathlib import Path

import pytest

from .conftest import ROOT, Metrics, get_text, wait_until

pytestmark = pytest.mark.live
GRPC_LOCUSTFILE = ROOT / "loadgen" / "grpc_locustfile.py"
ATTEMPTS = "retrystorm_target_grpc_attempts_total"
#: Relative difference allowed between real and emulated attempts per logical call.
ATTEMPTS_TOLERANCE = 0.05
#: Relative difference allowed between their median logical latencies (the backoff's jitter, a busy machine).
LATENCY_TOLERANCE = 0.25
THINK = "--think-time=constant:200ms"
#: Each user finishes its call when the run ends: no call cut short between its attempts skews the counts.
STOP = "--stop-timeout=10"


class GrpcTarget:
    def __init__(self, processes) -> None:
        argv = [str(Path(sys.executable).with_name("retrystorm")), "target", "--port", "0", "--grpc-port", "0"]
        argv += ["--report-interval", "0", "--model", "fixed", "--base-delay", "10ms"]
        _, log = processes.start("grpc-target", argv)
        found = wait_until(
            lambda: re.search(
                r"listening on (http://127\.0\.0\.1:\d+) and gRPC on 127\.0\.0\.1:(\d+)", log.read_text()
            ),
            30,
            "the target to listen",
        )
        self.url, self.grpc = found.group(1), f"127.0.0.1:{found.group(2)}"

    def fail(self, **rule) -> None:
        request = urllib.request.Request(self.url + "/admin/faults", data=json.dumps(rule).encode(), method="PUT")
        request.add_header("Content-Type", "application/json")
        urllib.request.urlopen(request, timeout=5).close()

    def attempts(self) -> dict[str, float]:
        metrics = Metrics(get_text(self.url + "/metrics"))
        return {labels["attempt"]: value for labels, value in metrics.series(ATTEMPTS)}


def run_mode(start_locust, target: GrpcTarget, mode: str, *options: str):
    """One Locust run of ``mode``; the run and the attempts that reached the target meanwhile, by number."""
    before = target.attempts()
    run = start_locust(
        target.grpc, f"--grpc-mode={mode}", THINK, STOP, *options, users=5, run_time="4s", locustfile=GRPC_LOCUSTFILE
    ).finish()
    after = target.attempts()
    return run, {key: after[key] - before.get(key, 0.0) for key in after}


def logical(run) -> dict:
    return run.stat("/retrystorm.target.v1.Target/Echo (logical)")


def test_real_and_emulated_a6_retries_agree_on_attempts_latency_and_outcomes(processes, start_locust):
    target = GrpcTarget(processes)
    target.fail(status=503, first_attempts=2)
    real, real_attempts = run_mode(start_locust, target, "real", "--retry-strategy=grpc-retry")
    emulated, emulated_attempts = run_mode(start_locust, target, "emulated", "--retry-strategy=grpc-retry")
    for run in (real, emulated):
        assert run.returncode == 0, run.output
        assert logical(run)["num_requests"] >= 10 and logical(run)["num_failures"] == 0
    # per call that reached the target (its attempt 1); every call ran to its end (STOP)
    per_call = {"real": _per_call(real_attempts), "emulated": _per_call(emulated_attempts)}
    assert per_call["real"] == pytest.approx(3.0, rel=ATTEMPTS_TOLERANCE)
    assert per_call["emulated"] == pytest.approx(per_call["real"], rel=ATTEMPTS_TOLERANCE)
    assert real_attempts["3"] > 0 and real_attempts.get("4", 0) == 0  # grpcio's retries, numbered by grpcio
    medians = {name: logical(run)["response_times"] for name, run in (("real", real), ("emulated", emulated))}
    real_median = _median_ms(medians["real"])
    assert _median_ms(medians["emulated"]) == pytest.approx(real_median, rel=LATENCY_TOLERANCE)
    assert real_median >= 0.3 * 0.8 * 1000  # two backoffs of A6: 0.1 s and 0.2 s, x U(0.8, 1.2)
    started = real.metrics.get("retrystorm_client_attempts_started_total", strategy="grpc-retry")
    assert started == pytest.approx(sum(real_attempts.values()), abs=6)  # channelz, read once a second


def test_retry_throttling_cuts_real_and_emulated_retries_alike(processes, start_locust):
    target = GrpcTarget(processes)
    target.fail(status=503)  # every attempt fails: the throttle empties and stays empty
    spec = "--retry-strategy=grpc-retry:max_tokens=10,token_ratio=0.1"
    real, real_attempts = run_mode(start_locust, target, "real", spec)
    emulated, emulated_attempts = run_mode(start_locust, target, "emulated", spec)
    for run, attempts in ((real, real_attempts), (emulated, emulated_attempts)):
        assert run.returncode == 0, run.output
        assert logical(run)["num_failures"] == logical(run)["num_requests"] >= 10
        calls = attempts["1"]  # the calls that reached the target, a last one cut short by the run's end included
        # 10 tokens, one taken per failure, retries while more than 5: 4 attempts at first, then 1 each;
        # calls in flight together when the bucket runs down may each get one retry more
        assert calls + 3 <= sum(attempts.values()) <= calls + 3 + 5, attempts


def _per_call(attempts: dict[str, float]) -> float:
    return sum(attempts.values()) / attempts["1"]


def _median_ms(response_times: dict[str, int]) -> float:
    """The median of Locust's rounded response-time histogram (``{"ms": count}``)."""
    points = sorted((float(ms), count) for ms, count in response_times.items())
    half, seen = sum(count for _, count in points) / 2, 0
    for ms, count in points:
        seen += count
        if seen >= half:
            return ms
    raise AssertionError("no response times")


def test_a_bad_grpc_flag_is_exit_2_naming_it():
    import subprocess

    from .conftest import locust_argv

    argv = locust_argv("--headless", "--grpc-mode", "both", locustfile=GRPC_LOCUSTFILE)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert "argument --grpc-mode: got 'both', expected real or emulated" in done.stderr
    assert "Traceback" not in done.stderr
