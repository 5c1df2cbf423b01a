"""Each request of a mix sent once, before a scenario is written for it (``retrystorm init``).

:func:`probe_requests` sends the requests one after another, each on a connection of its own, and times each from
the start of its connection to the end of its answer's body. Redirects are followed, as the load generator follows
them. An answer counts as working when its status is below 400; a status of 400 or more, a refused connection or
no answer within :data:`PROBE_TIMEOUT_S` is a failure, as it would be for every attempt of the run.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Mapping, Sequence

import aiohttp

from retrystorm.durations import format_duration

#: How long one probe waits for its answer.
PROBE_TIMEOUT_S = 10.0


@dataclasses.dataclass(frozen=True, slots=True)
class ProbeAnswer:
    """What one request got: a ``status`` and its ``latency_s``, or a ``problem`` (no answer)."""

    method: str
    path: str
    status: int | None
    latency_s: float
    problem: str | None = None

    @property
    def works(self) -> bool:
        """It was answered with a status below 400."""
        return self.status is not None and self.status < 400

    def line(self) -> str:
        """``GET /orders: 200 in 52ms``, or ``GET /orders: no answer (connection refused)``."""
        if self.status is None:
            return f"{self.method} {self.path}: no answer ({self.problem})"
        verdict = "" if self.works else ": every attempt of it would fail"
        return f"{self.method} {self.path}: {self.status} in {format_duration(round(self.latency_s, 3))}{verdict}"


async def probe_requests(
    base_url: str, requests: Sequence[tuple[str, str]], *, timeout_s: float = PROBE_TIMEOUT_S
) -> list[ProbeAnswer]:
    """Send each ``(method, path)`` to ``base_url + path`` once, in order (see the module)."""
    answers = []
    for method, path in requests:
        answers.append(await probe_one(base_url, method, path, timeout_s))
    return answers


async def probe_one(
    base_url: str,
    method: str,
    path: str,
    timeout_s: float,
    *,
    headers: Mapping[str, str] | None = None,
    body: str | None = None,
) -> ProbeAnswer:
    """Send one request to ``base_url + path`` on a connection of its own and wait at most ``timeout_s`` for its
    whole answer (see the module; :mod:`retrystorm.runner.fresh_probe` sends a run's fresh requests through it).
    A ``body`` goes as the load generator sends it: its bytes, with only the ``headers`` given (no content type
    of the probe's own)."""
    started = time.perf_counter()
    try:
        async with (
            aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(force_close=True), timeout=aiohttp.ClientTimeout(total=timeout_s)
            ) as session,
            session.request(
                method,
                base_url + path,
                headers=dict(headers or {}),
                skip_auto_headers=("Content-Type",),
                data=body.encode() if body is not None else None,
            ) as response,
        ):
            await response.read()
            return ProbeAnswer(method, path, response.status, time.perf_counter() - started)
    except (aiohttp.ClientError, TimeoutError, OSError) as error:
        problem = f"none within {format_duration(timeout_s)}" if isinstance(error, TimeoutError) else str(error)
        return ProbeAnswer(method, path, None, time.perf_counter() - started, problem or type(error).__name__)


def probe_now(base_url: str, requests: Sequence[tuple[str, str]]) -> list[ProbeAnswer]:
    """:func:`probe_requests` from synchronous code."""
    return asyncio.run(probe_requests(base_url, requests))
