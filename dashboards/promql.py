"""The experiment's PromQL: one function per curve of the dashboard, pure strings.

Client series carry a ``strategy`` label and every client query selects it with the
dashboard's ``$strategy`` variable (a regex; "All" is ``.*``). Counters are read with
``rate(...[$__rate_interval])``, Grafana's window of at least four scrape intervals
(https://grafana.com/docs/grafana/latest/datasources/prometheus/template-variables/#use-__rate_interval).
Latency quantiles sum the histogram buckets *before* ``histogram_quantile``, so
several Locust workers (or instances) aggregate correctly: averaging per-worker
quantiles is wrong (https://prometheus.io/docs/practices/histograms/#quantiles).
Metric names: the metrics reference of the documentation (docs/reference).
"""

from __future__ import annotations

RATE_WINDOW = "$__rate_interval"
STRATEGY_VARIABLE = "strategy"
#: Every client series is selected through the strategy variable.
CLIENT = f'strategy=~"${STRATEGY_VARIABLE}"'
OK = 'outcome="ok"'
#: The scrape jobs of dashboards/prometheus/*.yml.
JOBS = ("target", "locust", "chaos")

TARGET_IN_FLIGHT = "retrystorm_target_in_flight_requests"
TARGET_ABANDONED_IN_FLIGHT = "retrystorm_target_abandoned_in_flight_requests"
TARGET_DELAY = "retrystorm_target_delay_seconds"
TARGET_REQUESTS = "retrystorm_target_requests_total"
CLIENT_ATTEMPTS = "retrystorm_client_attempts_total"
CLIENT_ATTEMPTS_STARTED = "retrystorm_client_attempts_started_total"
CLIENT_REQUESTS_STARTED = "retrystorm_client_requests_started_total"
CLIENT_REQUESTS = "retrystorm_client_requests_total"
CLIENT_REQUEST_LATENCY = "retrystorm_client_request_latency_seconds"
CLIENT_USERS_IN_BACKOFF = "retrystorm_client_users_in_backoff"
CLIENT_ACTIVE_USERS = "retrystorm_client_active_users"
CLIENT_BUDGET_REFUSALS = "retrystorm_client_budget_refusals_total"
CHAOS_OUTAGE_ACTIVE = "retrystorm_chaos_outage_active"
CHAOS_THROTTLE_ACTIVE = "retrystorm_chaos_throttle_active"
TARGET_CAPACITY_RATIO = "retrystorm_target_capacity_ratio"
TARGET_ERROR_PROBABILITY = "retrystorm_target_injected_error_probability"
CLIENT_LOAD_FACTOR = "retrystorm_client_load_factor"


def selector(metric: str, *matchers: str) -> str:
    """``metric{m1, m2}``, or the bare name without matchers."""
    return f"{metric}{{{', '.join(matchers)}}}" if matchers else metric


def rate(metric: str, *matchers: str) -> str:
    """Per-second rate over Grafana's rate interval."""
    return f"rate({selector(metric, *matchers)}[{RATE_WINDOW}])"


def target_in_flight() -> str:
    """Requests in the target's model, abandoned ones included (the seed's in-flight count)."""
    return f"sum({TARGET_IN_FLIGHT})"


def target_abandoned_in_flight() -> str:
    """Requests still in the model whose client has gone."""
    return f"sum({TARGET_ABANDONED_IN_FLIGHT})"


def target_delay() -> str:
    """The model's delay at the current load, seconds."""
    return f"max({TARGET_DELAY})"


def target_outcomes() -> str:
    """Requests the target ended per second, by outcome (ok, rejected, abandoned)."""
    return f"sum by (outcome) ({rate(TARGET_REQUESTS)})"


def client_attempts() -> str:
    """Attempts ended per second, by strategy and outcome (counted when they end: a timeout 2 s after it was sent)."""
    return f"sum by (strategy, outcome) ({rate(CLIENT_ATTEMPTS, CLIENT)})"


def client_attempts_sent() -> str:
    """Attempts sent per second, by strategy (counted when sent, as the simulator and the runner count them)."""
    return f"sum by (strategy) ({rate(CLIENT_ATTEMPTS_STARTED, CLIENT)})"


def goodput() -> str:
    """Successful logical requests per second, by strategy."""
    return f"sum by (strategy) ({rate(CLIENT_REQUESTS, CLIENT, OK)})"


def request_latency_quantile(quantile: float) -> str:
    """A quantile of logical latency (backoff included), from buckets summed over every instance."""
    buckets = rate(f"{CLIENT_REQUEST_LATENCY}_bucket", CLIENT)
    return f"histogram_quantile({quantile:g}, sum by (strategy, le) ({buckets}))"


def users_in_backoff() -> str:
    """Users waiting out a backoff, by strategy."""
    return f"sum by (strategy) ({selector(CLIENT_USERS_IN_BACKOFF, CLIENT)})"


def active_users() -> str:
    """Users running, by strategy."""
    return f"sum by (strategy) ({selector(CLIENT_ACTIVE_USERS, CLIENT)})"


def amplification() -> str:
    """Attempts sent per logical request started, by strategy (design.md: attempts / requests).

    Both counted when they start, as the runner and the simulator define amplification.
    """
    attempts = f"sum by (strategy) ({rate(CLIENT_ATTEMPTS_STARTED, CLIENT)})"
    requests = f"sum by (strategy) ({rate(CLIENT_REQUESTS_STARTED, CLIENT)})"
    return f"{attempts} / {requests}"


def budget_refusals() -> str:
    """Retries or attempts refused by the retry budget per second, by strategy."""
    return f"sum by (strategy) ({rate(CLIENT_BUDGET_REFUSALS, CLIENT)})"


def outage_active() -> str:
    """1 while a target is paused by the chaos controller, 0 otherwise, by target.

    As an annotation query, Grafana keeps the samples above 0 and draws each run of
    them no further apart than the step as one region (see dashboards/sdk_extras.py).
    """
    return f"max by (target) ({CHAOS_OUTAGE_ACTIVE})"


def pause_active() -> str:
    """1 while any target is paused, else 0 (0 also when nothing reports: a row of its own in the timeline)."""
    return f"max({CHAOS_OUTAGE_ACTIVE}) or vector(0)"


def slow_active() -> str:
    """1 while a ``slow`` trigger cuts a capacity, else 0.

    Either the built-in target's model runs below its capacity (``PUT /admin/capacity``),
    or the chaos controller throttles a target's CPU (a service of one's own). The two
    sides have different label sets, so ``or`` keeps both before ``max`` takes the union.
    """
    return f"max({TARGET_CAPACITY_RATIO} < bool 1 or {CHAOS_THROTTLE_ACTIVE}) or vector(0)"


def spike_active() -> str:
    """1 while a ``spike`` trigger multiplies the load of a selected strategy, else 0."""
    return f"max({selector(CLIENT_LOAD_FACTOR, CLIENT)} > bool 1) or vector(0)"


def errors_active() -> str:
    """1 while an ``errors`` trigger's fault rule may fail attempts at the built-in target, else 0."""
    return f"max({TARGET_ERROR_PROBABILITY} > bool 0) or vector(0)"


def scrape_up() -> str:
    """Prometheus' own health of each scrape job: a frozen target fails its scrapes."""
    return selector("up", f'job=~"{"|".join(JOBS)}"')


def strategy_values() -> str:
    """The strategy variable's values: every strategy the load generator has reported."""
    return f"label_values({CLIENT_ATTEMPTS}, {STRATEGY_VARIABLE})"
