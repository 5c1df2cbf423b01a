"""The hosts backend: a scenario across hosts (``hosts:``), with load on Locust's distributed mode and faults
through each host's chaos agent.

The runner starts a Locust master (:mod:`.master`) that the scenario's workers join from their hosts, and
drives the target at its URL with every fault through the agent of the host its target lives on
(:mod:`.targets`); readings are scraped from the target's ``/metrics`` and the master's (the sum of its
workers'), and after each strategy every agent's record of its outages is gathered into the results. It
never imports the compose backend, and of the local one only its process supervision
(:class:`~retrystorm.runner.local.processes.ManagedProcess`).
"""

from __future__ import annotations

from pathlib import Path

from retrystorm.chaos.client import ChaosClient
from retrystorm.experiment.scenario import Scenario, SlowWindow
from retrystorm.experiment.scenario.hosts import check_tokens
from retrystorm.runner import server_metrics
from retrystorm.runner.hosts.master import HostsLoad
from retrystorm.runner.hosts.targets import HostsTargets
from retrystorm.runner.orchestrate import Stack
from retrystorm.runner.scrape import HttpMetricsSource
from retrystorm.runner.throttle_controls import LEVEL_MARGIN_S

#: A pause asks its agent to hold the target this much longer than the longest outage: the runner ends it on
#: time; the agent's own deadline only if the runner is gone.
HOLD_MARGIN_S = 5.0


def hosts_stack(scenario: Scenario, log_dir: Path, *, admin_token: str = "") -> Stack:
    """The :class:`Stack` of a scenario across hosts; a missing token is a :class:`~retrystorm.errors.UserError`."""
    hosts, target = scenario.hosts, scenario.target
    if hosts is None or target is None:
        raise ValueError("hosts_stack needs a scenario with hosts: and target:")
    tokens = check_tokens(hosts)
    clients = {host: ChaosClient(agent.url, tokens[host]) for host, agent in hosts.agents.items()}
    timeline = scenario.timeline()
    slows = [w.end_s - w.start_s + LEVEL_MARGIN_S for w in timeline.triggers if isinstance(w, SlowWindow)]
    longest_s = max([outage.duration_s for outage in timeline.outages] + slows, default=0.0)
    targets = HostsTargets(scenario, clients, hold_s=longest_s + HOLD_MARGIN_S, admin_token=admin_token)
    if target.model_server:
        source = HttpMetricsSource()
    else:
        found = server_metrics.endpoint(target.metrics)
        source = HttpMetricsSource(found[1]) if found is not None else HttpMetricsSource()
    name = f"hosts (master {hosts.master}, {hosts.workers} worker(s), agents: {', '.join(hosts.agents) or 'none'})"
    # the runner reaches the target's URL (it scrapes its /metrics there), so it sends the fresh requests too
    load = HostsLoad(hosts, log_dir)
    return Stack(name, targets, load, source, network=targets.network, fresh_requests=True)
