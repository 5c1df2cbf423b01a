"""``chaos serve --backend kubernetes``: its options, and the backend they make (one line, exit 2, on bad input)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from retrystorm.chaos.kubernetes.api import KubeApi
from retrystorm.chaos.kubernetes.backend import DRIVERS, KubernetesBackend
from retrystorm.chaos.kubernetes.pods import LabelSelector
from retrystorm.errors import UserError

#: A node's name as Kubernetes accepts it (an RFC 1123 subdomain).
MAX_NODE_CHARS = 253


def kubernetes_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The Kubernetes mode's options of ``chaos serve``."""
    options = [
        click.option("--pod-selector", default=None, metavar="KEY=VALUE[,...]",
                     help="--backend kubernetes: the pods open to chaos, by label (equality terms: app=web,tier!=db); "
                     "only those on --node."),
        click.option("--node", envvar="NODE_NAME", default=None, show_envvar=True,
                     help="--backend kubernetes: this node's name (the DaemonSet passes spec.nodeName)."),
        click.option("--cgroup-driver", type=click.Choice(DRIVERS), default="auto", show_default=True,
                     help="--backend kubernetes: the kubelet's cgroup driver (auto: systemd's layout, else "
                     "cgroupfs's)."),
        click.option("--cgroup-root", default="/", show_default=True,
                     help="--backend kubernetes: the kubelet's --cgroup-root."),
        click.option("--kube-api", default=None, metavar="URL",
                     help="--backend kubernetes: the API server. [default: in the pod, the service account's]"),
    ]  # fmt: skip
    return functools.reduce(lambda wrapped, option: option(wrapped), reversed(options), command)


def make_kubernetes_backend(
    pod_selector: str | None, node: str | None, cgroup_driver: str, cgroup_root: str, kube_api: str | None
) -> KubernetesBackend:
    """The backend of these options; :class:`UserError` naming what is missing or wrong."""
    if not pod_selector:
        raise UserError("--backend kubernetes needs --pod-selector KEY=VALUE: the pods open to chaos")
    if not node or len(node) > MAX_NODE_CHARS or any(char.isspace() or char in "/?&=" for char in node):
        raise UserError("--backend kubernetes needs --node (or NODE_NAME): this node's name as Kubernetes knows it")
    if not cgroup_root.startswith("/") or ".." in cgroup_root.split("/"):
        raise UserError(f"--cgroup-root {cgroup_root[:80]!r}: expected an absolute cgroup path such as /")
    try:
        selector = LabelSelector.parse(pod_selector)
    except ValueError as error:
        raise UserError(f"--pod-selector: {error}") from None
    if kube_api is not None and not kube_api.startswith(("http://", "https://")):
        raise UserError(f"--kube-api {kube_api[:80]!r}: expected http(s)://HOST:PORT")
    api = KubeApi(kube_api) if kube_api is not None else KubeApi.in_cluster()
    return KubernetesBackend(api, selector, node, driver=cgroup_driver, cgroup_root=cgroup_root)
