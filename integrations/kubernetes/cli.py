"""``retrystorm k8s``: Kubernetes manifests for a scenario (``render``)."""

from __future__ import annotations

from pathlib import Path

import click

from retrystorm.console import out
from retrystorm.experiment.scenario import load_scenario
from retrystorm.integrations.kubernetes.output import stream, write_folder
from retrystorm.integrations.kubernetes.render import (
    DEFAULT_IMAGE,
    DEFAULT_NAMESPACE,
    DEFAULT_POD_SELECTOR,
    DEFAULT_TOKEN_SECRET,
    RenderOptions,
    render,
)


@click.group("k8s")
def k8s() -> None:
    """Kubernetes: the manifests that run a scenario's load, target, chaos agents and dashboards in a cluster."""


@k8s.command("render")
@click.argument("scenario_file", metavar="SCENARIO", type=click.Path(path_type=Path))
@click.option(
    "--out",
    "folder",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write one file per part and a kustomization.yaml into this folder. [default: one YAML stream "
    "on standard output]",
)
@click.option(
    "--image",
    default=DEFAULT_IMAGE,
    show_default=True,
    help="The retrystorm image the pods run (built from the Dockerfile; push it where the cluster pulls).",
)
@click.option("--namespace", default=DEFAULT_NAMESPACE, show_default=True, help="The namespace of every object.")
@click.option(
    "--workers",
    type=int,
    default=None,
    help="Locust worker pods (1 to 1,000). [default: one per 1,000 attempts/s of the load's peak]",
)
@click.option(
    "--strategy",
    "strategy",
    default=None,
    metavar="LABEL",
    help="The strategy the Locust master starts with. [default: the scenario's first]",
)
@click.option(
    "--target-url",
    default=None,
    metavar="URL",
    help="Where the users send, as pods reach it (http://SERVICE.NAMESPACE.svc:PORT), for a scenario whose "
    "own target.url is not. [default: the scenario's target.url, or the built-in target's Service]",
)
@click.option(
    "--token-secret",
    default=DEFAULT_TOKEN_SECRET,
    show_default=True,
    help="The Secret the pods read their tokens from (keys web-token, admin-token, chaos-token), which you create.",
)
@click.option(
    "--chaos-agent",
    is_flag=True,
    help="Also the chaos agent: a DaemonSet that may freeze and cut, on its node, the pods --pod-selector names.",
)
@click.option(
    "--pod-selector",
    default=DEFAULT_POD_SELECTOR,
    show_default=True,
    metavar="KEY=VALUE[,...]",
    help="--chaos-agent: the pods open to chaos, by label (equality terms; the built-in target carries the default).",
)
@click.option(
    "--locust-operator",
    is_flag=True,
    help="Also a LocustTest (locust.io/v2, the Locust Kubernetes operator) per strategy.",
)
@click.option(
    "--service-monitor",
    is_flag=True,
    help="Also a ServiceMonitor (Prometheus Operator); the pods carry prometheus.io annotations anyway.",
)
def render_command(
    *,
    scenario_file: Path,
    folder: Path | None,
    image: str,
    namespace: str,
    workers: int | None,
    strategy: str | None,
    target_url: str | None,
    token_secret: str,
    chaos_agent: bool,
    pod_selector: str,
    locust_operator: bool,
    service_monitor: bool,
) -> None:  # fmt: skip
    """Write the manifests that run SCENARIO on Kubernetes: Locust master and workers, the built-in target (for a
    scenario without target:), the dashboards' ConfigMap; the same scenario and options give the same bytes.

    SCENARIO is a shipped scenario's name or a YAML file named as a path (./mine.yaml). Apply the result with
    `kubectl apply -f -` (or `kubectl apply -k FOLDER` with --out), after creating the Secret the pods read
    their tokens from (docs/guides/kubernetes.md).
    """
    scenario = load_scenario(scenario_file)
    options = RenderOptions(
        image=image, namespace=namespace, workers=workers, strategy=strategy, target_url=target_url,
        token_secret=token_secret, locust_operator=locust_operator, service_monitor=service_monitor,
        pod_selector=pod_selector if chaos_agent else None,
    )  # fmt: skip
    files = render(scenario, options)
    if folder is None:
        click.echo(stream(files), nl=False)
        return
    for path in write_folder(files, folder):
        out.print(f"wrote {path}")
