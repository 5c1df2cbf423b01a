"""The compose stack as a runner backend: where its services are, and the :class:`Stack` over them.

``retrystorm run SCENARIO --backend compose`` runs each strategy against the stack's
long-lived services instead of local processes:

* the target service, reset through its admin API (:mod:`retrystorm.runner.service_target`) and
  paused through the stack's chaos service when its address is given (``--chaos-url``:
  then its metric, journal, Grafana annotations and the Chaos tab see every outage,
  and it resumes the target by itself if the runner dies), else directly through the
  docker backend (containers labelled ``retrystorm.chaos=allow`` of the compose
  project);
* the Locust master, driven over its HTTP API (:mod:`retrystorm.runner.locust_master`);
* Prometheus, read over its HTTP API (:mod:`retrystorm.runner.compose.prometheus`).

Defaults are the compose service names, as seen from a container of the stack
(``docker compose run --rm chaos retrystorm run ...``); the loopback override puts them
all on 127.0.0.1 with their own ports.
"""

from __future__ import annotations

import dataclasses

from retrystorm.addresses import http_address
from retrystorm.chaos.backends.api import ChaosApiBackend
from retrystorm.chaos.client import ChaosClient
from retrystorm.errors import UserError
from retrystorm.runner.lazy import LazyBackend, docker_backend

DEFAULT_TARGET_URL = "http://target:8070"
DEFAULT_LOCUST_URL = "http://locust-master:8089"
DEFAULT_PROMETHEUS_URL = "http://prometheus:9090"
#: A pause through the chaos API holds the target this much longer than the longest
#: outage: the runner resumes it on time; the chaos service only if the runner is gone.
HOLD_MARGIN_S = 15.0


def check_url(text: str, option: str, example: str) -> str:
    """``text`` as an ``http(s)://HOST[:PORT][/PATH]`` address without a trailing ``/``; else a :class:`UserError`."""
    try:
        return http_address(text)
    except ValueError:
        raise UserError(f"{option}: got {text!r}, expected an http:// address like {example}") from None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ComposeEndpoints:
    """Where the compose stack's services answer, and the compose project whose target is paused.

    ``load_target_url``: the target as the Locust workers reach it (``None``: ``target_url``).
    ``chaos_url``: the stack's chaos API to pause through (``None``: the docker backend).
    ``admin_token``: the target's admin API token (``RETRYSTORM_ADMIN_TOKEN`` in the compose file).
    ``web_token``: the Locust master's web UI token (``RETRYSTORM_WEB_TOKEN``); empty: the chaos token, which
    a master bound beyond loopback takes when it has no web token of its own (:mod:`retrystorm.loadgen.web_guard`).
    Addresses are checked when made: a bad one is a :class:`UserError` naming its option.
    """

    target_url: str = DEFAULT_TARGET_URL
    load_target_url: str | None = None
    locust_url: str = DEFAULT_LOCUST_URL
    prometheus_url: str = DEFAULT_PROMETHEUS_URL
    project: str | None = None
    chaos_url: str | None = None
    chaos_token: str = dataclasses.field(default="", repr=False)
    admin_token: str = dataclasses.field(default="", repr=False)
    web_token: str = dataclasses.field(default="", repr=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__  # frozen: normalise once, here
        set_(self, "target_url", check_url(self.target_url, "--target-url", DEFAULT_TARGET_URL))
        load_url = self.target_url if self.load_target_url is None else self.load_target_url
        set_(self, "load_target_url", check_url(load_url, "--load-target-url", DEFAULT_TARGET_URL))
        set_(self, "locust_url", check_url(self.locust_url, "--locust-url", DEFAULT_LOCUST_URL))
        set_(self, "prometheus_url", check_url(self.prometheus_url, "--prometheus-url", DEFAULT_PROMETHEUS_URL))
        if self.project is not None and not self.project.strip():
            set_(self, "project", None)
        if self.chaos_url is not None and self.chaos_url.strip().lower() in ("", "none"):
            set_(self, "chaos_url", None)
        if self.chaos_url is not None:
            set_(self, "chaos_url", check_url(self.chaos_url, "--chaos-url", "http://chaos:8071"))

    def fault_backend(
        self, longest_outage_s: float, *, container: str | None = None, service: str | None = None
    ) -> LazyBackend:
        """What pauses the target: the chaos API if one is given, else the docker backend; made on first use.

        ``container`` / ``service``: a scenario's ``target: {container: NAME}`` or ``{service: NAME}``,
        paused as fault target ``target`` by the docker backend (default: the stack's service ``target``).
        """
        if self.chaos_url is None:
            containers = {"target": container} if container else None
            return docker_backend(self.project, containers, {"target": service} if service else None)
        client = ChaosClient(self.chaos_url, self.chaos_token)
        hold_s = longest_outage_s + HOLD_MARGIN_S
        return LazyBackend(
            ChaosApiBackend.name, lambda: ChaosApiBackend(client, hold_s=hold_s), f"the chaos API at {self.chaos_url}"
        )

    @property
    def master_token(self) -> str:
        """What the runner sends the Locust master: its web token, else the chaos token (as the master falls back)."""
        return self.web_token or self.chaos_token

    def describe(self) -> str:
        """The stack's name in the plan and ``results.json``: every address."""
        return (
            f"compose stack (target {self.target_url}, Locust master {self.locust_url}, "
            f"metrics from Prometheus {self.prometheus_url})"
        )
