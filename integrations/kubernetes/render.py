"""``retrystorm k8s render``: what a user applies to run a scenario's load, target and dashboards on Kubernetes.

:func:`render` turns a scenario into manifests, grouped in files (:data:`FILES`, each a list of objects):

* ``namespace.yaml``: the Namespace;
* ``locust.yaml``: the Locust master (a Deployment, its web UI and ``/metrics`` on port 8089, workers' port 5557)
  and its Service, and the workers (a Deployment of ``workers`` pods, each one Locust process joining the master);
  the master starts with one strategy's options (the scenario's users, spawn rate, think time, strategy and its
  controls, :func:`retrystorm.runner.locust_args.locust_options`), the first unless ``strategy`` names another;
* ``target.yaml``: the built-in target (``retrystorm target`` with the scenario's model) and its Service, for a
  scenario without ``target:``; its pods carry ``retrystorm.io/chaos: allow``;
* ``locusttests.yaml`` (``locust_operator``): one ``LocustTest`` (``locust.io/v2``, the Locust Kubernetes
  operator's resource) per strategy, each a headless run with that strategy's options;
* ``monitoring.yaml``: the dashboards as a ConfigMap (label ``grafana_dashboard: "1"``, which Grafana's Helm
  chart's dashboard sidecar loads), and with ``service_monitor`` a ``ServiceMonitor`` (Prometheus Operator) for the
  target's and the master's Services; every pod that serves metrics also carries ``prometheus.io/*`` annotations.

Tokens are never in the output: the pods read them from the Secret ``token_secret`` (keys ``web-token``,
``admin-token``), which the user creates. The output depends only on the scenario and the options: the same
input gives the same bytes (no time, no random names).
"""

from __future__ import annotations

import dataclasses
import json
import math
import urllib.parse
from collections.abc import Sequence
from typing import Any

from retrystorm import __version__
from retrystorm.addresses import is_loopback_host
from retrystorm.chaos.kubernetes.pods import LabelSelector
from retrystorm.dashboards.shipped import shipped_dashboards
from retrystorm.errors import UserError, did_you_mean
from retrystorm.experiment.scenario import RunSpec, Scenario
from retrystorm.integrations.kubernetes.agent import chaos_agent
from retrystorm.integrations.kubernetes.objects import (
    CHAOS_ALLOW,
    CHAOS_LABEL,
    COMPONENT,
    PART_OF,
    Manifest,
    container_ports,
    deployment,
    dns_name,
    metadata,
    pod_template,
    scrape_annotations,
    secret_env,
    service,
    tcp_probe,
)
from retrystorm.runner.local.locust import PLANNED_ATTEMPTS_PER_WORKER, peak_attempts_per_s
from retrystorm.runner.locust_args import check_options, locust_flags, locust_options, locustfile

#: The image's source folder (the Dockerfile's WORKDIR): the locustfiles are read from there.
IMAGE_SOURCE = "/app"
WEB_PORT = 8089
MASTER_PORT = 5557
TARGET_PORT = 8070
#: A pod's servers listen on every address of the pod (its own network namespace), each behind its token.
POD_ADDRESSES = "0.0.0.0"  # noqa: S104 - the pod's own addresses; the web UI and the target refuse it without a token
#: The files :func:`render` fills, in the order a kustomization lists them.
FILES = ("namespace.yaml", "target.yaml", "locust.yaml", "chaos-agent.yaml", "locusttests.yaml", "monitoring.yaml")
#: The most Locust workers a render asks for (the hosts section's own ceiling).
MAX_WORKERS = 1000
DEFAULT_IMAGE = f"retrystorm:{__version__}"
DEFAULT_NAMESPACE = "retrystorm"
DEFAULT_POD_SELECTOR = f"{CHAOS_LABEL}={CHAOS_ALLOW}"
DEFAULT_TOKEN_SECRET = "retrystorm-tokens"  # noqa: S105 - the name of a Secret, not a token
#: The container securityContext of every pod but the chaos agent's: the image's own user, nothing more.
RESTRICTED = {
    "allowPrivilegeEscalation": False,
    "runAsNonRoot": True,
    "runAsUser": 10001,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RenderOptions:
    """What a render needs besides the scenario (the command's options)."""

    image: str = DEFAULT_IMAGE
    namespace: str = DEFAULT_NAMESPACE
    #: Locust worker pods; ``None``: one per 1,000 attempts/s of the load's peak (at least 1).
    workers: int | None = None
    #: The label of the strategy the master starts with; ``None``: the scenario's first.
    strategy: str | None = None
    #: Where the users send, for a scenario whose own ``target.url`` is not reachable from a pod.
    target_url: str | None = None
    token_secret: str = DEFAULT_TOKEN_SECRET
    locust_operator: bool = False
    service_monitor: bool = False
    #: The chaos agent's DaemonSet, with the pods it may fault (``None``: no agent).
    pod_selector: str | None = None


def render(scenario: Scenario, options: RenderOptions) -> dict[str, list[Manifest]]:
    """File name -> its objects (module docstring); :class:`~retrystorm.errors.UserError` on bad input."""
    _check_names(options)
    specs = {entry.label: RunSpec.of(scenario, entry) for entry in scenario.strategies}
    chosen = _chosen(specs, options.strategy)
    host = _load_host(scenario, options)
    files: dict[str, list[Manifest]] = {
        "namespace.yaml": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata(options.namespace, None, "namespace")}
        ],
        "target.yaml": _target(scenario, options) if scenario.target is None else [],
        "locust.yaml": _locust(scenario, chosen, host, options),
        "chaos-agent.yaml": _agent(options) if options.pod_selector is not None else [],
        "locusttests.yaml": _locust_tests(scenario, specs, host, options) if options.locust_operator else [],
        "monitoring.yaml": _monitoring(scenario, options),
    }
    return {name: objects for name, objects in files.items() if objects}


def _agent(options: RenderOptions) -> list[Manifest]:
    """The chaos agent's DaemonSet and what it runs as, for the pods ``pod_selector`` opens to it."""
    try:
        selector = LabelSelector.parse(options.pod_selector or "")
    except ValueError as error:
        raise UserError(f"--pod-selector: {error}") from None
    return chaos_agent(options.namespace, options.image, selector.text(), options.token_secret)


def _check_names(options: RenderOptions) -> None:
    for what, value in (("--namespace", options.namespace), ("--token-secret", options.token_secret)):
        if dns_name(value) != value:
            raise UserError(f"{what} {value[:80]!r}: expected a DNS label (a-z, 0-9 and -, at most 63)")
    if not options.image or any(char.isspace() for char in options.image) or len(options.image) > 512:
        raise UserError(f"--image {options.image[:80]!r}: expected an image reference like registry/retrystorm:1.0")
    if options.workers is not None and not 1 <= options.workers <= MAX_WORKERS:
        raise UserError(f"--workers {options.workers}: expected 1 to {MAX_WORKERS}")


def _chosen(specs: dict[str, RunSpec], label: str | None) -> RunSpec:
    if label is None:
        return next(iter(specs.values()))
    if label not in specs:
        raise UserError(f"--strategy {label!r}: no such strategy{did_you_mean(label, list(specs))}; "
                        f"the scenario's: {', '.join(specs)}")  # fmt: skip
    return specs[label]


def _load_host(scenario: Scenario, options: RenderOptions) -> str:
    """Where the users send: ``--target-url``, the scenario's own ``target.url``, or the built-in target's Service."""
    if options.target_url is not None:
        url = options.target_url
    elif scenario.target is not None:
        url = scenario.target.url
    else:
        return f"http://retrystorm-target.{options.namespace}.svc:{TARGET_PORT}"
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise UserError(f"target URL {url[:120]!r}: expected http(s)://HOST[:PORT], as a pod reaches it")
    if is_loopback_host(parsed.hostname):
        raise UserError(
            f"target URL {url[:120]!r} is loopback, which inside a pod is the pod itself: give --target-url "
            "with the address pods reach it at (http://SERVICE.NAMESPACE.svc:PORT)"
        )
    return url


def _worker_count(chosen: RunSpec, options: RenderOptions) -> int:
    if options.workers is not None:
        return options.workers
    return min(MAX_WORKERS, max(1, math.ceil(peak_attempts_per_s(chosen) / PLANNED_ATTEMPTS_PER_WORKER)))


def _strategy_flags(scenario: Scenario, spec: RunSpec) -> list[str]:
    """The Locust options of one strategy's run (checked as a master checks them: a bad one is exit 2 here)."""
    check_options(spec)
    return locust_flags(locust_options(spec, spikes=scenario.timeline().of_kind("spike")))


def _locustfile(spec: RunSpec) -> str:
    return f"{IMAGE_SOURCE}/loadgen/{locustfile(spec).name}"


def _locust(scenario: Scenario, spec: RunSpec, host: str, options: RenderOptions) -> list[Manifest]:
    """The master's Deployment and Service, and the workers' Deployment."""
    master_command = [
        "locust", "-f", _locustfile(spec), "--master", f"--web-host={POD_ADDRESSES}", f"--web-port={WEB_PORT}",
        f"--master-bind-port={MASTER_PORT}", f"--host={host}", *_strategy_flags(scenario, spec),
    ]  # fmt: skip
    worker_command = [
        "locust", "-f", _locustfile(spec), "--worker", f"--master-host=locust-master.{options.namespace}.svc",
        f"--master-port={MASTER_PORT}",
    ]  # fmt: skip
    ports = [("web", WEB_PORT), ("master", MASTER_PORT)]
    master = {
        "name": "locust-master",
        "image": options.image,
        "command": master_command,
        "env": [secret_env("RETRYSTORM_WEB_TOKEN", options.token_secret, "web-token")],
        "ports": container_ports(ports),
        "readinessProbe": tcp_probe("web"),
        "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"memory": "1Gi"}},
        "securityContext": RESTRICTED,
    }
    worker = {
        "name": "locust-worker",
        "image": options.image,
        "command": worker_command,
        "resources": {"requests": {"cpu": "1", "memory": "512Mi"}, "limits": {"memory": "1Gi"}},
        "securityContext": RESTRICTED,
    }
    return [
        deployment("locust-master", options.namespace, "locust-master", 1,
                   pod_template("locust-master", [master], annotations=scrape_annotations(WEB_PORT))),
        service("locust-master", options.namespace, "locust-master", ports),
        deployment("locust-worker", options.namespace, "locust-worker", _worker_count(spec, options),
                   pod_template("locust-worker", [worker])),
    ]  # fmt: skip


def _target(scenario: Scenario, options: RenderOptions) -> list[Manifest]:
    """The built-in target with the scenario's model, open to the chaos agent, and its Service."""
    model = scenario.model.spec() if scenario.model is not None else "exponential"
    command = [
        "retrystorm", "target", "--host", POD_ADDRESSES, "--port", str(TARGET_PORT), "--model", model,
        "--report-interval", "0",
    ]  # fmt: skip
    container = {
        "name": "target",
        "image": options.image,
        "command": command,
        "env": [secret_env("RETRYSTORM_ADMIN_TOKEN", options.token_secret, "admin-token")],
        "ports": container_ports([("http", TARGET_PORT)]),
        # A TCP readiness probe passes while the kernel still completes handshakes for a frozen process, so a freeze
        # stays a stall behind the Service (as SIGSTOP is) instead of taking the pod out of its endpoints; no
        # liveness probe, which would restart a frozen target (docs/guides/kubernetes.md, "Probes during a freeze").
        "readinessProbe": tcp_probe("http"),
        "resources": {"requests": {"cpu": "1", "memory": "256Mi"}, "limits": {"memory": "2Gi"}},
        "securityContext": RESTRICTED,
    }
    template = pod_template("target", [container], annotations=scrape_annotations(TARGET_PORT))
    template["metadata"]["labels"][CHAOS_LABEL] = CHAOS_ALLOW
    return [
        deployment("retrystorm-target", options.namespace, "target", 1, template),
        service("retrystorm-target", options.namespace, "target", [("http", TARGET_PORT)]),
    ]


def _locust_tests(scenario: Scenario, specs: dict[str, RunSpec], host: str, options: RenderOptions) -> list[Manifest]:
    """One headless ``LocustTest`` per strategy: the operator starts the users at once and quits at run time's end.

    The operator splits ``command`` on spaces, so an option with a space in its value is refused here. Its master's
    web UI stays on loopback (the plugin's default), so it needs no token.
    """
    tests = []
    workers = _worker_count(next(iter(specs.values())), options)
    for label, spec in specs.items():
        flags = [f"--locustfile={_locustfile(spec)}", f"--host={host}", *_strategy_flags(scenario, spec)]
        spaced = [flag.split("=", 1)[0] for flag in flags if any(char.isspace() for char in flag)]
        if spaced:
            raise UserError(f"--locust-operator: strategy {label!r}'s {spaced[0]} has a space, and the operator "
                            "splits its command on spaces; render without --locust-operator")  # fmt: skip
        tests.append({
            "apiVersion": "locust.io/v2",
            "kind": "LocustTest",
            "metadata": metadata(dns_name(label, prefix="retrystorm-"), options.namespace, "locust-test"),
            "spec": {
                "image": options.image,
                "master": {"command": " ".join(flags), "autostart": True, "autoquit": {"enabled": True, "timeout": 60}},
                "worker": {"command": f"--locustfile={_locustfile(spec)}", "replicas": workers},
            },
        })  # fmt: skip
    return tests


def _monitoring(scenario: Scenario, options: RenderOptions) -> list[Manifest]:
    """The dashboards' ConfigMap, and the ServiceMonitor when asked for."""
    dashboards = {f"{uid}.json": json.dumps(model, indent=2, sort_keys=True) + "\n"
                  for uid, model in shipped_dashboards().items()}  # fmt: skip
    found: list[Manifest] = [{
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata("retrystorm-dashboards", options.namespace, "dashboards",
                             annotations={"grafana_folder": "retrystorm"}),
        "data": dashboards,
    }]  # fmt: skip
    found[0]["metadata"]["labels"]["grafana_dashboard"] = "1"
    if options.service_monitor:
        found.append(_service_monitor(scenario, options))
    return found


def _service_monitor(scenario: Scenario, options: RenderOptions) -> Manifest:
    """A ``monitoring.coreos.com/v1`` ServiceMonitor: the master's ``web`` port, the built-in target's ``http``."""
    components = ["locust-master", *(["target"] if scenario.target is None else [])]
    endpoints: Sequence[dict[str, Any]] = [
        {"port": port, "path": "/metrics", "interval": "1s", "scrapeTimeout": "1s"}
        for port in ("web", *(["http"] if scenario.target is None else []))
    ]
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": metadata("retrystorm", options.namespace, "monitoring"),
        "spec": {
            "selector": {
                "matchLabels": {PART_OF: "retrystorm"},
                "matchExpressions": [{"key": COMPONENT, "operator": "In", "values": components}],
            },
            "endpoints": list(endpoints),
        },
    }  # fmt: skip
