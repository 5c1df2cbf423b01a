"""Recovery after an outage, or after any trigger: of the server, and of its users.

Recovery is judged after each span of the timeline a run hands in: its outages, or,
when it has triggers other than pauses, its *episodes* (a trigger, or triggers of any
kinds that overlap, merged; :func:`retrystorm.experiment.scenario.timeline.episodes`). "Resume"
below is the span's end: the resume of a pause, the end of a slow, a spike or an error
burst. Definitions (``R`` = the resume, the end of the span; ``S`` = the steady window,
by default the second half of the time before the first span):

* **Steady levels** over ``S``: ``G`` the mean goodput, ``I`` the largest and
  ``Ī`` the mean in-flight reading, ``D`` the largest modelled-delay reading.
* **Server recovery** after an outage: ``t - R`` for the first gauge reading time
  ``t > R`` from which every reading during ``sustain_s`` (5 s: the readings at
  ``t, t + step, ...`` before ``t + 5 s``) has in-flight
  ``<= max(level_factor * I, Ī + noise_sd * sqrt(max(Ī, noise_floor_mean))) + in_flight_slack``
  (max(1.5 I, Ī + 4 √max(Ī, 1)) + 1) and delay ``<= level_factor * D`` (1.5 D). "Back to
  steady-state levels", with room for the noise of a steady state (:func:`noise_threshold`).
* The ``Ī + 4 √max(Ī, 1)`` term is that room when counts are small or the steady window
  holds few readings: below its limit a server with Poisson arrivals holds a
  Poisson number of requests (M/G/∞), mean ``λ W`` by Little's law and standard
  deviation its square root, so a steady reading exceeds four standard deviations
  about once in 1,200 (for a mean of 4.5: P(X >= 13) = 0.0008). With a mean of 4.5 and three steady
  readings, ``1.5 I + 1`` alone can be 4 (all three read 2), which ordinary
  readings after a full recovery then cross. For the seed's levels (mean 10, largest
  about 20) the ``1.5 I`` term is the larger and decides.
* A steady mean below one request counts as one (``noise_floor_mean``), so the threshold is never below
  ``0 + 4 √1 + 1 = 5``: a few steady readings of 0 cannot tell a mean of 0 from one of 0.5 (a fast
  service at a low rate holds a request a fraction of the time), and without the floor the threshold
  was 1, so two requests in flight after a full recovery read as "never recovered". A Poisson count
  of mean 1 reaches 6 once in about 1,700 readings (P(X >= 6) = 0.0006); a storm holds hundreds.
* **Server recovery seen from the clients**, when there are no server readings (a
  service of one's own without ``metrics:``): ``t - R`` for the first interval end
  ``t > R`` from which, for 5 s, every interval has attempts that ended, their mean
  latency ``<= max(level_factor * L, 2 * L̄)`` (1.5 times the largest steady reading,
  and at least twice the steady mean), and timeouts per second
  ``<= max(level_factor * T, T̄ + noise_sd * sqrt(max(T̄, noise_floor_mean))) + timeout_slack`` (max(1.5 T,
  T̄ + 4 √max(T̄, 1)) + 1, the room for Poisson noise as for in-flight), where ``L``/``L̄`` are
  the largest and mean per-second attempt latency and ``T``/``T̄`` the largest and mean
  timeout rate over ``S``. An attempt's latency and a timeout are counted when the
  attempt ends, so both lag the server by up to the attempt timeout. A server that
  answers again at its steady pace shows both; one that still drowns in a backlog of
  abandoned requests times attempts out.
* **Fresh requests**, where the run sent them (a live run over HTTP: one a second on a new
  connection, :mod:`retrystorm.runner.fresh_probe`): the server is back only from a second
  whose fresh requests, and those of every second of the sustain window, were answered
  within the attempt timeout, beside the gauges (or the client-side signals). A gauge can
  read "back" while a new client still waits behind the backlog: a thread pool's
  in-flight gauge never exceeds its thread count, however many connections queue. The
  fresh requests are used only when at least ``fresh_steady_share`` (90 %) of those sent in
  the steady window were answered in time, and at least two were sent; otherwise
  :attr:`Recovery.server_signals` says why they were not.
* **A gauge that cannot show a storm is not used**: an in-flight gauge pinned at a ceiling at or below its
  threshold (a thread pool's, :mod:`retrystorm.experiment.analysis.gauge_ceiling`) reads "back" whatever the
  server holds; the server is then judged from the clients' signals and the fresh requests, and
  :attr:`Recovery.server_signals` says so and why.
* **Client recovery**: ``a - R`` for the first interval start ``a >= R`` such that
  the mean goodput over ``[a, a + sustain_s)`` is ``>= goodput_fraction * G``
  (90 %). The mean over the window, rather than every one-second reading, keeps a
  Poisson-noisy goodput from hiding a recovery; a window in which a burst of delayed
  successes lands does count, since those users were served.
* ``None`` (JSON ``null``): it did not happen before the data ends or the next
  outage starts (a window must end by then); for the client also when ``G`` is 0,
  as there was no goodput to return to. Times resolve to one sample interval.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

from retrystorm.experiment.analysis.gauge_ceiling import SaturatedGauge, saturated_gauge
from retrystorm.experiment.analysis.samples import Samples
from retrystorm.experiment.scenario.timeline import Span, span_key


@dataclasses.dataclass(frozen=True, slots=True)
class RecoveryRule:
    """The thresholds of the recovery definitions (see the module docstring)."""

    goodput_fraction: float = 0.9
    sustain_s: float = 5.0
    level_factor: float = 1.5
    noise_sd: float = 4.0
    in_flight_slack: float = 1.0
    latency_mean_factor: float = 2.0
    timeout_slack: float = 1.0
    fresh_steady_share: float = 0.9
    noise_floor_mean: float = 1.0


#: Which readings a server recovery was judged from (``Recovery.server_signals``).
SERVER_GAUGES = "server gauges (in flight, modelled delay)"
CLIENT_SIGNALS = "client side (attempt latency, timeout rate)"
FRESH_REQUESTS = "fresh requests answered within the attempt timeout"


@dataclasses.dataclass(frozen=True, slots=True)
class SteadyLevels:
    """Goodput mean, in-flight maximum and mean, delay maximum over the steady window."""

    goodput: float
    in_flight: float
    in_flight_mean: float
    delay_s: float
    attempt_latency_s: float = 0.0
    attempt_latency_mean_s: float = 0.0
    timeouts: float = 0.0
    timeouts_mean: float = 0.0


@dataclasses.dataclass(frozen=True, slots=True)
class Recovery:
    """How long after an outage's end (or an episode's) the server and the users recovered (``None``: not seen)."""

    outage: Span
    server_s: float | None
    client_s: float | None
    server_signals: str = SERVER_GAUGES
    #: Whether gauge readings missed after the resume decide ``server_s``: it would differ had they read back
    #: (:func:`rests_on_missed`); always ``False`` when the gauges did not judge.
    rests_on_missed: bool = False


def default_steady_window(outages: Sequence[Span]) -> tuple[float, float] | None:
    """The second half of the time before the first outage; ``None`` without outages."""
    if not outages:
        return None
    first = min(outage.start_s for outage in outages)
    return (first / 2, first)


def _inside(samples: Samples, window: tuple[float, float]) -> list[int]:
    lo, hi = window
    return [
        i for i in range(len(samples)) if samples.interval_start(i) >= lo - 1e-9 and samples.gauge_time(i) <= hi + 1e-9
    ]


def steady_levels(samples: Samples, window: tuple[float, float]) -> SteadyLevels | None:
    """The steady levels over ``window``; ``None`` when no interval lies inside it."""
    inside = _inside(samples, window)
    if not inside:
        return None
    in_flight = [value for i in inside if (value := samples.in_flight[i]) is not None]
    delay = [value for i in inside if (value := samples.delay_s[i]) is not None]
    latency = [
        value for i in inside if samples.attempt_latency_s and (value := samples.attempt_latency_s[i]) is not None
    ]
    timeouts = [samples.timeouts[i] for i in inside] if samples.timeouts else []
    return SteadyLevels(
        goodput=math.fsum(samples.goodput[i] for i in inside) / len(inside),
        in_flight=max(in_flight, default=0.0),
        in_flight_mean=_mean(in_flight),
        delay_s=max(delay, default=0.0),
        attempt_latency_s=max(latency, default=0.0),
        attempt_latency_mean_s=_mean(latency),
        timeouts=max(timeouts, default=0.0),
        timeouts_mean=_mean(timeouts),
    )


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else 0.0


def _first_sustained_gauge(
    samples: Samples, ok: Callable[[int], bool], rule: RecoveryRule, resume_s: float, until_s: float
) -> float | None:
    """Seconds from ``resume_s`` to the first gauge reading after it from which ``ok`` holds for
    ``rule.sustain_s`` of readings, all by ``until_s``; ``None`` if there is none."""
    needed = max(1, round(rule.sustain_s / samples.step_s))
    for index in (i for i in range(len(samples)) if samples.gauge_time(i) > resume_s + 1e-9):
        window = range(index, index + needed)
        if window.stop > len(samples) or samples.gauge_time(window.stop - 1) > until_s + 1e-9:
            return None
        if all(ok(i) for i in window):
            return samples.gauge_time(index) - resume_s
    return None


def fresh_refusal(samples: Samples, window: tuple[float, float], rule: RecoveryRule = RecoveryRule()) -> str | None:
    """Why the fresh requests cannot judge the server (``None``: they can): none sent, or too few of those sent in
    the steady ``window`` were answered in time (the probe, not the outage, would decide)."""
    if not any(value is not None for value in samples.fresh_in_time):
        return "no fresh requests were sent"
    steady = [value for i in _inside(samples, window) if (value := samples.fresh_in_time[i]) is not None]
    if len(steady) < 2:
        return "fewer than two fresh requests were sent in the steady window"
    share = math.fsum(steady) / len(steady)
    if share < rule.fresh_steady_share:
        return f"only {share:.0%} of the steady window's fresh requests were answered in time"
    return None


def _fresh_ok(samples: Samples, index: int) -> bool:
    """Whether the fresh requests of interval ``index`` were answered in time (no request sent: no objection)."""
    value = samples.fresh_in_time[index] if samples.fresh_in_time else None
    return value is None or value >= 1.0


def noise_threshold(largest: float, mean: float, rule: RecoveryRule = RecoveryRule()) -> float:
    """The level a steady count's readings stay under, before the slack: ``max(level_factor * largest,
    mean + noise_sd * sqrt(max(mean, noise_floor_mean)))`` (max(1.5 I, Ī + 4 √max(Ī, 1)); the module docstring
    says why, and why a mean below one counts as one)."""
    spread = rule.noise_sd * math.sqrt(max(mean, rule.noise_floor_mean))
    return max(rule.level_factor * largest, mean + spread)


def server_recovery_s(
    samples: Samples, levels: SteadyLevels, resume_s: float, until_s: float, rule: RecoveryRule = RecoveryRule()
) -> float | None:
    """Seconds from ``resume_s`` until in-flight and delay are back to steady levels (``None``: not by ``until_s``),
    and the fresh requests answered in time where ``samples`` holds them."""
    max_in_flight = noise_threshold(levels.in_flight, levels.in_flight_mean, rule) + rule.in_flight_slack
    max_delay = rule.level_factor * levels.delay_s + 1e-12

    def ok(index: int) -> bool:
        in_flight, delay = samples.in_flight[index], samples.delay_s[index]
        back = in_flight is not None and delay is not None and in_flight <= max_in_flight and delay <= max_delay
        return back and _fresh_ok(samples, index)

    return _first_sustained_gauge(samples, ok, rule, resume_s, until_s)


def rests_on_missed(
    samples: Samples,
    levels: SteadyLevels,
    resume_s: float,
    until_s: float,
    server_s: float | None,
    *,
    rule: RecoveryRule = RecoveryRule(),
) -> bool:
    """Whether the gauge readings missed after ``resume_s`` decide ``server_s`` (:func:`server_recovery_s`): it
    would differ had each missed reading been back at steady levels. A "never" that rests on missing readings
    comes from a ``/metrics`` that went unanswered, not from a gauge that read high."""
    if all(value is not None for value in samples.in_flight):
        return False
    filled = dataclasses.replace(
        samples,
        in_flight=[0.0 if value is None else value for value in samples.in_flight],
        delay_s=[0.0 if value is None else value for value in samples.delay_s],
    )
    return server_recovery_s(filled, levels, resume_s, until_s, rule) != server_s


def client_side_server_recovery_s(
    samples: Samples, levels: SteadyLevels, resume_s: float, until_s: float, rule: RecoveryRule = RecoveryRule()
) -> float | None:
    """Seconds from ``resume_s`` until attempt latency and timeouts are back to steady levels, from the clients,
    and the fresh requests answered in time where ``samples`` holds them."""
    if not samples.attempt_latency_s or not samples.timeouts:
        return None
    max_latency = max(
        rule.level_factor * levels.attempt_latency_s, rule.latency_mean_factor * levels.attempt_latency_mean_s
    )
    max_timeouts = noise_threshold(levels.timeouts, levels.timeouts_mean, rule) + rule.timeout_slack

    def ok(index: int) -> bool:
        latency = samples.attempt_latency_s[index]
        back = latency is not None and latency <= max_latency + 1e-12 and samples.timeouts[index] <= max_timeouts
        return back and _fresh_ok(samples, index)

    return _first_sustained_gauge(samples, ok, rule, resume_s, until_s)


def client_recovery_s(
    samples: Samples, levels: SteadyLevels, resume_s: float, until_s: float, rule: RecoveryRule = RecoveryRule()
) -> float | None:
    """Seconds from ``resume_s`` until goodput is back to 90 % of steady for 5 s (``None``: not by ``until_s``)."""
    if levels.goodput <= 0:
        return None  # no goodput before the outage: nothing to return to
    needed = max(1, round(rule.sustain_s / samples.step_s))
    threshold = rule.goodput_fraction * levels.goodput - 1e-9
    for index in range(len(samples)):
        start = samples.interval_start(index)
        if start < resume_s - 1e-9:
            continue
        stop = index + needed
        if stop > len(samples) or samples.interval_start(stop) > until_s + 1e-9:
            return None
        if math.fsum(samples.goodput[index:stop]) / needed >= threshold:
            return start - resume_s
    return None


def recoveries(
    samples: Samples,
    outages: Sequence[Span],
    *,
    steady_window: tuple[float, float] | None = None,
    rule: RecoveryRule = RecoveryRule(),
) -> list[Recovery]:
    """Server and client recovery after each outage, in order.

    The search after an outage stops where the next one starts, or at the end of the
    data. Without a steady window (an outage at time 0) both recoveries are ``None``.
    Without any in-flight reading the server is judged from the clients' signals
    (:func:`client_side_server_recovery_s`); each :class:`Recovery` says which.
    """
    ordered = sorted(outages, key=span_key)
    window = steady_window or default_steady_window(ordered)
    levels = steady_levels(samples, window) if window else None
    data_end = samples.gauge_time(len(samples) - 1) if len(samples) else 0.0
    fresh_note = ""
    if samples.fresh_in_time and window is not None:
        refused = fresh_refusal(samples, window, rule)
        if refused is not None:  # judged without them, and said so
            samples = dataclasses.replace(samples, fresh_in_time=())
            fresh_note = f"; fresh requests not used: {refused}"
    gauges = samples.has_server_gauges or not samples.attempt_latency_s
    saturated = _saturated(samples, levels, ordered, rule) if gauges else None
    gauges = gauges and saturated is None
    judge = server_recovery_s if gauges else client_side_server_recovery_s
    signals = SERVER_GAUGES if gauges else CLIENT_SIGNALS
    signals += f" and {FRESH_REQUESTS}" if samples.fresh_in_time else fresh_note
    signals += f"; {saturated.reason()}" if saturated is not None else ""
    found = []
    for index, outage in enumerate(ordered):
        until = ordered[index + 1].start_s if index + 1 < len(ordered) else data_end
        if levels is None:
            found.append(Recovery(outage, None, None, signals))
            continue
        server = judge(samples, levels, outage.end_s, until, rule)
        client = client_recovery_s(samples, levels, outage.end_s, until, rule)
        rests = gauges and rests_on_missed(samples, levels, outage.end_s, until, server, rule=rule)
        found.append(Recovery(outage, server, client, signals, rests))
    return found


def _saturated(
    samples: Samples, levels: SteadyLevels | None, ordered: Sequence[Span], rule: RecoveryRule
) -> SaturatedGauge | None:
    """The in-flight gauge found pinned at a ceiling at or below its threshold
    (:mod:`retrystorm.experiment.analysis.gauge_ceiling`), after the first span; ``None``: it can show a storm."""
    if levels is None or not ordered or not samples.attempt_latency_s:
        return None  # without the clients' signals there is nothing else to judge the server from
    in_flight_max = noise_threshold(levels.in_flight, levels.in_flight_mean, rule) + rule.in_flight_slack
    timeouts_max = noise_threshold(levels.timeouts, levels.timeouts_mean, rule) + rule.timeout_slack
    return saturated_gauge(samples, ordered[0].end_s, in_flight_max, timeouts_max)


def goodput_fraction(samples: Samples, levels: SteadyLevels, start_s: float, end_s: float) -> float | None:
    """Mean goodput over the intervals inside ``[start_s, end_s)`` as a fraction of ``G``."""
    inside = [
        samples.goodput[i]
        for i in range(len(samples))
        if samples.interval_start(i) >= start_s - 1e-9 and samples.interval_start(i) + samples.step_s <= end_s + 1e-9
    ]
    if not inside or levels.goodput <= 0:
        return None
    return math.fsum(inside) / len(inside) / levels.goodput
