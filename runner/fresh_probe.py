"""Fresh requests: would a new client be served right now?

Once a second, at the middle of each second after the load started, the runner sends the scenario's first request
(the built-in target's ``GET /api`` without a mix) on a **new connection** of its own, outside every user's retry
loop (:func:`retrystorm.runner.probe_once.probe_one`, as ``retrystorm init`` probes), and waits at most the attempt
timeout for its whole answer. The answer is *in time* when it has a status below 400 and arrives before that
timeout (:attr:`retrystorm.runner.probe_once.ProbeAnswer.works`, the load's ``ok``).

This is the signal every service has, metrics or not, and the one a user means by "the server is back": gauges can
saturate below their threshold (a thread pool's in-flight gauge never exceeds its thread count) or go unread (a
``/metrics`` queued behind the backlog), but a fresh request behind a drowning backlog still waits. Server recovery
(:mod:`retrystorm.experiment.analysis.recovery`) asks that the fresh requests of every second of its sustain window
were answered in time, beside the gauges.

A probe that times out is recorded at the second it was *sent* (a request sent then would not have been served),
each probe on its own task, so a slow answer never delays the next one. The probe costs the target one request a
second; during a pause it waits in the target's accept queue like any new client.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit

from retrystorm.experiment.scenario import RunSpec
from retrystorm.loadgen.request_mix import RequestSpec
from retrystorm.runner.probe_once import probe_one

#: The request a run without a request mix sends (the built-in target's).
DEFAULT_PROBE = RequestSpec()
#: How long a probe waits when the scenario sets no attempt timeout.
NO_TIMEOUT_WAIT_S = 10.0
#: Where in each second a probe is sent (its middle: away from the readings taken at whole seconds).
OFFSET_S = 0.5


@dataclasses.dataclass(frozen=True, slots=True)
class FreshAnswer:
    """One fresh request: when it was sent (seconds after time 0), whether it was answered in time, and how."""

    sent_s: float
    in_time: bool
    #: Seconds to the whole answer; ``None``: none arrived within the timeout (or the connection failed).
    latency_s: float | None
    status: int | None = None
    error: str | None = None


def fresh_timeout_s(spec: RunSpec) -> float:
    """How long a fresh request of ``spec``'s run waits: its attempt timeout, else :data:`NO_TIMEOUT_WAIT_S`."""
    return spec.attempt_timeout_s if spec.attempt_timeout_s is not None else NO_TIMEOUT_WAIT_S


def probe_for(spec: RunSpec, base_url: str, clock: Callable[[], float]) -> FreshProbe | None:
    """The probe of a run of ``spec`` against ``base_url``; ``None`` where none is sent (a gRPC load, not http://)."""
    if spec.grpc is not None or not base_url.startswith("http://"):
        return None
    request = spec.requests[0] if spec.requests else DEFAULT_PROBE
    return FreshProbe(base_url, request, fresh_timeout_s(spec), clock=clock)


class FreshProbe:
    """Sends one fresh request a second to ``base_url`` (``http://`` only) and keeps every answer."""

    def __init__(
        self,
        base_url: str,
        request: RequestSpec = DEFAULT_PROBE,
        timeout_s: float | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if urlsplit(base_url).scheme != "http":
            raise ValueError(f"a fresh-request probe needs an http:// URL, got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.request = request
        self.timeout_s = timeout_s if timeout_s is not None else NO_TIMEOUT_WAIT_S
        self.clock = clock
        self.answers: list[FreshAnswer] = []

    async def run(self, t0: float, duration_s: float) -> None:
        """Probe at ``t0 + k + 0.5`` for every whole second ``k`` of the run; each probe ends within its timeout."""
        pending: set[asyncio.Task[None]] = set()
        try:
            for second in range(math.ceil(duration_s - 1e-9)):
                delay = t0 + second + OFFSET_S - self.clock()
                if delay > 0:
                    await asyncio.sleep(delay)
                task = asyncio.create_task(self.probe(self.clock() - t0), name=f"fresh request {second}")
                pending.add(task)
                task.add_done_callback(pending.discard)
            if pending:
                await asyncio.wait(pending)
        finally:
            for task in pending:
                task.cancel()

    async def probe(self, sent_s: float) -> None:
        """Send one fresh request and record its answer."""
        request = self.request
        answer = await probe_one(
            self.base_url, request.method, request.path, self.timeout_s, headers=request.headers, body=request.body
        )
        latency = answer.latency_s if answer.status is not None else None
        self.answers.append(FreshAnswer(round(sent_s, 3), answer.works, latency, answer.status, answer.problem))


def in_time_per_second(answers: Sequence[FreshAnswer], length: int) -> list[float | None]:
    """For each second ``[i, i + 1)`` of the run: 1.0 when every fresh request sent in it was answered in time,
    0.0 when one was not, ``None`` when none was sent."""
    seconds: list[float | None] = [None] * length
    for answer in answers:
        index = math.floor(answer.sent_s)
        if 0 <= index < length:
            previous = seconds[index]
            seconds[index] = float(answer.in_time) if previous is None else min(previous, float(answer.in_time))
    return seconds


def summary(answers: Sequence[FreshAnswer], timeout_s: float) -> dict[str, object]:
    """What results.json says of a run's fresh requests."""
    return {
        "sent": len(answers),
        "answered_in_time": sum(answer.in_time for answer in answers),
        "every_s": 1.0,
        "timeout_s": timeout_s,
    }
