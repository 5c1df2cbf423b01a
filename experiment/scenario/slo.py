"""A scenario's stop conditions (``slo:``): a query and a bound whose breach stops the run early.

::

    slo:
      - {series: in_flight, above: 500, for: 3s}          # the runner's own reading, every second
      - promql: sum(rate(retrystorm_client_requests_total{outcome="ok"}[5s]))
        below: 20
        for: 5s
        prometheus: http://127.0.0.1:9090                  # default: the compose stack's Prometheus

Each condition reads one value a second: ``series`` is one of the run's per-second series (the columns of
``timeseries.csv``, the same values the Prometheus and OpenTelemetry exports carry), ``promql`` an instant query
sent to a Prometheus server (a vector breaches when any of its samples does; an empty one does not). A condition is
breached when its value is ``above`` (or ``below``) its bound at every reading for ``for`` (``0s``: a single
reading). The first breach stops the strategy's run, reverts every fault, skips the strategies after it and ends
the run with its own exit status, as AWS FIS stop conditions and k6's ``abortOnFail`` thresholds do.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from retrystorm.experiment.scenario.fields import Duration

#: The most stop conditions a scenario may hold.
MAX_SLO = 20
#: The longest PromQL query accepted.
MAX_QUERY_CHARS = 2000
#: The longest a breach must last before the run stops.
MAX_SUSTAIN_S = 3600.0


class StopCondition(BaseModel):
    """One ``slo:`` entry (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, use_attribute_docstrings=True)

    name: str | None = Field(default=None, min_length=1, max_length=200)
    """What the condition guards, in the terminal, results.json and JUnit (default: the query and bound)."""
    series: str | None = Field(default=None, min_length=1, max_length=100)
    """One of the run's per-second series, as the runner reads it: a rate (goodput, attempts, timeouts, gave_up,
    started) or a gauge (in_flight, delay_s, connections, abandoned_in_flight, users_in_backoff, active_users,
    in_progress). Give this or ``promql``."""
    promql: str | None = Field(default=None, min_length=1, max_length=MAX_QUERY_CHARS)
    """A PromQL instant query, sent each second; a vector breaches when any sample does, an empty one does not."""
    prometheus: str | None = Field(default=None, min_length=1, max_length=2000)
    """The Prometheus server ``promql`` goes to (default: the compose stack's ``--prometheus-url``)."""
    above: float | None = Field(default=None, allow_inf_nan=False)
    """Breached when the value is above this. Give this or ``below``."""
    below: float | None = Field(default=None, allow_inf_nan=False)
    """Breached when the value is below this."""
    for_s: Duration = Field(default=0.0, alias="for", le=MAX_SUSTAIN_S)
    """How long the value must stay beyond the bound before the run stops (0s: one reading; at most 1 h)."""

    @model_validator(mode="after")
    def _one_of_each(self) -> StopCondition:
        if (self.series is None) == (self.promql is None):
            raise ValueError("give exactly one of series (the run's own reading) or promql (a Prometheus query)")
        if (self.above is None) == (self.below is None):
            raise ValueError("give exactly one bound: above or below")
        if self.prometheus is not None and self.promql is None:
            raise ValueError("prometheus: only with promql")
        return self

    @property
    def query(self) -> str:
        """What is read: the series' name or the PromQL text."""
        return self.series if self.series is not None else str(self.promql)

    def breaches(self, value: float) -> bool:
        """Whether one reading is beyond the bound."""
        return value > self.above if self.above is not None else value < float(self.below or 0.0)

    def describe(self) -> str:
        """``in_flight above 500 for 3s``."""
        bound = f"above {self.above:g}" if self.above is not None else f"below {self.below:g}"
        sustain = f" for {self.for_s:g}s" if self.for_s > 0 else ""
        what = self.name or (self.series if self.series is not None else f"promql {self.promql!r}")
        return f"{what} {bound}{sustain}"
