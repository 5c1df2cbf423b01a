"""Pods as the Kubernetes API describes them, and the label selector that opens them to chaos (pure; no I/O).

:func:`parse_pod_list` reads a ``PodList`` (``GET /api/v1/pods``): each pod's namespace, name, UID, node, QoS class
(``status.qosClass``), labels, and each running container's runtime and ID from ``status.containerStatuses[]
.containerID`` (``containerd://<64 hex>``, ``cri-o://...``, ``docker://...``), which is what places its cgroup
(:func:`retrystorm.chaos.freezer.kubelet_cgroup`).

:class:`LabelSelector` is the registered-targets rule of the agent's Kubernetes mode: only pods whose labels match it,
on the agent's own node, can be frozen. It takes the equality-based form (``app=web,tier!=db``; ``==`` as ``=``),
which the API filters by, and which :meth:`LabelSelector.matches` checks again on every pod the API returns.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

#: A label key (an optional DNS prefix and ``/``, then a name) and a label value, as Kubernetes accepts them.
_KEY = re.compile(r"([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")
#: ``containerID``'s scheme -> the runtime's name in :data:`retrystorm.chaos.freezer.RUNTIME_PREFIXES`.
RUNTIMES = {"containerd": "containerd", "cri-o": "cri-o", "docker": "docker"}
QOS = {"Guaranteed": "guaranteed", "Burstable": "burstable", "BestEffort": "besteffort"}
MAX_TERMS = 20


class PodListError(ValueError):
    """An answer of the API that is not a PodList this agent can read."""


@dataclasses.dataclass(frozen=True, slots=True)
class LabelSelector:
    """Equality-based terms: ``(key, value, equal)``; a pod matches when every term holds."""

    terms: tuple[tuple[str, str, bool], ...]

    @classmethod
    def parse(cls, text: str) -> LabelSelector:
        """``key=value,key!=value`` (at least one ``=`` term); ``ValueError`` naming the bad term."""
        terms = []
        for raw in text.split(","):
            term = raw.strip()
            match = re.fullmatch(r"([^=!\s]+)\s*(==|=|!=)\s*(\S*)", term)
            if match is None or not _KEY.fullmatch(match[1]) or not _VALUE.fullmatch(match[3]):
                raise ValueError(f"pod selector term {term[:80]!r}: expected key=value or key!=value")
            terms.append((match[1], match[3], match[2] != "!="))
        if not any(equal for _, _, equal in terms):
            raise ValueError(f"pod selector {text[:80]!r}: needs a key=value term (a != term alone opens every pod)")
        if len(terms) > MAX_TERMS:
            raise ValueError(f"pod selector: {len(terms)} terms; at most {MAX_TERMS}")
        return cls(tuple(terms))

    def text(self) -> str:
        """The selector as the API's ``labelSelector`` query parameter takes it."""
        return ",".join(f"{key}{'=' if equal else '!='}{value}" for key, value, equal in self.terms)

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy every term (a ``!=`` term holds for a pod without the key)."""
        return all((labels.get(key) == value) == equal for key, value, equal in self.terms)


@dataclasses.dataclass(frozen=True, slots=True)
class Container:
    """A running container of a pod: its name, runtime and ID."""

    name: str
    runtime: str
    id: str


@dataclasses.dataclass(frozen=True, slots=True)
class Pod:
    """What the agent needs of one pod."""

    namespace: str
    name: str
    uid: str
    node: str
    qos: str
    labels: dict[str, str]
    containers: tuple[Container, ...]

    @property
    def key(self) -> str:
        """``namespace/name``: the target's name."""
        return f"{self.namespace}/{self.name}"


def parse_pod_list(answer: Any) -> list[Pod]:
    """The pods of a ``PodList`` answer, sorted by ``namespace/name`` (:class:`PodListError` if it is not one)."""
    if not isinstance(answer, dict) or answer.get("kind") != "PodList" or not isinstance(answer.get("items"), list):
        raise PodListError("the API's answer is not a PodList")
    pods = [_pod(item) for item in answer["items"]]
    return sorted(pods, key=lambda pod: pod.key)


def _pod(item: Any) -> Pod:
    meta, spec, status = (_mapping(item, part) for part in ("metadata", "spec", "status"))
    name = f"{meta.get('namespace')}/{meta.get('name')}"
    qos = QOS.get(str(status.get("qosClass")))
    if qos is None:
        raise PodListError(f"pod {name}: status.qosClass {status.get('qosClass')!r} is not one of {', '.join(QOS)}")
    labels = meta.get("labels") or {}
    if not isinstance(labels, dict):
        raise PodListError(f"pod {name}: metadata.labels is not a mapping")
    containers = []
    for entry in status.get("containerStatuses") or []:
        found = _container(entry, name)
        if found is not None:
            containers.append(found)
    return Pod(
        namespace=str(meta.get("namespace")),
        name=str(meta.get("name")),
        uid=str(meta.get("uid")),
        node=str(spec.get("nodeName") or ""),
        qos=qos,
        labels={str(key): str(value) for key, value in labels.items()},
        containers=tuple(sorted(containers, key=lambda container: container.name)),
    )


def _container(entry: Any, pod: str) -> Container | None:
    """A running container with an ID; ``None`` for one waiting or terminated (nothing to freeze)."""
    if not isinstance(entry, dict) or "running" not in (entry.get("state") or {}):
        return None
    scheme, _, container_id = str(entry.get("containerID") or "").partition("://")
    if scheme not in RUNTIMES:
        raise PodListError(f"pod {pod}: container {entry.get('name')!r} runs on {scheme!r}, expected one of "
                           f"{', '.join(RUNTIMES)}")  # fmt: skip
    return Container(str(entry.get("name")), RUNTIMES[scheme], container_id)


def _mapping(item: Any, part: str) -> dict[str, Any]:
    found = item.get(part) if isinstance(item, dict) else None
    if not isinstance(found, dict):
        raise PodListError(f"a pod without {part}")
    return found
