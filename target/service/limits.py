"""What a client connection may hold: how long it may wait between requests, how long
a request may take to arrive, and how many connections may be open at once.

* **Header timeout** (``--header-timeout``, default 10 s): once the first byte of a
  request has arrived, the whole request (its head, and the small body an admin call
  has) must arrive within it. Aimed at clients that trickle a request a byte at a time
  (slowloris).
* **Idle timeout** (``--idle-timeout``, default 60 s): a connection that owes nothing
  and has sent nothing of its next request, fresh or between keep-alive requests, is
  closed after it. A fresh connection counts as idle, not as a request in progress:
  load generators open connections before they send (``bench/fidelity.py``'s wrk holds
  each first request up to 13 s), and an open connection costs the same either way.
  60 s lets a client that thinks for the seed's mean 10 s keep its connection (a gap
  over 60 s has probability e^-6, 0.25 %) and is under the usual 75-120 s of proxies in
  front of servers.
* **Neither ever applies while a response is owed.** A request held by the model, and
  the pipelined ones behind it, keep their connection however long the model takes:
  abandoned work held by the server is what the harness is about.
* **Max connections** (``--max-connections``, default 20,000): past it a new
  connection is closed at once, unread, and counted
  (``retrystorm_target_refused_connections_total``). The seed's storm holds about 8,000
  requests in flight, each on its own connection; 20,000 leaves room for 2.5 times that
  (``retrystorm target`` takes less when the open-files limit is lower: past that limit
  the kernel would refuse the accept anyway, uncounted).
  Closing at once is the cheapest answer when the server is out of room: a 503 would
  need the request read first (a parser, a buffer and a deadline for a connection it
  cannot keep), and a client sees either as a failed attempt.

The timeouts are enforced by one sweep over every connection every
:attr:`ConnectionLimits.sweep_interval_s` (1 s by default; 0.3 ms per 10,000
connections), not by a timer per request: serving a request only copies a deadline, a
sweep number. A connection is closed at the first sweep after its timeout has run out,
counted in sweeps (so at most one interval late), and the time a frozen server
(SIGSTOP) stood still does not count against its clients.
"""

from __future__ import annotations

import dataclasses
import math

from retrystorm.durations import format_duration
from retrystorm.errors import SpecError

#: The longest timeout accepted, as for every duration a model takes.
MAX_TIMEOUT_S = 3600.0
#: The most connections accepted as a bound: beyond any machine's open files here.
MAX_CONNECTIONS = 1_000_000
#: The default bound (``retrystorm target`` lowers it to what the open-files limit allows).
DEFAULT_MAX_CONNECTIONS = 20_000
#: How often the sweep runs at most (it runs more often when a timeout is shorter than 4 of these).
SWEEP_INTERVAL_S = 1.0


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionLimits:
    """The timeouts and the bound on connections (see the module's docstring)."""

    header_timeout_s: float = 10.0
    idle_timeout_s: float = 60.0
    max_connections: int = DEFAULT_MAX_CONNECTIONS

    def __post_init__(self) -> None:
        for name, value in (("header_timeout", self.header_timeout_s), ("idle_timeout", self.idle_timeout_s)):
            if not (math.isfinite(value) and 0 < value <= MAX_TIMEOUT_S):
                shown = format_duration(value) if value >= 0 else repr(value)
                raise SpecError(f"{name}: got {shown}, expected a duration > 0s and <= 1h")
        if not 1 <= self.max_connections <= MAX_CONNECTIONS:
            raise SpecError(f"max_connections: got {self.max_connections}, expected 1 to {MAX_CONNECTIONS:,}")

    @property
    def sweep_interval_s(self) -> float:
        """Time between sweeps: a second, or a quarter of the shorter timeout if that is less."""
        return min(SWEEP_INTERVAL_S, self.header_timeout_s / 4, self.idle_timeout_s / 4)

    def ticks(self, timeout_s: float) -> int:
        """Sweeps a connection may wait out before it is closed (at least ``timeout_s`` of them)."""
        return max(1, math.ceil(timeout_s / self.sweep_interval_s - 1e-9))
