"""The headline in words: one line per strategy saying what happened and why, and who wins.

Everything comes from the results document (live or simulated), so the terminal and
the report say the same. The lines, each built from measured figures only:

* **not valid, no verdict** (live, when the service was not working in the steady window:
  ``steady_state``): nothing after it is judged, and no winner is named;
* **not valid** (live, when the load generator was saturated: ``validity``): the run
  measured the generator, not the service; its other figures follow, marked so;
* **never came back** (the server never recovered after an outage): how much more the
  users offered after the resume than in the steady state (``after_resume``), what the
  server's in-flight gauge showed and how it was read: what it held at the end (and how much of it was already
  abandoned by its clients, ``abandoned_in_flight_end``) when the last reading is the window's last, else its
  last reading *with the time it was taken*, never as the present; the readings that went missing, and that the
  verdict rests on them where it does (``in_flight_missed``, ``rests_on_missed``); or that the gauge was pinned
  at a ceiling and not used (``server_recovery_signals``); whether fresh requests were answered in time after it
  (``fresh_sent_s``, ``fresh_in_time_s``: measured, where a gauge may saturate or go unread), and how many
  users were still waiting;
* **came back** (the server recovered): how soon, what the users offered while it
  drained, and when the users got their goodput back, or that they never did within the
  run and what goodput they had at the end;
* **no outage**: success, the censored p99, amplification.

The winner line names the first of :func:`retrystorm.experiment.report.ranking.rank` and the key
that decided it, in words, against the runner-up; when any run was not valid it says
that the ranking compares figures some of which measured the generator.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from retrystorm.experiment.analysis.gauge_ceiling import GAUGE_NOT_USED
from retrystorm.experiment.analysis.validity import ValidityRule
from retrystorm.experiment.report.ranking import TRIGGER_ENDS, Standing, decide, rank, tie_reason, trigger_end
from retrystorm.experiment.report.text import count, percent, seconds, times

Row = Mapping[str, Any]


def _number(row: Row, key: str) -> float | None:
    value = row.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _figures(row: Row) -> list[Mapping[str, Any]]:
    found = row.get("after_resume")
    return [item for item in found if isinstance(item, Mapping)] if isinstance(found, list) else []


def _per_outage(row: Row, key: str) -> list[float | None]:
    value = row.get(key)
    outages = row.get("outages") or []
    if not outages:
        return []
    values = value if isinstance(value, list) else [value]
    return [float(item) if isinstance(item, int | float) else None for item in values]


def steady_phrase(row: Row) -> str | None:
    """``the service was not working in its steady state: GET / answered 404 on 100 % ...``; ``None`` when it was."""
    steady = row.get("steady_state")
    if not isinstance(steady, Mapping) or steady.get("valid") is not False:
        return None
    return f"the service was not working in its steady state: {steady.get('problem')}"


def validity_phrase(row: Row) -> str | None:
    """``not valid: its load generator was saturated 43 % of the run (...)``; ``None`` when valid or unknown."""
    validity = row.get("validity")
    if not isinstance(validity, Mapping) or validity.get("valid") is not False:
        return None
    share = validity.get("saturated_share")
    why = []
    peaks = validity.get("cpu_peak") or {}
    if validity.get("cpu_saturated_s") and peaks:
        busiest = max(peaks.values())
        why.append(f"a Locust process at {busiest:.0%} of a core")
    started, demanded = validity.get("started_per_s"), validity.get("demanded_per_s")
    if validity.get("demand_short_s") and isinstance(started, int | float) and isinstance(demanded, int | float):
        why.append(f"its users started {started:,.0f} requests/s of the {demanded:,.0f}/s they demanded")
    lag = lag_phrase(validity)
    if lag:
        why.append(lag)
    detail = f" ({'; '.join(why)})" if why else ""
    shown = percent(share) if isinstance(share, int | float) else "part"
    missed = validity.get("readings_missed_share")
    if isinstance(missed, int | float) and missed > ValidityRule().max_missing_share:
        also = f"; saturated {shown} of the seconds read{detail}" if validity.get("saturated_s") else ""
        return (
            f"not valid: {percent(missed)} of its load generator's readings went unanswered (too busy to be "
            f"read{also}), so these figures may measure the generator, not the service"
        )
    return (
        f"not valid: its load generator was saturated {shown} of the run{detail}, "
        "so these figures measure the generator, not the service"
    )


def lag_phrase(validity: Mapping[str, Any]) -> str | None:
    """``its users started 180 ms late against their plan in 9 s (worst second 210 ms; ...)``; ``None``: no second
    lagged."""
    lagging = validity.get("lagging_s")
    if not isinstance(lagging, int) or lagging <= 0:
        return None
    parts = []
    for key, what in (("schedule_lag", "its users started"), ("loop_lag", "its event loop woke")):
        mean, worst = validity.get(f"{key}_mean_s"), validity.get(f"{key}_worst_s")
        if isinstance(mean, int | float) and isinstance(worst, int | float):
            parts.append(f"{what} {mean * 1000:,.0f} ms late on average (worst second {worst * 1000:,.0f} ms)")
    said = " and ".join(parts) or "it ran late against its plan"
    return f"{said}, past the lag limit in {lagging} s: a load generator starved of CPU"


def _abandoned(row: Row, held: float | None) -> str:
    abandoned = _number(row, "abandoned_in_flight_end")
    if abandoned is None or not held:
        return ""
    share = abandoned / held
    if share >= 0.9:
        return ", nearly all already abandoned by their clients"
    if share >= 0.5:
        return ", most already abandoned by their clients"
    return f", {percent(share)} of them already abandoned" if abandoned else ""


def _offered(figures: Mapping[str, Any]) -> str:
    ratio, steady = figures.get("attempts_ratio"), figures.get("steady_attempts_per_s")
    offered = figures.get("attempts_per_s")
    if not isinstance(ratio, int | float) or not isinstance(offered, int | float):
        return "its users kept sending"
    base = f" ({offered:,.0f}/s against {steady:,.0f}/s)" if isinstance(steady, int | float) else ""
    return f"its users offered {times(ratio)} the steady attempts{base}"


def _never(row: Row, label: str, figures: Mapping[str, Any], which: str) -> str:
    end = trigger_end(row)
    server = _server_seen(row, figures, end)
    waiting = _number(row, "unfinished")
    p99 = _number(row, "latency_p99")
    tail = ""
    if waiting:
        were = "was" if round(waiting) == 1 else "were"
        tail = f"; {_requests(waiting)} {were} still waiting when the run ended (p99 {seconds(p99)} and counting)"
    return f"{label} never came back{which}: after {end} {_offered(figures)}{server}{_fresh(figures)}{tail}."


def _server_seen(row: Row, figures: Mapping[str, Any], end: str) -> str:
    """What the server's in-flight gauge showed after ``end``, and how it was read: `` against a server holding 900
    requests at the end (its in-flight gauge)``; a reading taken before the end says when; a gauge not used says
    why; missing readings are counted whenever the verdict rests on them. Empty without server readings."""
    signals = str(row.get("server_recovery_signals") or "")
    peak = figures.get("peak_in_flight")
    if GAUGE_NOT_USED in signals and isinstance(peak, int | float):
        return (
            f" against a server whose in-flight gauge read at most {count(peak)}, a ceiling at or below its recovery "
            "threshold (a thread pool's), so it was not used"
        )
    held, at = figures.get("in_flight_end"), figures.get("in_flight_end_s")
    missed, due = figures.get("in_flight_missed"), figures.get("in_flight_readings")
    if not isinstance(due, int) or not isinstance(missed, int):  # figures of an older document
        held = float(held) if isinstance(held, int | float) else _number(row, "in_flight_end")
        return f" against a server holding {_requests(held)}{_abandoned(row, held)}" if held is not None else ""
    window = figures.get("window_s")
    if not isinstance(held, int | float) or not isinstance(at, int | float):
        seen = f" against a server whose in-flight gauge went unread: all {count(due)} readings after {end} missing"
    elif isinstance(window, int | float) and window - at < 1.5:  # the last reading is the window's last
        seen = f" against a server holding {_requests(held)} at the end (its in-flight gauge){_abandoned(row, held)}"
    else:
        seen = f" against a server whose in-flight gauge last read {count(held)}, {_after(at, end)}"
    if missed and held is not None and isinstance(at, int | float):
        seen += f"; {count(missed)} of the gauge's {count(due)} readings after {end} went missing"
    if figures.get("rests_on_missed"):
        arrived = " (the readings that arrived were back at steady levels)" if missed < due else ""
        seen += f", and the verdict rests on them{arrived}"
    return seen


def _fresh(figures: Mapping[str, Any]) -> str:
    """``; no fresh request was answered in time in the 40 s after it`` (empty: none were sent)."""
    sent, in_time = figures.get("fresh_sent_s"), figures.get("fresh_in_time_s")
    if not isinstance(sent, int | float) or not isinstance(in_time, int | float) or not sent:
        return ""
    if not in_time:
        return f"; no fresh request was answered in time in the {seconds(sent)} after it"
    return f"; fresh requests were answered in time in {count(in_time)} of the {seconds(sent)} after it"


def _requests(value: float) -> str:
    return f"{count(value)} request" if round(value) == 1 else f"{count(value)} requests"


def _after(value: float, end: str = TRIGGER_ENDS["pause"]) -> str:
    """``6s after the resume``; ``right at the resume`` for 0 (``end``: what the time is measured from)."""
    return f"right at {end}" if value <= 0 else f"{seconds(value)} after {end}"


def _came_back(
    label: str, figures: Mapping[str, Any], server_s: float, client_s: float | None, end: str = TRIGGER_ENDS["pause"]
) -> str:
    ratio = figures.get("attempts_ratio")
    peak = figures.get("peak_in_flight")  # the window's, as the table beside it gives it
    if not isinstance(ratio, int | float):
        drained = "its users held back while it drained"
    elif isinstance(peak, int | float):
        drained = (
            f"while it drained up to {_requests(peak)} in flight its users offered {times(ratio)} the steady attempts"
        )
    else:  # no server readings: only what the users offered
        drained = f"while it drained its users offered {times(ratio)} the steady attempts"
    if client_s is not None:
        users = f"its users had their goodput back {_after(client_s, end)}"
    else:
        goodput, steady = figures.get("goodput_end_per_s"), figures.get("steady_goodput_per_s")
        level = (
            f" ({goodput:,.1f} requests/s over its last 10 s against {steady:,.1f}/s before)"
            if isinstance(goodput, int | float) and isinstance(steady, int | float)
            else ""
        )
        users = f"its users never got 90 % of their goodput back within the run{level}"
    missed, due = figures.get("in_flight_missed"), figures.get("in_flight_readings")
    if figures.get("rests_on_missed") and isinstance(missed, int) and isinstance(due, int):
        drained += f"; {count(missed)} of the gauge's {count(due)} readings in that time went missing"
        drained += ", and the time rests on them"
    return f"{label} came back: the server {_after(server_s, end)}; {drained}; {users}."


def strategy_line(row: Row) -> str:
    """What happened to one strategy, and why (see the module docstring)."""
    label = str(row.get("strategy"))
    server = _per_outage(row, "server_recovery_s")
    client = _per_outage(row, "client_recovery_s")
    figures = _figures(row)
    if not server:
        line = (
            f"{label}: {percent(_number(row, 'success_ratio'))} of its requests succeeded, p99 "
            f"{seconds(_number(row, 'latency_p99'))} counting {count(_number(row, 'unfinished'))} unfinished, "
            f"amplification {times(_number(row, 'amplification'))}."
        )
    else:
        never = next((index for index, value in enumerate(server) if value is None), None)
        pick = never if never is not None else len(server) - 1
        which = f" after outage {pick + 1} of {len(server)}" if len(server) > 1 else ""
        aftermath = figures[pick] if pick < len(figures) else {}
        if never is not None:
            line = _never(row, label, aftermath, which)
        else:
            client_s = client[pick] if pick < len(client) else None
            line = _came_back(label, aftermath, server[pick] or 0.0, client_s, trigger_end(row))
            if len(server) > 1:
                line = line.replace(f"{label} came back:", f"{label} came back after each of {len(server)} outages:")
    invalid = validity_phrase(row)
    line = f"{label} is {invalid}. {line}" if invalid else line
    broken = steady_phrase(row)
    return f"{label} is not valid: {broken}. No verdict stands on this run." if broken else line


def _total(values: Sequence[float | None]) -> float:
    return sum(value or 0.0 for value in values)


def _win_reason(key_name: str, winner: Standing, runner_up: Standing, end: str = TRIGGER_ENDS["pause"]) -> str:
    """Why ``winner`` ranks above ``runner_up`` on the key named ``key_name``, in words (times after ``end``)."""
    w, r = winner, runner_up
    single = w.outages == 1
    if key_name == "server recoveries":
        if single:
            return f"its server came back {_after(w.server[0] or 0.0, end)}; {r.label}'s never did"
        return (
            f"its server came back after {w.servers_recovered} of {w.outages} outages, "
            f"{r.label}'s after {r.servers_recovered}"
        )
    if key_name == "user recoveries":
        if single:
            return f"its users had their goodput back {_after(w.client[0] or 0.0, end)}; {r.label}'s never did"
        return (
            f"its users recovered after {w.clients_recovered} of {w.outages} outages, "
            f"{r.label}'s after {r.clients_recovered}"
        )
    if key_name == "user recovery time":
        mine, theirs = seconds(_total(w.client)), seconds(_total(r.client))
        return f"its users were back sooner: {mine} after {end} against {theirs} for {r.label}"
    if key_name == "server recovery time":
        mine, theirs = seconds(_total(w.server)), seconds(_total(r.server))
        return f"its server was back sooner: {mine} after {end} against {theirs} for {r.label}"
    if key_name == "success ratio":
        mine, theirs = _apart(w.success_ratio, r.success_ratio)
        return f"{mine} of its requests succeeded against {theirs} for {r.label}"
    if key_name == "amplification":
        return f"it sent {times(w.amplification)} attempts per request against {times(r.amplification)} for {r.label}"
    return f"its peak in flight was {count(w.peak_in_flight)} against {count(r.peak_in_flight)} for {r.label}"


def _apart(mine: float | None, theirs: float | None) -> tuple[str, str]:
    """Two ratios as percentages with as many decimals (up to 4) as it takes to tell them apart."""
    if mine is None or theirs is None:
        return percent(mine), percent(theirs)
    for places in range(1, 5):
        shown = f"{100 * mine:.{places}f} %", f"{100 * theirs:.{places}f} %"
        if shown[0] != shown[1]:
            return shown
    return shown


def winner_line(document: Mapping[str, Any]) -> str:
    """``smira wins: its server came back 6s after the resume; fixed:100ms's never did.`` (and validity); or who
    ties, and why (:func:`retrystorm.experiment.report.ranking.decide`)."""
    rows = document.get("results", [])
    invalid = [str(row.get("strategy")) for row in rows if validity_phrase(row)]
    caveat = ""
    if invalid:
        caveat = (
            f" But the run of {', '.join(invalid)} was not valid (its load generator was saturated): "
            "this ranking compares figures that partly measured the generator."
        )
    decision = decide(document)
    if not decision.ranked:
        return "No strategy ran."
    broken = [str(row.get("strategy")) for row in rows if steady_phrase(row)]
    if broken:
        return (
            f"No winner: the service was not working in the steady state of {', '.join(broken)}, so nothing "
            "measured after it can be compared."
        )
    if len(decision.ranked) == 1:
        return f"{decision.ranked[0].label} was the only strategy run.{caveat}"
    if decision.winner is None:
        return f"No clear winner: {', '.join(decision.tied)} tie. {tie_reason(decision)}{caveat}"
    winner, runner_up, key = decision.winner, decision.runner_up, decision.comparison.key
    if runner_up is None or key is None:
        return f"{winner.label} wins.{caveat}"
    end = trigger_end(rows[0]) if rows else TRIGGER_ENDS["pause"]
    return f"{winner.label} wins: {_win_reason(key.name, winner, runner_up, end)}.{caveat}"


def headline_lines(document: Mapping[str, Any]) -> list[str]:
    """Every strategy's line, best first, then the winner line."""
    rows: Sequence[Row] = document.get("results", [])
    order = {standing.label: index for index, standing in enumerate(rank(document))}
    ordered = sorted(rows, key=lambda row: order.get(str(row.get("strategy")), len(order)))
    return [*(strategy_line(row) for row in ordered), winner_line(document)]
