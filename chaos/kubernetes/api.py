"""The one call the agent makes to the Kubernetes API: the pods on its node that match its selector.

``GET /api/v1/pods?labelSelector=SELECTOR&fieldSelector=spec.nodeName%3DNODE`` with the pod's service account token
(``Authorization: Bearer``), over TLS checked against the service account's CA, to the address the kubelet gives
every pod (``KUBERNETES_SERVICE_HOST``, ``KUBERNETES_SERVICE_PORT``). The agent's ClusterRole needs only ``list``
on ``pods``. :meth:`KubeApi.in_cluster` reads that configuration; :class:`KubeApi` takes any base URL, which is how
the tests serve it recorded answers from a local server.

Standard library only. Each call has a timeout and reads at most :data:`MAX_ANSWER_BYTES`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import ssl
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from retrystorm.chaos.backends.base import BackendError
from retrystorm.chaos.kubernetes.pods import LabelSelector, Pod, PodListError, parse_pod_list

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TIMEOUT_S = 10.0
#: The largest PodList read (a node runs at most a few hundred pods, each a few KiB).
MAX_ANSWER_BYTES = 32 * 1024 * 1024


@dataclasses.dataclass(frozen=True, slots=True)
class KubeApi:
    """An API server at ``base_url``, called with ``token``; ``ca_file`` checks its certificate (https)."""

    base_url: str
    token: str = dataclasses.field(default="", repr=False)
    ca_file: Path | None = None

    @classmethod
    def in_cluster(cls, root: Path = SERVICE_ACCOUNT) -> KubeApi:
        """The API as a pod reaches it; :class:`BackendError` outside a pod (no service account, no address)."""
        host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT")
        if not host or not port:
            raise BackendError("not in a Kubernetes pod: KUBERNETES_SERVICE_HOST and _PORT are not set")
        try:
            token = (root / "token").read_text().strip()
        except OSError as error:
            raise BackendError(f"no service account token at {root / 'token'}: {error.strerror}") from None
        host = f"[{host}]" if ":" in host else host
        return cls(f"https://{host}:{port}", token, root / "ca.crt")

    def pods(self, selector: LabelSelector, node: str) -> list[Pod]:
        """The pods on ``node`` whose labels match ``selector``, as the API lists them."""
        query = urllib.parse.urlencode({"labelSelector": selector.text(), "fieldSelector": f"spec.nodeName={node}"})
        url = f"{self.base_url.rstrip('/')}/api/v1/pods?{query}"
        request = urllib.request.Request(url, headers={"Accept": "application/json"})  # noqa: S310 - http(s) only
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        context = ssl.create_default_context(cafile=str(self.ca_file)) if self.ca_file is not None else None
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S, context=context) as answer:  # noqa: S310
                body = answer.read(MAX_ANSWER_BYTES + 1)
        except urllib.error.HTTPError as error:
            raise BackendError(f"the Kubernetes API answered {error.code} to the pod list ({_reason(error)})") from None
        except (OSError, ssl.SSLError) as error:
            raise BackendError(f"cannot reach the Kubernetes API at {self.base_url}: {error}") from None
        if len(body) > MAX_ANSWER_BYTES:
            raise BackendError(f"the Kubernetes API's pod list is larger than {MAX_ANSWER_BYTES:,} bytes")
        try:
            return parse_pod_list(json.loads(body))
        except (ValueError, PodListError) as error:
            raise BackendError(f"the Kubernetes API's pod list cannot be read: {error}") from None


def _reason(error: urllib.error.HTTPError) -> str:
    """The ``message`` of the API's ``Status`` answer, or the HTTP reason."""
    try:
        message = json.loads(error.read(64 * 1024)).get("message")
    except (ValueError, AttributeError, OSError):
        message = None
    return str(message or error.reason)[:200]
