"""Which strategy wins a run, and why, from the results document alone.

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

Without outages keys 1 to 4 tie and the run is decided by success, amplification
and peak. Assertions are *not* a key: a scenario may assert that a strategy fails
(``client_recovers_within: never``), and passing that is no win; the headline
reports them beside the ranking. A missing value (no requests, never read) ranks
last on its key. Strategies that tie on every key share the first place.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from retrystorm.experiment.report.text import count, per_outage, percent, seconds, times


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
class Key:
    """One ranking key: its name, its sort value (smaller ranks first) and how to show it."""

    name: str
    sort: Callable[[Standing], float]
    show: Callable[[Standing], str]


KEYS = (
    Key("server recoveries", lambda s: -s.servers_recovered, lambda s: f"{s.servers_recovered} of {s.outages}"),
    Key("user recoveries", lambda s: -s.clients_recovered, lambda s: f"{s.clients_recovered} of {s.outages}"),
    Key("user recovery time", lambda s: round(_total(s.client), 6), lambda s: seconds(_total(s.client))),
    Key("server recovery time", lambda s: round(_total(s.server), 6), lambda s: seconds(_total(s.server))),
    Key("success ratio", lambda s: _higher(s.success_ratio), lambda s: percent(s.success_ratio)),
    Key("amplification", lambda s: _lower(s.amplification), lambda s: times(s.amplification)),
    Key("peak in flight", lambda s: _lower(s.peak_in_flight), lambda s: count(s.peak_in_flight)),
)


def sort_key(standing: Standing) -> tuple[float, ...]:
    """The ranking rule as a tuple (see the module docstring)."""
    return tuple(key.sort(standing) for key in KEYS)


def rank(document: Mapping[str, Any]) -> list[Standing]:
    """The document's strategies, best first (ties keep the document's order)."""
    standings = [Standing.of(row) for row in document.get("results", [])]
    return sorted(standings, key=sort_key)


def deciding_key(winner: Standing, runner_up: Standing) -> Key | None:
    """The first key on which ``winner`` beats ``runner_up``; ``None`` when they tie on all."""
    return next((key for key in KEYS if key.sort(winner) != key.sort(runner_up)), None)


def _recovery_phrase(who: str, values: Sequence[float | None]) -> str:
    if len(values) == 1:
        value = values[0]
        return f"{who} never recovered" if value is None else f"{who} back {seconds(value)} after resume"
    seen = [value for value in values if value is not None]
    if not seen:
        return f"{who} never recovered ({len(values)} outages)"
    return f"{who} recovered after {len(seen)} of {len(values)} outages (slowest {seconds(max(seen))})"


def summary(standing: Standing) -> str:
    """``server back 6s after resume, users back 41s after resume, peak 130 in flight, ...``."""
    parts = []
    if standing.outages:
        parts += [_recovery_phrase("server", standing.server), _recovery_phrase("users", standing.client)]
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
    ranked = rank(document)
    lines = [(standing.label, summary(standing)) for standing in ranked]
    checks = assertion_tally(document)
    if not ranked:
        return Headline("No strategy ran", "", lines, checks)
    winner = ranked[0]
    if len(ranked) == 1:
        return Headline(f"{winner.label}: the only strategy run", "", lines, checks)
    runner_up = ranked[1]
    key = deciding_key(winner, runner_up)
    if key is None:
        tied = [s.label for s in ranked if sort_key(s) == sort_key(winner)]
        return Headline(f"No clear winner: {', '.join(tied)} tie", "They tie on every ranking key.", lines, checks)
    reason = f"Decided by {key.name}: {key.show(winner)} against {key.show(runner_up)} for {runner_up.label}."
    return Headline(f"{winner.label} wins", reason, lines, checks)


def assertion_tally(document: Mapping[str, Any]) -> str:
    """``All 6 assertions hold.``, ``2 of 6 assertions failed: ...``; empty without assertions."""
    failed: list[str] = []
    total = 0
    for row in document.get("results", []):
        for verdict in row.get("assertions", []):
            total += 1
            if not verdict.get("passed"):
                failed.append(f"{row['strategy']} {verdict['check']}")
    if not total:
        return ""
    if not failed:
        return f"All {total} assertions hold."
    return f"{len(failed)} of {total} assertions failed: {'; '.join(failed)}."
