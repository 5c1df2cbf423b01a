"""Whether a run's steady window shows the service working: a run is judged only when it does.

A verdict on recovery compares what follows a trigger with the steady state before it. If the service did
not work in that steady state (every ``GET /`` answered 404, a POST refused with 405 or 415, a service
answering 5xx or timing out under the load alone) the comparison is meaningless, and a run must say NOT
VALID instead of naming a winner. Over the steady window ``[start_s, end_s]`` (counter differences between
the readings at its ends), the rule:

* **Each request of the mix** is judged by the attempts of it that ended in the window. Its *ok share* is
  the attempts answered 1xx-3xx over those that ended. It fails when the ok share is below ``min_ok_share``
  (0.8) and at least ``min_failed`` (5) attempts failed (fewer is too little to judge a rarely drawn
  request). The line names the request, its commonest failure (an HTTP status such as ``404``, ``timeout``
  or ``connection error``) and that failure's share of the request's attempts, and what to change: a 4xx
  other than 429 means the request does not fit the service (method, path, headers, body, URL); a 5xx or
  429 a service failing under the load alone; timeouts a service already overloaded.
* **Goodput**: at least one logical request succeeded in the window, and at least ``min_ok_share`` of the
  logical requests that ended in it succeeded (given up ones are the rest).
* **Answers at all**: an attempt ended in the window. With no attempt ended (a service that accepts and
  never answers, with no attempt timeout) nothing can be compared.
* **Readings**: the load generator was read at both ends of the window. A window without them is not
  valid either: nothing shows the service working.

The first failing rule, in that order, is the run's one line.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from retrystorm.durations import format_duration

#: An attempt's outcome that is a success (:class:`retrystorm.loadgen.outcomes.AttemptOutcome`).
OK = "ok"
#: Outcomes without an HTTP answer, and how a line names them.
NO_ANSWER = {"timeout": "timed out", "connection_error": "could not connect"}


@dataclasses.dataclass(frozen=True, slots=True)
class SteadyRule:
    """The thresholds of the steady-state rule (see the module docstring)."""

    min_ok_share: float = 0.8
    min_failed: int = 5

    def describe(self) -> str:
        """The rule in one sentence, for the results document's ``choices`` and the report."""
        return (
            f"A run is judged only when its steady window shows the service working: every request of the mix "
            f"got >= {self.min_ok_share:.0%} of its attempts answered 1xx-3xx (judged once at least "
            f"{self.min_failed} failed), >= {self.min_ok_share:.0%} of the logical requests that ended succeeded "
            "and at least one did, and the load generator was read at both ends of the window; otherwise the run "
            "is NOT VALID (exit 3), stopped at the end of the steady window, before any trigger."
        )


@dataclasses.dataclass(frozen=True, slots=True)
class RequestAnswers:
    """What one request of the mix got in the steady window: attempts ended by outcome, answered by status."""

    name: str
    outcomes: Mapping[str, float]
    statuses: Mapping[str, float]

    @property
    def ended(self) -> float:
        """Attempts that ended, every outcome."""
        return math.fsum(self.outcomes.values())

    @property
    def ok_share(self) -> float | None:
        """Attempts answered 1xx-3xx per attempt that ended; ``None`` when none ended."""
        return self.outcomes.get(OK, 0.0) / self.ended if self.ended else None

    def commonest_failure(self) -> tuple[str, float]:
        """The failure most attempts got: an HTTP status (``"404"``) or an outcome without an answer (``"timeout"``)."""
        failures = {
            status: count for status, count in self.statuses.items() if not status.isdigit() or int(status) >= 400
        }
        failures.update({outcome: count for outcome, count in self.outcomes.items() if outcome in NO_ANSWER})
        if not failures:  # outcomes without statuses (a generator that does not count them)
            failures = {outcome: count for outcome, count in self.outcomes.items() if outcome != OK}
        return max(failures.items(), key=lambda item: (item[1], item[0]), default=("failure", 0.0))


@dataclasses.dataclass(frozen=True, slots=True)
class SteadyState:
    """The steady-state rule's finding over one window, with the figures behind it."""

    valid: bool
    start_s: float
    end_s: float
    problem: str | None = None
    goodput_per_s: float | None = None
    ok_share: float | None = None
    requests: Mapping[str, float | None] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        """The finding and its figures (shares rounded to 4 places)."""
        return {
            "valid": self.valid,
            "window": [round(self.start_s, 6), round(self.end_s, 6)],
            "problem": self.problem,
            "goodput_per_s": _rounded(self.goodput_per_s),
            "ok_share": _rounded(self.ok_share),
            "ok_share_by_request": {name: _rounded(share) for name, share in self.requests.items()},
        }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _fix(failure: str) -> str:
    """What to change for a request's commonest failure."""
    if failure == "timeout":
        return "the service is overloaded before any trigger: lower load.users (or the rate) or raise attempt_timeout"
    if failure == "connection_error":
        return "nothing accepts connections there: check target.url and that the service listens on it"
    if failure.isdigit() and 400 <= int(failure) < 500 and failure != "429":
        return "the request does not fit the service: check requests: (method, path, headers, body) and target.url"
    return "the service fails under the load alone: fix it, or lower the load"


def _answered(failure: str) -> str:
    """``answered 404`` or ``timed out``, for a line."""
    if failure in NO_ANSWER:
        return NO_ANSWER[failure]
    return f"answered {failure}" if failure.isdigit() else f"ended in {failure.replace('_', ' ')}"


def judge(
    requests: Sequence[RequestAnswers] | None,
    succeeded: float,
    gave_up: float,
    window: tuple[float, float],
    rule: SteadyRule = SteadyRule(),
) -> SteadyState:
    """Apply the steady-state rule (module docstring) to the counts over ``window``.

    ``requests`` is ``None`` when the load generator was not read at both ends of the window;
    ``succeeded`` and ``gave_up`` are the logical requests that ended in it.
    """
    start_s, end_s = window
    span = f"from {format_duration(round(start_s, 3))} to {format_duration(round(end_s, 3))}"
    if requests is None:
        problem = f"the load generator was not read at both ends of the steady window ({span}): nothing shows the "
        problem += "service working; see its log, and run with fewer users or more --workers"
        return SteadyState(False, start_s, end_s, problem)
    length_s = max(end_s - start_s, 1e-9)
    shares = {answers.name: answers.ok_share for answers in requests}
    ended = math.fsum(answers.ended for answers in requests)
    ok = math.fsum(answers.outcomes.get(OK, 0.0) for answers in requests)
    found = SteadyState(True, start_s, end_s, None, succeeded / length_s, ok / ended if ended else None, shares)
    for answers in sorted(requests, key=lambda each: -each.ended):
        share = answers.ok_share
        failed = answers.ended - answers.outcomes.get(OK, 0.0)
        if share is not None and share < rule.min_ok_share and failed >= rule.min_failed:
            failure, count = answers.commonest_failure()
            problem = (
                f"{answers.name} {_answered(failure)} on {count / answers.ended:.0%} of its attempts "
                f"({count:,.0f} of {answers.ended:,.0f}) in the steady window ({span}); {_fix(failure)}"
            )
            return dataclasses.replace(found, valid=False, problem=problem)
    if ended <= 0:
        problem = f"no attempt ended in the steady window ({span}): the service answered nothing; check target.url"
        return dataclasses.replace(found, valid=False, problem=problem)
    finished = succeeded + gave_up
    if succeeded <= 0 or (finished > 0 and succeeded / finished < rule.min_ok_share):
        problem = (
            f"{succeeded:,.0f} of the {finished:,.0f} logical requests that ended in the steady window ({span}) "
            f"succeeded (below {rule.min_ok_share:.0%}): the service is not working before any trigger"
        )
        return dataclasses.replace(found, valid=False, problem=problem)
    return found
