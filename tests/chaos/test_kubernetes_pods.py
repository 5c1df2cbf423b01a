"""The agent's Kubernetes mode without cgroups: the pod selector, a ``PodList`` read, and the API call against a
local server answering with recorded-shape responses (there is no cluster here)."""

from __future__ import annotations

import pytest

from retrystorm.chaos.backends.base import BackendError
from retrystorm.chaos.kubernetes.api import KubeApi
from retrystorm.chaos.kubernetes.pods import Container, LabelSelector, PodListError, parse_pod_list
from tests.support.cli import run_cli

from .kube_api import pod_list, serving

SELECTOR = LabelSelector.parse("retrystorm.io/chaos=allow,app=web")


def test_the_pod_list_gives_each_pods_uid_qos_node_and_running_containers():
    pods = {pod.key: pod for pod in parse_pod_list(pod_list())}
    web = pods["shop/web-0"]
    assert (web.uid, web.qos, web.node) == ("5e1f9a00-77aa-4b8e-9c2d-3f4a5b6c7d8e", "burstable", "node-a")
    assert web.containers == (Container("sidecar", "containerd", "1f" * 32), Container("web", "containerd", "cd" * 32))
    assert pods["shop/web-1"].containers == (Container("web", "cri-o", "e4" * 32),)
    assert pods["shop/web-1"].qos == "guaranteed"
    assert pods["shop/web-3"].containers == ()  # waiting, no container ID: nothing to freeze


@pytest.mark.parametrize(
    "answer",
    [
        {"kind": "Status", "items": []},
        {"kind": "PodList", "items": [{"metadata": {}, "spec": {}, "status": {"qosClass": "Platinum"}}]},
        {
            "kind": "PodList",
            "items": [{"metadata": {"labels": ["app"]}, "spec": {}, "status": {"qosClass": "Burstable"}}],
        },
        {
            "kind": "PodList",
            "items": [
                {
                    "metadata": {},
                    "spec": {},
                    "status": {
                        "qosClass": "Burstable",
                        "containerStatuses": [{"name": "x", "containerID": "rkt://1", "state": {"running": {}}}],
                    },
                }
            ],
        },
    ],
)
def test_an_answer_that_is_not_a_pod_list_it_can_read_is_an_error(answer):
    with pytest.raises(PodListError):
        parse_pod_list(answer)


def test_the_selector_matches_equality_terms_and_writes_them_back():
    selector = LabelSelector.parse("app == web, tier!=db")
    assert selector.text() == "app=web,tier!=db"
    assert selector.matches({"app": "web"})
    assert not selector.matches({"app": "web", "tier": "db"})
    assert not selector.matches({"app": "db"})


@pytest.mark.parametrize(
    "text", ["", "app", "app in (web)", "tier!=db", "a=b=c", "app=web,", "Bad Key=x", "k=" + "v" * 64]
)
def test_a_selector_that_is_not_equality_terms_with_one_equal_is_refused(text):
    with pytest.raises(ValueError, match="pod selector"):
        LabelSelector.parse(text)


def test_the_api_is_asked_for_this_nodes_pods_by_the_selector_with_the_token():
    with serving(pod_list()) as (base, seen):
        pods = KubeApi(base, token="sa-token").pods(SELECTOR, "node-a")
    assert [pod.key for pod in pods] == ["shop/db-0", "shop/web-0", "shop/web-1", "shop/web-2", "shop/web-3"]
    (request,) = seen
    assert request["path"] == "/api/v1/pods"
    assert request["query"] == {"labelSelector": ["retrystorm.io/chaos=allow,app=web"],
                                "fieldSelector": ["spec.nodeName=node-a"]}  # fmt: skip
    assert request["authorization"] == "Bearer sa-token"


def test_a_refusal_of_the_api_is_one_line_with_its_message():
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden", "code": 403,
              "message": 'pods is forbidden: User "system:serviceaccount:retrystorm:default" cannot list resource '
              '"pods" in API group "" at the cluster scope'}  # fmt: skip
    with serving(status, 403) as (base, _), pytest.raises(BackendError, match=r"answered 403.*cannot list"):
        KubeApi(base).pods(SELECTOR, "node-a")


def test_outside_a_pod_there_is_no_in_cluster_api(monkeypatch, tmp_path):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(BackendError, match="not in a Kubernetes pod"):
        KubeApi.in_cluster(tmp_path)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    with pytest.raises(BackendError, match="no service account token"):
        KubeApi.in_cluster(tmp_path)
    (tmp_path / "token").write_text("abc\n")
    api = KubeApi.in_cluster(tmp_path)
    assert (api.base_url, api.token, api.ca_file) == ("https://10.96.0.1:443", "abc", tmp_path / "ca.crt")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--backend", "kubernetes", "--node", "node-a"], "--backend kubernetes needs --pod-selector"),
        (["--backend", "kubernetes", "--pod-selector", "app=web"], "needs --node (or NODE_NAME)"),
        (["--backend", "kubernetes", "--pod-selector", "tier!=db", "--node", "n"], "needs a key=value term"),
        (["--backend", "kubernetes", "--pod-selector", "app in (web)", "--node", "n"], "expected key=value"),
        (
            ["--backend", "kubernetes", "--pod-selector", "app=web", "--node", "n", "--cgroup-root", "k8s"],
            "--cgroup-root 'k8s'",
        ),
        (
            ["--backend", "kubernetes", "--pod-selector", "app=web", "--node", "n", "--kube-api", "ftp://x"],
            "--kube-api 'ftp://x'",
        ),
        (["--pod-selector", "app=web"], "--pod-selector needs --backend kubernetes"),
    ],
)
def test_serve_refuses_bad_kubernetes_settings_in_one_line(args, message, monkeypatch, tmp_path):
    monkeypatch.delenv("NODE_NAME", raising=False)
    result = run_cli("chaos", "serve", "--port", "0", "--journal", tmp_path / "j.jsonl", *args)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert message in lines[0]


def test_serve_that_cannot_list_pods_says_so_in_one_line_before_it_listens(tmp_path):
    status = {"kind": "Status", "code": 401, "message": "Unauthorized"}
    with serving(status, 401) as (base, seen):
        result = run_cli("chaos", "serve", "--port", "0", "--journal", tmp_path / "j.jsonl", "--backend",
                         "kubernetes", "--pod-selector", "app=web", "--node", "node-a", "--kube-api", base)  # fmt: skip
    assert result.returncode == 3, result.stderr
    assert "answered 401 to the pod list (Unauthorized)" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "chaos API on" not in result.stdout
    assert seen
