"""One strategy's load, resolved from a scenario: what a load driver starts.

The scenario's ``load`` section with the strategy entry's overrides applied, in the
load generator's own terms (its option names and spec texts). Two translations:

* **open arrivals**: the scenario gives ``rate`` (logical requests/s); the Locust user
  starts one request per think time per user, so the think time becomes
  ``exponential:(users / rate)`` (Poisson arrivals at ``rate`` in all);
* **no attempt timeout** (``attempt_timeout: null``): the load generator needs a
  finite one, so it gets one longer than the run, which never fires.
"""

from __future__ import annotations

import dataclasses

from experiment.scenario import Scenario, StrategyEntry
from retrystorm.durations import format_duration

#: A load generator's own time limit is the run's duration plus this: a bound if the runner is gone.
LOCUST_RUN_MARGIN_S = 30.0


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class LoadSettings:
    """Everything a load driver needs for one strategy's run."""

    label: str
    strategy: str
    budget: str | None
    users: int
    spawn_rate: float
    think_time: str
    arrival: str
    attempt_timeout_s: float
    max_attempts: int | None
    request_deadline_s: float | None
    reset_after_success: bool
    duration_s: float
    seed: int

    @classmethod
    def of(cls, scenario: Scenario, entry: StrategyEntry) -> LoadSettings:
        """The load of ``entry`` in ``scenario``."""
        load = scenario.load
        policy, budget = entry.policy(load), entry.budget_for(load)  # a preset's own where none is given
        think = load.think_time.text()
        if load.arrival == "open" and load.rate:
            think = f"exponential:{format_duration(load.users / load.rate)}"
        return cls(
            label=entry.label,
            strategy=entry.strategy.spec(),
            budget=budget.spec() if budget is not None else None,
            users=load.users,
            spawn_rate=load.spawn_rate if load.spawn_rate is not None else float(load.users),
            think_time=think,
            arrival=load.arrival,
            attempt_timeout_s=load.attempt_timeout if load.attempt_timeout is not None else 2 * load.duration + 60,
            max_attempts=policy.max_attempts,
            request_deadline_s=(
                entry.request_deadline if entry.request_deadline is not None else load.request_deadline
            ),
            reset_after_success=load.reset_after_success,
            duration_s=load.duration,
            seed=scenario.seed,
        )

    def options(self) -> dict[str, str]:
        """The load generator's options (``loadgen.options`` names) with their values as text."""
        return {
            "retry_strategy": self.strategy,
            "retry_budget": self.budget or "none",
            "think_time": self.think_time,
            "attempt_timeout": format_duration(self.attempt_timeout_s),
            "max_attempts": str(self.max_attempts) if self.max_attempts is not None else "none",
            "request_deadline": format_duration(self.request_deadline_s) if self.request_deadline_s else "none",
            "arrival": self.arrival,
            "random_seed": str(self.seed),
        }

    def describe(self) -> str:
        """``300 users (spawn 300/s), think exponential:3s, closed loop, timeout 2s, fixed:100ms``."""
        extra = [f"budget {self.budget}"] if self.budget else []
        if self.max_attempts is not None:
            extra.append(f"at most {self.max_attempts} attempts")
        if self.request_deadline_s is not None:
            extra.append(f"deadline {format_duration(self.request_deadline_s)}")
        if not self.reset_after_success:
            extra.append("backoff kept after success")
        return ", ".join(
            [
                f"{self.users} users (spawn {self.spawn_rate:g}/s)",
                f"think {self.think_time}",
                f"{self.arrival} loop",
                f"timeout {format_duration(self.attempt_timeout_s)}",
                f"strategy {self.strategy}",
                *extra,
            ]
        )
