"""Which strategy wins a run, and why, from the results document alone; or that they tie.

**Ranking rule.** Strategies are sorted by these keys, each deciding only when all
earlier ones tie:

1. outages after which the *server* recovered (more is better): a service that stays
   down is the worst outcome;
2. outages after which the *users* recovered (more is better);
3. total client recovery time over those outages (shorter is better): how long users waited;
4. total server recovery time (shorter is better);
5. success ratio, succeeded / logical requests (higher is better);
6. amplification, attempts / logical requests (lower is better): load added by retries;
7. peak in flight (lower is better).

**Ties and margins.** Two strategies tie on a key when their difference is within the
key's *margin*: a figure that varies that much from one run of the same strategy to the
next cannot tell two strategies apart. With one run per strategy the margin is the
documented one below, measured as the run-to-run spread of the demo and of the worked
example over 5 repeats (``retrystorm run --repeat 5``); with ``--repeat N`` it is the larger
of that and each strategy's own spread over its runs (largest minus smallest). A winner is
named only when it beats every other strategy on some key, all earlier keys tied; otherwise
the headline says which strategies tie, on which figure, and by how little. The margins,
each above the largest spread measured over 5 repeats of the demo and of the worked
example: recoveries, any difference of a whole outage; user recovery time, 2 s or 35 %
of the larger (the worked example's backoff: 17.9 s to 26.9 s); server recovery time, 2 s
or 15 % (14.0 s to 15.4 s; a reading is taken once a second, and recoveries resolve to
one); success ratio, 1.5 percentage points (fixed retries in the worked example: 84.8 %
to 85.8 %); amplification, 12 % (6.47 to 7.13 attempts per request); peak in flight, 85 % of the larger
(the demo's smira: 81 to 423, as the once-a-second reading falls before or after the
backlog's release), so that it decides only between peaks several times apart.

Without outages keys 1 to 4 tie and the run is decided by success, amplification
and peak. Assertions are *not* a key: a scenario may assert that a strategy fails
(``client_recovers_within: never``), and passing that is no win; the headline
reports them beside the ranking. A missing value (no requests, never read) ranks
last on its key.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from retrystorm.experiment.report.text import count, per_outage, percent, seconds, times

#: What recovery is measured from, by the kind of trigger: the resume of a pause, the end of any other.
TRIGGER_ENDS = {
    "pause": "the resume",
    "slow": "the end of the slow",
    "spike": "the end of the spike",
    "errors": "the end of the error burst",
}


def trigger_end(row: Mapping[str, Any]) -> str:
    """What a run's recovery times are measured from, in words: ``the resume`` when its triggers were pauses (or it
    lists none), ``the end of the slow`` (spike, error burst) when they were all of one other kind, ``the end of the
    trigger`` for a mix."""
    triggers = row.get("triggers")
    kinds = {str(window.get("kind")) for window in triggers or [] if isinstance(window, Mapping)}
    if not kinds or kinds == {"pause"}:
        return TRIGGER_ENDS["pause"]
    return TRIGGER_ENDS.get(kinds.pop(), "the end of the trigger") if len(kinds) == 1 else "the end of the trigger"


@dataclasses.dataclass(frozen=True, slots=True)
class Standing:
    """One strategy's figures that the ranking reads."""

    label: str
    outages: int
    server: list[float | None]
    client: list[float | None]
    success_ratio: float | None
    amplification: float | None
    peak_in_flight: float | None
    latency_p99: float | None
    #: Each key's spread over this strategy's repeated runs (``--repeat``), by key name; empty for one run.
    spreads: Mapping[str, float] = dataclasses.field(default_factory=dict)
    #: What its recovery times are measured from, in words (:func:`trigger_end`).
    end: str = "the resume"

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> Standing:
        """The standing of one row of the results document."""
        return cls(
            label=str(row["strategy"]),
            outages=len(row.get("outages") or []),
            server=per_outage(row, "server_recovery_s"),
            client=per_outage(row, "client_recovery_s"),
            success_ratio=_number(row.get("success_ratio")),
            amplification=_number(row.get("amplification")),
            peak_in_flight=_number(row.get("peak_in_flight")),
            latency_p99=_number(row.get("latency_p99")),
            end=trigger_end(row),
        )

    @property
    def servers_recovered(self) -> int:
        """Outages after which the server recovered."""
        return sum(value is not None for value in self.server)

    @property
    def clients_recovered(self) -> int:
        """Outages after which the users recovered."""
        return sum(value is not None for value in self.client)


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _total(values: Sequence[float | None]) -> float:
    return math.fsum(value for value in values if value is not None)


def _lower(value: float | None) -> float:
    return math.inf if value is None else value


def _higher(value: float | None) -> float:
    return math.inf if value is None else -value


@dataclasses.dataclass(frozen=True, slots=True)
class Margin:
    """How far apart two values of a key must be to tell two strategies apart: ``max(absolute, relative * the
    larger)``."""

    absolute: float
    relative: float = 0.0

    def between(self, first: float, second: float) -> float:
        """The margin for these two values."""
        return max(self.absolute, self.relative * max(abs(first), abs(second)))

    def describe(self, show: Callable[[float], str]) -> str:
        """``2s or 25 % of the larger``."""
        relative = f" or {self.relative:.0%} of the larger" if self.relative else ""
        if not self.absolute:
            return f"{self.relative:.0%}" if self.relative else "none"
        return f"{show(self.absolute)}{relative}"


@dataclasses.dataclass(frozen=True, slots=True)
class Key:
    """One ranking key: its name, its sort value (smaller ranks first), how to show it, its margin (on the sort
    value's scale) and how a margin is shown."""

    name: str
    sort: Callable[[Standing], float]
    show: Callable[[Standing], str]
    margin: Margin = Margin(0.0)
    unit: Callable[[float], str] = lambda value: f"{value:g}"


#: The margins of the module docstring, from the spread over 5 repeats of the demo and the worked example
#: (``retrystorm run smira-laptop --repeat 5`` and ``retrystorm run examples/gunicorn/scenario.yaml --repeat 5``).
KEYS = (
    Key("server recoveries", lambda s: -s.servers_recovered, lambda s: f"{s.servers_recovered} of {s.outages}"),
    Key("user recoveries", lambda s: -s.clients_recovered, lambda s: f"{s.clients_recovered} of {s.outages}"),
    Key(
        "user recovery time", lambda s: round(_total(s.client), 6), lambda s: seconds(_total(s.client)),
        Margin(2.0, 0.35), seconds,
    ),
    Key(
        "server recovery time", lambda s: round(_total(s.server), 6), lambda s: seconds(_total(s.server)),
        Margin(2.0, 0.15), seconds,
    ),
    Key(
        "success ratio", lambda s: _higher(s.success_ratio), lambda s: percent(s.success_ratio), Margin(0.015),
        lambda value: f"{100 * value:g} percentage points",
    ),
    Key(
        "amplification", lambda s: _lower(s.amplification), lambda s: times(s.amplification), Margin(0.0, 0.12),
        lambda value: f"{value:.3g}×",
    ),
    Key(
        "peak in flight", lambda s: _lower(s.peak_in_flight), lambda s: count(s.peak_in_flight), Margin(2.0, 0.85),
        lambda value: f"{value:,.0f} requests",
    ),
)  # fmt: skip


def sort_key(standing: Standing) -> tuple[float, ...]:
    """The ranking keys' values as a tuple, exactly (see :func:`compare` for ties within a margin)."""
    return tuple(key.sort(standing) for key in KEYS)


@dataclasses.dataclass(frozen=True, slots=True)
class Comparison:
    """How two strategies compare: ``order`` -1 (the first is better), 1, or 0 (a tie); the key that decided, or
    the first key on which they differed within its margin (``within``), with that margin."""

    order: int
    key: Key | None = None
    within: Key | None = None
    margin: float = 0.0


def threshold(key: Key, first: Standing, second: Standing) -> float:
    """How far apart ``first`` and ``second`` must be on ``key``: its margin, or either one's spread over its runs."""
    a, b = key.sort(first), key.sort(second)
    spread = max(first.spreads.get(key.name, 0.0), second.spreads.get(key.name, 0.0))
    finite = math.isfinite(a) and math.isfinite(b)
    return max(key.margin.between(a, b) if finite else 0.0, spread)


def compare(first: Standing, second: Standing) -> Comparison:
    """The ranking rule with its margins (see the module docstring)."""
    within: tuple[Key, float] | None = None
    for key in KEYS:
        a, b = key.sort(first), key.sort(second)
        if a == b:
            continue
        margin = threshold(key, first, second)
        if not (math.isfinite(a) and math.isfinite(b)) or abs(a - b) > margin + 1e-9:
            return Comparison(-1 if a < b else 1, key, None if within is None else within[0], margin)
        within = within or (key, margin)
    return Comparison(0, None, None if within is None else within[0], 0.0 if within is None else within[1])


def rank(document: Mapping[str, Any]) -> list[Standing]:
    """The document's strategies, best first by :func:`compare` (ties keep the document's order)."""
    spreads = key_spreads(document)
    standings = [
        dataclasses.replace(Standing.of(row), spreads=spreads.get(str(row["strategy"]), {}))
        for row in document.get("results", [])
    ]

    def order(first: Standing, second: Standing) -> int:
        return compare(first, second).order

    return sorted(standings, key=functools.cmp_to_key(order))


def key_spreads(document: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """Per strategy, each key's spread (largest minus smallest sort value) over its repeated runs
    (``repeats.runs``, with ``--repeat``); empty for a single run."""
    repeats = document.get("repeats")
    runs = repeats.get("runs") if isinstance(repeats, Mapping) else None
    by_label: dict[str, list[Standing]] = {}
    for row in runs if isinstance(runs, list) else []:
        by_label.setdefault(str(row["strategy"]), []).append(Standing.of(row))
    found: dict[str, dict[str, float]] = {}
    for label, standings in by_label.items():
        spreads = {}
        for key in KEYS:
            values = [key.sort(standing) for standing in standings]
            finite = [value for value in values if math.isfinite(value)]
            if len(finite) == len(values) and len(values) > 1:
                spreads[key.name] = max(values) - min(values)
        found[label] = spreads
    return found


@dataclasses.dataclass(frozen=True, slots=True)
class Decision:
    """Who wins, against whom and on which key; or, when nobody beats every other, who ties (``tied``), on which
    key they differed within its margin."""

    ranked: list[Standing]
    winner: Standing | None
    runner_up: Standing | None
    comparison: Comparison
    tied: list[str]


def decide(document: Mapping[str, Any]) -> Decision:
    """The ranking rule's verdict on ``document`` (module docstring)."""
    ranked = rank(document)
    if len(ranked) < 2:
        return Decision(ranked, ranked[0] if ranked else None, None, Comparison(0), [])
    top, others = ranked[0], ranked[1:]
    comparisons = [compare(top, other) for other in others]
    tied = [other for other, found in zip(others, comparisons, strict=True) if found.order >= 0]
    if not tied:
        return Decision(ranked, top, others[0], comparisons[0], [])
    first = next(found for found in comparisons if found.order >= 0)
    return Decision(ranked, None, tied[0], first, [top.label, *(other.label for other in tied)])


def tie_reason(decision: Decision) -> str:
    """``They tie on every ranking key.`` or which figure they differ on, and that it is within the margin."""
    key, (first, *_) = decision.comparison.within, decision.ranked
    other = decision.runner_up
    if key is None or other is None:
        return "They tie on every ranking key."
    return (
        f"Their first difference, {key.name} ({key.show(first)} for {first.label} against {key.show(other)} for "
        f"{other.label}), is within the run-to-run margin of {key.unit(decision.comparison.margin)}."
    )


def deciding_key(winner: Standing, runner_up: Standing) -> Key | None:
    """The key on which ``winner`` beats ``runner_up`` beyond its margin; ``None`` when they tie."""
    found = compare(winner, runner_up)
    return found.key if found.order < 0 else None


def _recovery_phrase(who: str, values: Sequence[float | None], end: str = "the resume") -> str:
    if len(values) == 1:
        value = values[0]
        return f"{who} never recovered" if value is None else f"{who} back {seconds(value)} after {end}"
    seen = [value for value in values if value is not None]
    if not seen:
        return f"{who} never recovered ({len(values)} outages)"
    return f"{who} recovered after {len(seen)} of {len(values)} outages (slowest {seconds(max(seen))})"


def summary(standing: Standing) -> str:
    """``server back 6s after the resume, users back 41s after the resume, peak 130 in flight, ...`` (after the end
    of the slow, spike or error burst for those triggers)."""
    parts = []
    if standing.outages:
        parts += [
            _recovery_phrase("server", standing.server, standing.end),
            _recovery_phrase("users", standing.client, standing.end),
        ]
    parts += [
        f"success {percent(standing.success_ratio)}",
        f"amplification {times(standing.amplification)}",
        f"peak {count(standing.peak_in_flight)} in flight",
    ]
    if not standing.outages:
        parts.append(f"p99 {seconds(standing.latency_p99, none='—')}")
    return ", ".join(parts)


@dataclasses.dataclass(frozen=True, slots=True)
class Headline:
    """The verdict at the top of the report: title, reason, one line per strategy, assertions."""

    title: str
    reason: str
    lines: list[tuple[str, str]]
    assertions: str


def headline(document: Mapping[str, Any]) -> Headline:
    """Who wins and why (see the ranking rule), each strategy's summary, the assertions' tally."""
    decision = decide(document)
    lines = [(standing.label, summary(standing)) for standing in decision.ranked]
    checks = assertion_tally(document)
    if not decision.ranked:
        return Headline("No strategy ran", "", lines, checks)
    if len(decision.ranked) == 1:
        return Headline(f"{decision.ranked[0].label}: the only strategy run", "", lines, checks)
    if decision.winner is None:
        return Headline(f"No clear winner: {', '.join(decision.tied)} tie", tie_reason(decision), lines, checks)
    winner, runner_up, key = decision.winner, decision.runner_up, decision.comparison.key
    if runner_up is None or key is None:  # a winner is decided by a key against a runner-up
        return Headline(f"{winner.label} wins", "", lines, checks)
    reason = f"Decided by {key.name}: {key.show(winner)} against {key.show(runner_up)} for {runner_up.label}."
    return Headline(f"{winner.label} wins", reason, lines, checks)


def assertion_tally(document: Mapping[str, Any]) -> str:
    """``All 6 assertions hold (2 of them expected failures, confirmed).``, ``2 of 6 assertions failed: ...``;
    empty without assertions."""
    failed: list[str] = []
    total = expected = 0
    for row in document.get("results", []):
        for verdict in row.get("assertions", []):
            total += 1
            if not verdict.get("passed"):
                failed.append(f"{row['strategy']} {verdict['check']}")
            elif verdict.get("bound") == "never":
                expected += 1
    if not total:
        return ""
    confirmed = f" ({expected} of them expected failures, confirmed)" if expected else ""
    if not failed:
        return f"All {total} assertions hold{confirmed}."
    return f"{len(failed)} of {total} assertions failed: {'; '.join(failed)}."
