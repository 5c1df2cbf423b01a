"""The compose files, as Compose resolves them: what `docker compose up` will do, checked without an engine."""

from __future__ import annotations

import re

import pytest
import yaml

from .compose import BASE_FILE, DEFAULT_ADMIN_TOKEN, LOOPBACK_FILE, LOOPBACK_PORTS, PROMETHEUS_DIR, ROOT, resolved

SERVICES = {"target", "locust-master", "locust-worker", "chaos", "prometheus", "grafana"}
PROJECT_SERVICES = {"target", "locust-master", "locust-worker", "chaos"}


@pytest.fixture(scope="module")
def base():
    return resolved(BASE_FILE)


@pytest.fixture(scope="module")
def loopback():
    return resolved(BASE_FILE, LOOPBACK_FILE)


def test_no_obsolete_version_key_and_every_service_present():
    raw = yaml.safe_load(BASE_FILE.read_text())
    assert "version" not in raw
    assert set(raw["services"]) == SERVICES


@pytest.mark.live
def test_every_service_has_a_health_check_and_starts_after_healthy_dependencies(base):
    for name, service in base["services"].items():
        assert service.get("healthcheck", {}).get("test"), f"{name} has no health check"
        for dependency, how in (service.get("depends_on") or {}).items():
            assert how["condition"] == "service_healthy", f"{name} -> {dependency}: {how}"
    order = {name: set(service.get("depends_on") or {}) for name, service in base["services"].items()}
    assert order["locust-worker"] == {"locust-master"}
    assert {"target", "chaos"} <= order["locust-master"]
    assert order["grafana"] == {"prometheus"}


@pytest.mark.live  # Compose resolves the files
def test_published_ports_are_bound_to_loopback_only(base):
    published = [(name, port) for name, service in base["services"].items() for port in service.get("ports") or []]
    assert {name for name, _ in published} == SERVICES - {"locust-worker"}
    for name, port in published:
        assert port["host_ip"] == "127.0.0.1", f"{name} publishes {port}"


@pytest.mark.live  # Compose resolves the files
def test_one_image_for_the_python_services_with_its_base_as_a_build_argument(base):
    builds = {name: base["services"][name]["build"] for name in PROJECT_SERVICES}
    assert {build["dockerfile"] for build in builds.values()} == {"Dockerfile"}
    assert {base["services"][name]["image"] for name in PROJECT_SERVICES} == {"retrystorm:latest"}
    assert all(build["args"]["PYTHON_IMAGE"] == "python:3.12-slim" for build in builds.values())
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.12-slim\nFROM \$\{PYTHON_IMAGE\}$", dockerfile, re.MULTILINE)


@pytest.mark.live  # Compose resolves the files
def test_only_the_target_is_open_to_chaos_and_the_chaos_service_has_the_socket(base):
    open_to_chaos = {name for name, s in base["services"].items() if (s.get("labels") or {}).get("retrystorm.chaos")}
    assert open_to_chaos == {"target"}
    chaos = base["services"]["chaos"]
    assert any(v["target"] == "/var/run/docker.sock" for v in chaos["volumes"])
    assert chaos["environment"]["COMPOSE_PROJECT_NAME"] == "retrystorm"  # the docker backend's project scope
    assert chaos["restart"] == "unless-stopped"  # a killed chaos service comes back and resumes what it paused


@pytest.mark.live  # Compose resolves the files
def test_prometheus_keeps_a_working_day_and_grafana_is_provisioned(base):
    prometheus = " ".join(base["services"]["prometheus"]["command"])
    retention = re.search(r"--storage\.tsdb\.retention\.time=(\d+)([hd])", prometheus)
    assert retention is not None
    assert int(retention.group(1)) * (24 if retention.group(2) == "d" else 1) >= 24
    grafana = base["services"]["grafana"]
    assert grafana["environment"]["GF_AUTH_ANONYMOUS_ENABLED"] == "true"
    assert grafana["environment"]["GF_AUTH_ANONYMOUS_ORG_ROLE"] == "Viewer"
    for volume in [*grafana["volumes"], *base["services"]["prometheus"]["volumes"]]:
        if volume["type"] == "bind":
            assert (ROOT / volume["source"]).exists(), f"{volume['source']} is mounted but missing"


@pytest.mark.live
def test_the_loopback_override_uses_host_networking_and_loopback_addresses_only(loopback):
    services = loopback["services"]
    assert "grafana" not in services  # behind a profile: no offline image of it
    for name, service in services.items():
        assert service["network_mode"] == "host", name
        assert not service.get("ports"), f"{name} publishes ports under host networking"
        words = " ".join(service.get("command") or []) + " " + " ".join((service.get("environment") or {}).values())
        hosts = re.findall(r"https?://([\w.-]+)", words)
        hosts += re.findall(r"--(?:web-|master-bind-|master-)?host[= ](?!https?:)([\w.-]+)", words)
        assert hosts or name == "prometheus", f"{name}: no address found in {words}"
        for host in hosts:
            assert host == "127.0.0.1", f"{name} uses {host}: {words}"
    assert services["target"]["image"] == "retrystorm:local"
    assert services["prometheus"]["image"] == "retrystorm-prometheus:local"


@pytest.mark.live  # Compose resolves the files
def test_the_loopback_ports_agree_across_the_override_and_prometheus(loopback):
    services = loopback["services"]
    commands = {name: " ".join(service.get("command") or []) for name, service in services.items()}
    assert f"--port {LOOPBACK_PORTS['target']}" in commands["target"]
    assert f"--port {LOOPBACK_PORTS['chaos']}" in commands["chaos"]
    assert f"--web-port={LOOPBACK_PORTS['locust-master']}" in commands["locust-master"]
    assert f"--master-port={LOOPBACK_PORTS['locust-master-bind']}" in commands["locust-worker"]
    assert f"127.0.0.1:{LOOPBACK_PORTS['prometheus']}" in commands["prometheus"]
    scraped = yaml.safe_load((PROMETHEUS_DIR / "prometheus-loopback.yml").read_text())
    targets = {
        job["job_name"]: [t for group in job["static_configs"] for t in group["targets"]]
        for job in scraped["scrape_configs"]
    }
    assert targets["target"] == [f"127.0.0.1:{LOOPBACK_PORTS['target']}"]
    assert targets["locust"] == [f"127.0.0.1:{LOOPBACK_PORTS['locust-master']}"]
    assert targets["chaos"] == [f"127.0.0.1:{LOOPBACK_PORTS['chaos']}"]


def test_the_stack_prometheus_scrapes_every_second_by_service_name():
    scraped = yaml.safe_load((PROMETHEUS_DIR / "prometheus.yml").read_text())
    assert scraped["global"]["scrape_interval"] == "1s"
    targets = {
        job["job_name"]: [t for group in job["static_configs"] for t in group["targets"]]
        for job in scraped["scrape_configs"]
    }
    assert targets == {"target": ["target:8070"], "locust": ["locust-master:8089"], "chaos": ["chaos:8071"]}


@pytest.mark.live  # Compose resolves the files
@pytest.mark.parametrize("files", ["base", "loopback"])
def test_the_target_has_an_admin_token_and_the_runner_in_the_chaos_service_sends_the_same(files, request):
    """The target listens on 0.0.0.0 in the stack: it needs a token, and `retrystorm run --backend compose`
    (run in the chaos service's container) must send it to reset the target."""
    services = request.getfixturevalue(files)["services"]
    target_token = services["target"]["environment"]["RETRYSTORM_ADMIN_TOKEN"]
    assert target_token == DEFAULT_ADMIN_TOKEN  # the documented default (resolved() clears RETRYSTORM_*)
    assert services["chaos"]["environment"]["RETRYSTORM_ADMIN_TOKEN"] == target_token
    assert "--admin-token" not in " ".join(services["target"]["command"])  # not in `docker inspect`'s command line
