"""``retrystorm k8s render``: the manifests validate offline against Kubernetes 1.30 to 1.37's schemas, carry the
scenario's load, and bad input is one line and exit 2."""

from __future__ import annotations

import copy
import json

import kubernetes_validate
import pytest
import yaml

from retrystorm.experiment.scenario import load_scenario, shipped_scenario
from retrystorm.integrations.kubernetes.objects import dns_name
from retrystorm.integrations.kubernetes.render import DEFAULT_POD_SELECTOR, RenderOptions, render
from tests.support.cli import run_cli

VERSIONS = [f"1.{minor}.0" for minor in range(30, 38)]
#: Objects of custom resources: the Locust operator's and the Prometheus Operator's, not in Kubernetes' schemas.
CUSTOM = {("locust.io/v2", "LocustTest"), ("monitoring.coreos.com/v1", "ServiceMonitor")}

OWN_SERVICE = """\
name: own
target:
  url: http://shop.prod.svc:8080
load: {users: 20, duration: 30s, think_time: exponential:1s}
strategies: [fixed:100ms, "exponential:base=100ms,factor=2,max=10s,jitter=full"]
"""


def _everything(scenario_name: str = "smira-laptop") -> list[dict]:
    scenario = load_scenario(shipped_scenario(scenario_name))
    options = RenderOptions(locust_operator=True, service_monitor=True, pod_selector=DEFAULT_POD_SELECTOR)
    files = render(scenario, options)
    return [item for objects in files.values() for item in objects]


@pytest.mark.parametrize("version", VERSIONS)
def test_every_built_in_object_validates_strictly(version):
    objects = _everything()
    kinds = {(item["apiVersion"], item["kind"]) for item in objects}
    assert {("apps/v1", "Deployment"), ("v1", "Service"), ("v1", "ConfigMap"), ("v1", "Namespace")} <= kinds
    assert {("apps/v1", "DaemonSet"), ("rbac.authorization.k8s.io/v1", "ClusterRole")} <= kinds
    for item in objects:
        if (item["apiVersion"], item["kind"]) in CUSTOM:
            with pytest.raises(kubernetes_validate.SchemaNotFoundError):  # a custom resource: no built-in schema
                kubernetes_validate.validate(item, version, strict=True)
            continue
        kubernetes_validate.validate(item, version, strict=True)


def test_strict_validation_would_catch_a_misplaced_field():
    deployment = next(item for item in _everything() if item["kind"] == "Deployment")
    broken = copy.deepcopy(deployment)
    broken["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = broken["spec"]["template"]["spec"][
        "containers"][0].pop("readinessProbe")  # fmt: skip
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, "1.37.0", strict=True)


def test_the_master_starts_with_the_scenarios_load_and_strategy():
    scenario = load_scenario(shipped_scenario("smira-laptop"))
    files = render(scenario, RenderOptions(strategy="smira", workers=3, namespace="storm"))
    master, service, workers = files["locust.yaml"]
    command = master["spec"]["template"]["spec"]["containers"][0]["command"]
    assert "--master" in command
    assert f"--users={scenario.load.users}" in command
    assert "--think-time=exponential:3s" in command
    assert any(flag.startswith("--retry-strategy=smira:") for flag in command)
    assert "--host=http://retrystorm-target.storm.svc:8070" in command
    assert workers["spec"]["replicas"] == 3
    worker_command = workers["spec"]["template"]["spec"]["containers"][0]["command"]
    assert "--master-host=locust-master.storm.svc" in worker_command
    assert service["spec"]["selector"] == master["spec"]["selector"]["matchLabels"]
    assert all(item["metadata"]["namespace"] == "storm" for item in files["locust.yaml"])


def test_the_built_in_target_runs_the_scenarios_model_and_is_open_to_chaos():
    scenario = load_scenario(shipped_scenario("smira-laptop"))
    deployment, _ = render(scenario, RenderOptions())["target.yaml"]
    pod = deployment["spec"]["template"]
    assert pod["metadata"]["labels"]["retrystorm.io/chaos"] == "allow"
    container = pod["spec"]["containers"][0]
    assert container["command"][container["command"].index("--model") + 1] == scenario.model.spec()
    assert "livenessProbe" not in container  # a liveness probe would restart a frozen target
    assert "tcpSocket" in container["readinessProbe"]  # passes while the kernel accepts for a frozen process
    assert pod["metadata"]["annotations"]["prometheus.io/port"] == "8070"


def test_one_locust_test_per_strategy_headless_with_its_options():
    scenario = load_scenario(shipped_scenario("smira-laptop"))
    tests = render(scenario, RenderOptions(locust_operator=True))["locusttests.yaml"]
    assert [test["metadata"]["name"] for test in tests] == [
        dns_name(label, prefix="retrystorm-") for label in scenario.labels()
    ]
    for test, label in zip(tests, scenario.labels(), strict=True):
        assert test["spec"]["master"]["autostart"] is True
        assert f"--retry-strategy={label}" in test["spec"]["master"]["command"].split() or label == "smira"


def test_the_dashboards_ship_as_a_configmap_and_no_token_is_written(tmp_path):
    scenario = load_scenario(shipped_scenario("smira-laptop"))
    files = render(scenario, RenderOptions())
    configmap = files["monitoring.yaml"][0]
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(configmap["data"]["retrystorm.json"])["uid"] == "retrystorm"
    secrets = [ref for item in files["locust.yaml"] + files["target.yaml"]
               for container in item.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])
               for ref in container.get("env", [])]  # fmt: skip
    assert secrets and all("value" not in env and "secretKeyRef" in env["valueFrom"] for env in secrets)


def test_a_scenario_of_its_own_service_sends_to_its_url_and_renders_no_target(tmp_path):
    path = tmp_path / "own.yaml"
    path.write_text(OWN_SERVICE)
    files = render(load_scenario(path), RenderOptions())
    assert "target.yaml" not in files
    command = files["locust.yaml"][0]["spec"]["template"]["spec"]["containers"][0]["command"]
    assert "--host=http://shop.prod.svc:8080" in command


def test_dns_names_are_valid_and_distinct():
    names = {dns_name(label) for label in ("fixed:100ms", "fixed-100ms", "Fixed 100ms", "x" * 80)}
    assert len(names) == 4
    for name in names:
        assert len(name) <= 63
        assert name == dns_name(name)


def test_the_command_writes_a_yaml_stream_and_the_same_bytes_twice():
    first = run_cli("k8s", "render", "smira-laptop", "--locust-operator")
    second = run_cli("k8s", "render", "smira-laptop", "--locust-operator")
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    kinds = [item["kind"] for item in yaml.safe_load_all(first.stdout)]
    assert kinds.count("Deployment") == 3
    assert kinds.count("LocustTest") == 2


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--strategy", "fixd:100ms"], "--strategy 'fixd:100ms': no such strategy"),
        (["--namespace", "Bad_Name"], "--namespace 'Bad_Name': expected a DNS label"),
        (["--workers", "0"], "--workers 0: expected 1 to 1000"),
        (["--image", ""], "--image '': expected an image reference"),
        (["--target-url", "http://127.0.0.1:8080"], "is loopback, which inside a pod is the pod itself"),
        (["--target-url", "ftp://shop"], "expected http(s)://HOST[:PORT]"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, expected):
    result = run_cli("k8s", "render", "smira-laptop", *args)
    assert result.returncode == 2, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert expected in lines[0]
    assert result.stdout == ""


def test_a_loopback_target_url_in_the_scenario_is_refused(tmp_path):
    path = tmp_path / "own.yaml"
    path.write_text(OWN_SERVICE.replace("http://shop.prod.svc:8080", "http://127.0.0.1:8080"))
    result = run_cli("k8s", "render", str(path))
    assert result.returncode == 2
    assert "--target-url" in result.stderr.strip()


def test_the_chaos_agent_runs_on_every_node_with_the_least_it_needs():
    scenario = load_scenario(shipped_scenario("smira-laptop"))
    files = render(scenario, RenderOptions(pod_selector="app = web, tier!=db"))
    account, role, binding, daemonset = files["chaos-agent.yaml"]
    assert role["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]
    assert binding["subjects"][0]["name"] == account["metadata"]["name"] == daemonset["spec"]["template"]["spec"][
        "serviceAccountName"]  # fmt: skip
    pod = daemonset["spec"]["template"]["spec"]
    assert pod["hostPID"] is True and pod["hostNetwork"] is True
    (container,) = pod["containers"]
    security = container["securityContext"]
    assert security["privileged"] is False and security["capabilities"] == {"drop": ["ALL"]}
    assert security["allowPrivilegeEscalation"] is False and security["readOnlyRootFilesystem"] is True
    command = container["command"]
    assert command[command.index("--pod-selector") + 1] == "app=web,tier!=db"
    assert command[command.index("--host") + 1] == "$(NODE_IP)"  # the node's address, with the token beyond loopback
    env = {item["name"]: item["valueFrom"] for item in container["env"]}
    assert env["RETRYSTORM_CHAOS_TOKEN"] == {"secretKeyRef": {"name": "retrystorm-tokens", "key": "chaos-token"}}
    assert env["NODE_NAME"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    mounts = {mount["mountPath"] for mount in container["volumeMounts"]}
    assert "/sys/fs/cgroup" in mounts
    assert "chaos-agent.yaml" not in render(scenario, RenderOptions())


def test_a_bad_pod_selector_for_the_agent_is_one_line_and_exit_2():
    result = run_cli("k8s", "render", "smira-laptop", "--chaos-agent", "--pod-selector", "tier!=db")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        (
            "retrystorm: error: --pod-selector: pod selector 'tier!=db': needs a key=value term (a != term alone opens "
            "every pod)"
        )
    ]
