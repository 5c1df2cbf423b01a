"""A simulated client: one user (closed loop) or one logical request (open loop), and its states."""

from __future__ import annotations

import math

from retrystorm.loadgen.strategies import RetrySession

#: A client thinks, waits for an attempt's answer, backs off before a retry, or is done.
THINKING, WAITING, BACKOFF, DONE = range(4)


class Client:
    """One user (closed loop) or one logical request (open loop)."""

    __slots__ = ("aid", "requests_left", "session", "start_s", "state", "stop_s", "think_s")

    def __init__(self, session: RetrySession, requests_left: int | None) -> None:
        self.session = session
        self.requests_left = requests_left
        self.stop_s = math.inf  # an extra user of a spike starts no request from then on
        self.aid = 0  # id of the current attempt; a late answer carries an older one
        self.start_s = 0.0
        self.think_s = 0.0
        self.state = THINKING
