"""A load session's verdict, as it stands: whether the service recovered from the pauses it saw.

Pure: it reads the analysis of the readings so far (:func:`retrystorm.runner.record.analyse`, the runner's own), the
pauses as the chaos API recorded them, and the time. The verdict is one of:

* ``not started``: no load session of that name ran in this experiment;
* ``steady``: the load runs and no pause has been seen yet;
* ``pending``: a pause is under way, or one ended and its recovery is not judged yet;
* ``recovered``: after every pause seen, the server recovered within ``server_recovers_within`` and the users'
  goodput within ``client_recovers_within`` (the bounds set; the runner's definitions of recovery,
  :mod:`retrystorm.experiment.analysis.recovery`);
* ``not recovered``: after some pause, a bound set has passed without that recovery (a retry storm keeps the service
  down, or it came back too slowly): known as soon as ``R + bound + sustain`` has passed, where ``R`` is the resume
  and ``sustain`` the 5 s a recovery must hold;
* ``no verdict``: nothing can be stood behind: the load generator fell short of its demand
  (:mod:`retrystorm.experiment.analysis.validity`), the service did not work in the steady window before the first
  pause (:mod:`retrystorm.experiment.analysis.steady_state`: 404s, 5xx, timeouts under the load alone), there was
  no steady state before the first pause, no pause was
  seen while the load ran, or the load ended before a pause's recovery could be judged.

Known verdicts (``recovered``, ``not recovered``, ``no verdict`` once the load ended) do not change as more readings
come in, which is what lets the control end the load as soon as one is reached.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from retrystorm.experiment.analysis import RecoveryRule, RunResult
from retrystorm.experiment.scenario import Assertions, OutageWindow

NOT_STARTED = "not started"
STEADY = "steady"
PENDING = "pending"
RECOVERED = "recovered"
NOT_RECOVERED = "not recovered"
NO_VERDICT = "no verdict"
#: Verdicts after which more readings change nothing.
KNOWN = frozenset({RECOVERED, NOT_RECOVERED, NO_VERDICT})
#: Seconds of load a pause must come after, so that a steady state was measured before it.
MIN_STEADY_S = 4.0
#: The runner's definitions of recovery.
DEFAULT_RULE = RecoveryRule()


@dataclasses.dataclass(frozen=True, slots=True)
class Pause:
    """A pause the chaos API recorded, in seconds after the load started; ``end_s`` ``None``: still paused."""

    start_s: float
    end_s: float | None
    target: str


@dataclasses.dataclass(frozen=True, slots=True)
class Judgement:
    """A verdict and the one line that explains it."""

    verdict: str
    reason: str

    @property
    def known(self) -> bool:
        """Whether more readings could change it."""
        return self.verdict in KNOWN


def _bound_outcome(measured_s: float | None, bound_s: float, since_resume_s: float, sustain_s: float) -> bool | None:
    """``True``: recovered within the bound; ``False``: it cannot be any more; ``None``: not known yet."""
    if measured_s is not None:
        return measured_s <= bound_s + 1e-9
    # a recovery at R + t is seen once its sustain window has been read: t <= bound is still possible until then
    return False if since_resume_s > bound_s + sustain_s + 1.0 else None


def _bounds(assertions: Assertions) -> dict[str, float]:
    found = {}
    for side, bound in (("server", assertions.server_recovers_within), ("client", assertions.client_recovers_within)):
        if isinstance(bound, float | int):
            found[side] = float(bound)
    return found


def judge(
    result: RunResult | None,
    pauses: Sequence[Pause],
    *,
    elapsed_s: float,
    running: bool,
    assertions: Assertions,
    rule: RecoveryRule = DEFAULT_RULE,
) -> Judgement:
    """The verdict after ``elapsed_s`` seconds of load (see the module docstring); ``result``: the analysis so far."""
    validity = _extra(result, "validity")
    if validity is not None and not validity.get("valid", True):
        return Judgement(NO_VERDICT, _short_of_demand(validity))
    steady = _extra(result, "steady_state")
    if steady is not None and not steady.get("valid", True):
        return Judgement(NO_VERDICT, f"the service did not work before the pause: {steady.get('problem')}")
    if not pauses:
        if running:
            return Judgement(STEADY, "no pause seen yet")
        return Judgement(NO_VERDICT, "no pause was seen while the load ran: nothing to recover from")
    first = min(pause.start_s for pause in pauses)
    if first < MIN_STEADY_S:
        return Judgement(
            NO_VERDICT,
            f"the first pause began {first:.1f} s after the load started: at least {MIN_STEADY_S:g} s of steady load "
            "must come before it",
        )
    if any(pause.end_s is None for pause in pauses):
        return Judgement(PENDING, "the service is paused")
    return _after_pauses(result, pauses, elapsed_s=elapsed_s, running=running, bounds=_bounds(assertions), rule=rule)


def _after_pauses(
    result: RunResult | None,
    pauses: Sequence[Pause],
    *,
    elapsed_s: float,
    running: bool,
    bounds: Mapping[str, float],
    rule: RecoveryRule,
) -> Judgement:
    recoveries = list(result.recoveries) if result is not None else []
    if len(recoveries) < len(pauses):
        return Judgement(PENDING if running else NO_VERDICT, "no reading after the last pause yet")
    waiting = []
    for index, recovery in enumerate(recoveries, start=1):
        since_resume_s = elapsed_s - recovery.outage.end_s
        for side, bound in bounds.items():
            measured = recovery.server_s if side == "server" else recovery.client_s
            outcome = _bound_outcome(measured, bound, since_resume_s, rule.sustain_s)
            if outcome is False:
                shown = "not seen" if measured is None else f"took {measured:g} s"
                return Judgement(
                    NOT_RECOVERED, f"pause {index}: the {side}'s recovery {shown}, bound {bound:g} s after the resume"
                )
            if outcome is None:
                waiting.append(f"pause {index}: the {side}'s recovery")
    if waiting:
        if running:
            return Judgement(PENDING, f"waiting for {', '.join(waiting)}")
        return Judgement(
            NO_VERDICT, f"the load ended before {', '.join(waiting)} could be judged: run it longer after the pause"
        )
    if not bounds:
        return Judgement(NO_VERDICT, "no recovery bound is set: give server_recovers_within or client_recovers_within")
    return Judgement(RECOVERED, "every pause was followed by recovery within the bounds")


def _extra(result: RunResult | None, key: str) -> Mapping[str, object] | None:
    if result is None:
        return None
    found = result.extra.get(key)
    return found if isinstance(found, Mapping) else None


def _short_of_demand(validity: Mapping[str, object]) -> str:
    return (
        f"the load generator fell short of its demand in {validity.get('saturated_s')} of "
        f"{validity.get('seconds')} s (CPU-bound or starting fewer requests than its users asked for): "
        "use fewer users or more --workers"
    )


def as_windows(pauses: Sequence[Pause], now_s: float) -> list[OutageWindow]:
    """The pauses as the analysis takes them (one still under way ends now)."""
    return [
        OutageWindow(pause.start_s, pause.end_s if pause.end_s is not None else max(now_s, pause.start_s), pause.target)
        for pause in pauses
    ]
