"""The chaos agent as a DaemonSet: ``retrystorm chaos serve --backend kubernetes`` on every node, with the least it
needs (``retrystorm k8s render --chaos-agent``).

What it needs, and why (:mod:`retrystorm.chaos.kubernetes.backend`):

* **the host's cgroupfs** (``/sys/fs/cgroup``, a hostPath, writable): it freezes and cuts the containers' cgroups;
* **hostPID**: ``cgroup.procs`` lists host pids, which it reads to refuse a cgroup holding pid 1, itself or a
  watchdog, and to check a freeze took (in its own pid namespace those processes are invisible);
* **hostNetwork**, bound to the node's address (``status.hostIP``) with a token from the Secret (``chaos-token``),
  as ``chaos serve`` requires beyond loopback: the runner reaches the agent of a pod's node by that node's address;
* **root** (uid 0, the owner of the cgroup files) with every capability dropped, no privilege escalation, a
  read-only root filesystem; its journal on a hostPath (``/var/lib/retrystorm``), so an agent restarted on the node
  thaws and restores what the previous one left (start-up recovery);
* **list pods**, cluster-wide (a ClusterRole): the pods on its node that match the selector.

It is not privileged and adds no capability.
"""

from __future__ import annotations

from retrystorm.integrations.kubernetes.objects import (
    Manifest,
    container_ports,
    field_env,
    metadata,
    pod_template,
    scrape_annotations,
    secret_env,
    selector,
    tcp_probe,
)

AGENT = "retrystorm-chaos-agent"
AGENT_PORT = 8071
JOURNAL_DIR = "/var/lib/retrystorm"


def chaos_agent(namespace: str, image: str, pod_selector: str, token_secret: str) -> list[Manifest]:
    """The agent's ServiceAccount, ClusterRole and its binding, and the DaemonSet (module docstring)."""
    command = [
        "retrystorm", "chaos", "serve", "--backend", "kubernetes", "--host", "$(NODE_IP)", "--port", str(AGENT_PORT),
        "--pod-selector", pod_selector, "--journal", f"{JOURNAL_DIR}/chaos-journal.jsonl",
    ]  # fmt: skip
    container = {
        "name": "chaos-agent",
        "image": image,
        "command": command,
        "env": [
            field_env("NODE_NAME", "spec.nodeName"),
            field_env("NODE_IP", "status.hostIP"),
            secret_env("RETRYSTORM_CHAOS_TOKEN", token_secret, "chaos-token"),
        ],
        "ports": container_ports([("chaos", AGENT_PORT)]),
        "readinessProbe": tcp_probe("chaos"),
        "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
        "securityContext": {
            "runAsUser": 0,
            "runAsNonRoot": False,
            "privileged": False,
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumeMounts": [
            {"name": "cgroup", "mountPath": "/sys/fs/cgroup"},
            {"name": "journal", "mountPath": JOURNAL_DIR},
            {"name": "tmp", "mountPath": "/tmp"},  # noqa: S108 - the container's own scratch space (an emptyDir)
        ],
    }
    template = pod_template(
        "chaos-agent", [container], annotations=scrape_annotations(AGENT_PORT),
        serviceAccountName=AGENT, hostPID=True, hostNetwork=True, dnsPolicy="ClusterFirstWithHostNet",
        volumes=[
            {"name": "cgroup", "hostPath": {"path": "/sys/fs/cgroup", "type": "Directory"}},
            {"name": "journal", "hostPath": {"path": JOURNAL_DIR, "type": "DirectoryOrCreate"}},
            {"name": "tmp", "emptyDir": {}},
        ],
    )  # fmt: skip
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata(AGENT, namespace, "chaos-agent")},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": metadata(AGENT, None, "chaos-agent"),
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": metadata(AGENT, None, "chaos-agent"),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": AGENT},
            "subjects": [{"kind": "ServiceAccount", "name": AGENT, "namespace": namespace}],
        },
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": metadata(AGENT, namespace, "chaos-agent"),
            "spec": {"selector": {"matchLabels": selector("chaos-agent")}, "template": template},
        },
    ]
