"""Kubernetes objects as plain data: names, labels and the few object shapes the manifests are made of.

Every builder returns JSON-ready dicts in a fixed key order, so the same arguments give the same bytes once dumped.
Names follow RFC 1123 (lower-case letters, digits and ``-``, at most 63 characters for a label value or a
Service's name): :func:`dns_name` makes one from a strategy's label.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

#: The label every object carries; the Deployments' selectors add ``app.kubernetes.io/component``.
PART_OF = "app.kubernetes.io/part-of"
COMPONENT = "app.kubernetes.io/component"
MANAGED_BY = "app.kubernetes.io/managed-by"
#: The label that opens a pod to the chaos agent (its default pod selector).
CHAOS_LABEL = "retrystorm.io/chaos"
CHAOS_ALLOW = "allow"
_NOT_DNS = re.compile(r"[^a-z0-9-]+")
MAX_NAME = 63

Manifest = dict[str, Any]


def dns_name(text: str, *, prefix: str = "") -> str:
    """``prefix`` + ``text`` as an RFC 1123 label: lower case, runs of other characters as ``-``, at most 63.

    A name that had to be cut or changed keeps 6 hex digits of its text's SHA-256, so two labels that differ only
    in what was dropped (``fixed:100ms`` and ``fixed-100ms``) never share a name.
    """
    cleaned = _NOT_DNS.sub("-", text.lower()).strip("-") or "x"
    name = f"{prefix}{cleaned}"
    if cleaned != text or len(name) > MAX_NAME:
        digest = hashlib.sha256(text.encode()).hexdigest()[:6]
        name = f"{name[: MAX_NAME - 7].rstrip('-')}-{digest}"
    return name


def labels(component: str) -> dict[str, str]:
    """The labels of one component's objects (and of its pods)."""
    return {PART_OF: "retrystorm", COMPONENT: component, MANAGED_BY: "retrystorm-k8s-render"}


def selector(component: str) -> dict[str, str]:
    """What a Deployment, a DaemonSet or a Service selects its pods by."""
    return {PART_OF: "retrystorm", COMPONENT: component}


def metadata(name: str, namespace: str | None, component: str, **extra: Any) -> dict[str, Any]:
    """An object's metadata; ``namespace`` ``None`` for a cluster-scoped object."""
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["labels"] = labels(component)
    meta.update(extra)
    return meta


def scrape_annotations(port: int, path: str = "/metrics") -> dict[str, str]:
    """Prometheus' conventional pod annotations (its ``kubernetes_sd_configs`` example relabelling reads them)."""
    return {"prometheus.io/scrape": "true", "prometheus.io/port": str(port), "prometheus.io/path": path}


def secret_env(name: str, secret: str, key: str) -> dict[str, Any]:
    """An environment variable read from key ``key`` of Secret ``secret``."""
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}


def field_env(name: str, field_path: str) -> dict[str, Any]:
    """An environment variable from the downward API (``status.hostIP``, ``spec.nodeName``)."""
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": field_path}}}


def tcp_probe(port: str, *, period_s: int = 5, failures: int = 3) -> dict[str, Any]:
    """A probe that passes while the named port accepts a connection."""
    return {"tcpSocket": {"port": port}, "periodSeconds": period_s, "failureThreshold": failures}


def pod_template(
    component: str, containers: Sequence[Mapping[str, Any]], *, annotations: Mapping[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:  # fmt: skip
    """A pod template labelled for ``component``, with ``annotations`` (scraping) and more pod ``spec`` fields."""
    meta: dict[str, Any] = {"labels": labels(component)}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"metadata": meta, "spec": {**spec, "containers": [dict(c) for c in containers]}}


def deployment(name: str, namespace: str, component: str, replicas: int, template: Mapping[str, Any]) -> Manifest:
    """An ``apps/v1`` Deployment of ``replicas`` pods from ``template``."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(name, namespace, component),
        "spec": {"replicas": replicas, "selector": {"matchLabels": selector(component)}, "template": dict(template)},
    }


def service(name: str, namespace: str, component: str, ports: Sequence[tuple[str, int]]) -> Manifest:
    """A ClusterIP Service of ``component``'s pods, each ``(port name, port)`` to the container port of that name."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(name, namespace, component),
        "spec": {
            "type": "ClusterIP",
            "selector": selector(component),
            "ports": [{"name": port_name, "port": port, "targetPort": port_name} for port_name, port in ports],
        },
    }


def container_ports(ports: Sequence[tuple[str, int]]) -> list[dict[str, Any]]:
    """A container's named TCP ports."""
    return [{"name": name, "containerPort": port, "protocol": "TCP"} for name, port in ports]
