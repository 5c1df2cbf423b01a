"""wrk in virtual time: C connections, each sending its next request as soon as the last is answered.

``latencies(server, connections, seconds)`` drives any model server (``admit``,
``advance``, ``next_wakeup_s``) the way the live clock task does, keeping a scheduled
wake-up when an admission names a later one, but never late: it asks for the next
wake-up at the instant of an evaluation, where the live clock task asks after writing
the answers. Each connection sends its first request
within the first 5 ms and each next one 50-500 us after an answer (a client's turnaround
on loopback), so the requests' phases drift as on a real socket. Run as a script it
prints, as JSON, the p99 in ms of this tree's default exponential model at the given
connection counts: ``PYTHONPATH=OTHER_TREE python bench/closed_loop.py 60 100`` measures
another checkout's model with the same loop.
"""

from __future__ import annotations

import heapq
import json
import random
import sys
from typing import Any

WARM_UP_S = 1.0
SECONDS = 10.0


def latencies(server: Any, connections: int, seconds: float = SECONDS, seed: int = 1) -> list[float]:
    """Latencies (s) of the requests answered after the warm-up, until ``seconds``."""
    rng = random.Random(seed)
    sends = [(rng.uniform(0, 0.005), connection) for connection in range(connections)]
    heapq.heapify(sends)
    found: list[float] = []
    now, scheduled = 0.0, None
    while now < seconds:
        fresh = server.next_wakeup_s(now)
        if fresh is not None and (scheduled is None or fresh < scheduled):
            scheduled = fresh
        if sends and (scheduled is None or sends[0][0] < scheduled):
            now, connection = heapq.heappop(sends)
            server.admit(now, (connection, now))
            continue
        if scheduled is None:
            break
        now, scheduled = scheduled, None
        for (connection, sent_s), _, _ in server.advance(now, rng):
            if sent_s >= WARM_UP_S:
                found.append(now - sent_s)
            heapq.heappush(sends, (now + rng.uniform(50e-6, 500e-6), connection))
    return found


def p99_ms(values: list[float]) -> float:
    """The 99th percentile (nearest rank), in ms."""
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def main() -> None:
    from retrystorm.target.models import parse_model  # this tree's, or PYTHONPATH's

    model = parse_model("exponential")
    print(json.dumps({count: p99_ms(latencies(model.start(0.0), int(count))) for count in sys.argv[1:]}))


if __name__ == "__main__":
    main()
