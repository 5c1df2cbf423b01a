"""Replay a failure sequence through a preset, in virtual time: what the preset would do."""

from __future__ import annotations

import dataclasses
import random

from retrystorm.loadgen.strategies import RetrySession, parse_strategy, resolve


@dataclasses.dataclass
class Replay:
    """Per call: the delay before each retry; and how many retries were made in all."""

    delays: list[list[float]] = dataclasses.field(default_factory=list)

    @property
    def retries(self) -> int:
        return sum(len(call) for call in self.delays)

    @property
    def attempts(self) -> list[int]:
        return [len(call) + 1 for call in self.delays]


def replay(spec: str, failures: list[dict], *, calls: int, seed: int, budget_state: object = None) -> Replay:
    """Run ``calls`` calls of ``spec`` whose every attempt fails as ``failures[attempt - 1]`` says
    (keyword arguments of ``RetrySession.on_failure``; the last one repeats), with ``random.Random(seed)``."""
    policy, budget = resolve(parse_strategy(spec))
    state = budget_state if budget_state is not None else (budget.start() if budget is not None else None)
    session = RetrySession(policy, budget=state, rng=random.Random(seed))
    result = Replay()
    now = 0.0
    for _ in range(calls):
        session.start_request(now)
        call: list[float] = []
        while True:
            failure = failures[min(len(call), len(failures) - 1)]
            decision = session.on_failure(now, **failure)
            if not decision.retry:
                break
            call.append(decision.delay_s)
            now += decision.delay_s
        result.delays.append(call)
        now += 1.0
    return result
