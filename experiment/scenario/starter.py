"""``retrystorm init``: a starter scenario for one's own service, every field explained in comments.

:func:`starter_scenario` writes the YAML text; it is parsed back before it is returned, so
what ``init`` writes always loads (and runs as is). The load is modest on purpose (20
users thinking 2 s on average: about 10 requests/s), the freeze 15 s after 30 s of steady
load, and the two strategies the worked example compares: fixed 100 ms retries against
exponential backoff with full jitter. Without something to pause (a command, a pid, a
container or a compose service) the fault is left commented out: the scenario then runs
the steady load only.
"""

from __future__ import annotations

import json

from retrystorm.experiment.scenario.loader import parse_scenario

_PAUSE_COMMENTS = {
    "command": "started fresh for each strategy (cwd: this file's folder), stopped after; a pause "
    "freezes everything it starts (a cgroup of its own; its process group where none can be made)",
    "pid": "a running process to pause (SIGSTOP/SIGCONT); it must be yours, not this runner's ancestor",
    "container": "a container to pause (docker pause); it needs the label retrystorm.chaos=allow",
    "service": "a compose service whose containers are paused; they need the label retrystorm.chaos=allow",
}


def _quoted(text: str) -> str:
    return json.dumps(text)  # a JSON string is a YAML double-quoted scalar


def starter_scenario(url: str, *, name: str = "my-service", pause: tuple[str, str | int] | None = None) -> str:
    """The text of a starter scenario for the service at ``url``; ``pause`` is ``(kind, value)`` (see the module)."""
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
        "  - {method: GET, path: /, weight: 1}     # also: headers: {Name: value}, body: '...', name: ...",
        "retry_on: [timeout, connection, 5xx, 429]   # which failures are retried (4xx, a status, 503/retry-after too)",
        "load:",
        "  users: 20                               # closed loop: each user waits for its request",
        "  think_time: exponential:2s              # mean wait between requests: about 10 requests/s in all",
        "  attempt_timeout: 2s                     # a client gives up an attempt after this long",
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
