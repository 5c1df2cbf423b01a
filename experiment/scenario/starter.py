"""``retrystorm init``: a starter scenario for one's own service, every field explained in comments.

:func:`starter_scenario` writes the YAML text; it is parsed back before it is returned, so
what ``init`` writes always loads (and runs as is). The load is :func:`suggest_load`'s from the
latency ``init`` measured (without one, a modest 20 users thinking 2 s: about 10 requests/s),
the freeze 15 s after 30 s of steady load, and the two strategies the worked example compares:
fixed 100 ms retries against exponential backoff with full jitter. Without something to pause
(a command, a pid, a container or a compose service) the fault is left commented out: the
scenario then runs the steady load only.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence

from retrystorm.durations import format_duration
from retrystorm.experiment.scenario.loader import parse_scenario

#: The mean think time of a suggested load: long beside any attempt, so the users are many and independent.
SUGGESTED_THINK_S = 3.0
#: Bounds of a suggested load: enough users to be a crowd, no more than one generator process sends with ease.
SUGGESTED_USERS = (10, 1000)
SUGGESTED_RATE_CEILING_PER_S = 200.0
#: A suggested attempt timeout: this many times the measured latency, within the bounds after it.
TIMEOUT_PER_LATENCY = 20.0
TIMEOUT_BOUNDS_S = (1.0, 30.0)


@dataclasses.dataclass(frozen=True, slots=True)
class StarterLoad:
    """A closed-loop load: ``users`` each waiting an exponential think time of mean ``think_s`` between requests."""

    users: int
    think_s: float
    attempt_timeout_s: float
    #: The latency it was suggested from (``None``: the modest default).
    latency_s: float | None = None

    @property
    def rate_per_s(self) -> float:
        """About how many logical requests per second it offers while the service keeps up."""
        return self.users / self.think_s


DEFAULT_LOAD = StarterLoad(users=20, think_s=2.0, attempt_timeout_s=2.0)


def suggest_load(latency_s: float) -> StarterLoad:
    """A load that can make a storm of a service answering one request in ``latency_s`` (unloaded).

    ``rate = min(1 / latency_s, 200/s)``: one worker's pace, serving requests one after another. A freeze then
    builds a backlog that fixed retries can keep up, while the service, if it serves two or more at once, has
    room to drain it under backoff: the worked example (50 ms a request, two workers: 40/s) never recovers under
    fixed 100 ms retries at 20/s and does under backoff. ``users = rate * (3 s + latency_s)`` (closed loop,
    3 s mean think time) within 10 and 1,000; the attempt timeout ``20 * latency_s`` within 1 s and 30 s (at
    least ``2 * latency_s``), rounded up to 100 ms. Where the edge really lies depends on how many requests the
    service serves at once: ``retrystorm map`` finds it.
    """
    latency_s = max(latency_s, 1e-3)
    rate = min(1.0 / latency_s, SUGGESTED_RATE_CEILING_PER_S)
    low, high = SUGGESTED_USERS
    users = min(max(round(rate * (SUGGESTED_THINK_S + latency_s)), low), high)
    timeout = max(min(max(TIMEOUT_PER_LATENCY * latency_s, TIMEOUT_BOUNDS_S[0]), TIMEOUT_BOUNDS_S[1]), 2 * latency_s)
    timeout = math.ceil(round(timeout * 10, 6)) / 10
    return StarterLoad(users=users, think_s=SUGGESTED_THINK_S, attempt_timeout_s=timeout, latency_s=latency_s)


_PAUSE_COMMENTS = {
    "command": "started fresh for each strategy (cwd: this file's folder), stopped after; a pause "
    "freezes everything it starts (a cgroup of its own; its process group where none can be made)",
    "pid": "a running process to pause (SIGSTOP/SIGCONT); it must be yours, not this runner's ancestor",
    "container": "a container to pause (docker pause); it needs the label retrystorm.chaos=allow",
    "service": "a compose service whose containers are paused; they need the label retrystorm.chaos=allow",
}


def _quoted(text: str) -> str:
    return json.dumps(text)  # a JSON string is a YAML double-quoted scalar


def starter_scenario(
    url: str,
    *,
    name: str = "my-service",
    pause: tuple[str, str | int] | None = None,
    requests: Sequence[tuple[str, str]] = (("GET", "/"),),
    load: StarterLoad = DEFAULT_LOAD,
) -> str:
    """The text of a starter scenario for the service at ``url``; ``pause`` is ``(kind, value)``, ``requests``
    ``(method, path)`` pairs (see the module)."""
    lines = [
        f"# A starter scenario for {url}: run it with `retrystorm run {name}.yaml`; `--dry-run` shows the plan.",
        f"name: {_quoted(name)}",
        "seed: 1                                   # the same seed, the same think times and jitter",
        "target:",
        f"  url: {_quoted(url)}   # base URL the users send to",
    ]
    if pause is not None:
        kind, value = pause
        shown = _quoted(str(value)) if kind != "pid" else str(value)
        lines.append(f"  {kind}: {shown}   # {_PAUSE_COMMENTS[kind]}")
    lines += [
        "  # ready: /healthz                     # a path that must answer 2xx first (default: the URL answering)",
        "  # metrics: {url: http://HOST/metrics, in_flight: myapp_requests_in_progress}   # optional server gauge;",
        "  #   without it the server's recovery is judged from what clients see (attempt latency, timeouts)",
        "requests:                                 # what one logical request sends; several are drawn by weight",
        *(f"  - {{method: {method}, path: {_quoted(path)}, weight: 1}}" for method, path in requests),
        "  # each request may also take headers: {Name: value}, body: '...', name: ...",
        "retry_on: [timeout, connection, 5xx, 429]   # which failures are retried (4xx, a status, 503/retry-after too)",
        *_load_lines(load, name),
        "  duration: 90s                           # per strategy",
        "strategies:                               # each run in turn, against a fresh start of the command",
        "  - fixed:100ms                           # retry 100 ms after each failure: the storm-maker",
        '  - {label: backoff, strategy: "exponential:base=100ms,factor=2,max=30s,jitter=full"}',
    ]
    fault = "{pause: target, at: 30s, for: 15s}   # freeze it 15 s after 30 s of steady load"
    if pause is not None:
        lines += ["faults:", f"  - {fault}"]
    else:
        lines += [
            "faults: []                                # nothing to pause yet: add command, pid, container or",
            f"#  - {fault}   # service under target:, then this line",
        ]
    lines += [
        "assertions: {}                            # e.g. backoff: {server_recovers_within: 30s}",
        "",
    ]
    text = "\n".join(lines)
    parse_scenario(text, source="the starter scenario")  # what init writes always loads
    return text


_TIMEOUT_COMMENT = "a client gives up an attempt after this long"


def _load_lines(load: StarterLoad, name: str) -> list[str]:
    rate = f"about {load.rate_per_s:.3g} requests/s in all"
    lines = []
    if load.latency_s is not None:
        latency = format_duration(round(load.latency_s, 3))
        lines += [
            f"# The load: {rate}, one worker's pace at the {latency} a request init measured. Where the storm",
            "# really starts depends on how many requests the service serves at once: give model: below that many",
            f"# workers and `retrystorm map {name}.yaml --vary load.users=10..300:8` sweeps the load in the simulator.",
            f"# model: queue:workers=2,service_time={latency}   # an approximation of the service, for the simulator",
        ]
    think = "mean wait between requests" + ("" if load.latency_s is not None else f": {rate}")
    lines += [
        "load:",
        f"  users: {load.users:<33}# closed loop: each user waits for its request",
        f"  think_time: {'exponential:' + format_duration(load.think_s):<28}# {think}",
        f"  attempt_timeout: {format_duration(load.attempt_timeout_s):<23}# {_TIMEOUT_COMMENT}",
    ]
    return lines
