"""Prometheus configs (checked by Debian's promtool) and Grafana provisioning files."""

import os
import shutil
import subprocess

import pytest
import yaml

from retrystorm.dashboards import experiment
from retrystorm.dashboards.files import PROMETHEUS_DIR, PROVISIONING_DIR
from retrystorm.dashboards.queries import iter_panels

COMPOSE_TARGETS = {"target": "target:8070", "locust": "locust-master:8089", "chaos": "chaos:8071"}
LOOPBACK_TARGETS = {"target": "127.0.0.1:18070", "locust": "127.0.0.1:18089", "chaos": "127.0.0.1:18071"}


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        if os.environ.get("RETRYSTORM_REQUIRE_PROMETHEUS") == "1":
            pytest.fail("promtool is missing but RETRYSTORM_REQUIRE_PROMETHEUS=1: apt-get install -y prometheus")
        pytest.skip("promtool is missing (Debian: apt-get install -y prometheus)")
    return found


@pytest.mark.parametrize(
    ("name", "targets"), [("prometheus.yml", COMPOSE_TARGETS), ("prometheus-loopback.yml", LOOPBACK_TARGETS)]
)
def test_prometheus_config_scrapes_every_job_every_second(name, targets):
    config = yaml.safe_load((PROMETHEUS_DIR / name).read_text())
    assert config["global"]["scrape_interval"] == "1s"
    assert config["global"]["evaluation_interval"] == "1s"
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert set(jobs) == set(targets)
    for job, address in targets.items():
        assert jobs[job]["static_configs"] == [{"targets": [address]}]
        assert jobs[job].get("metrics_path", "/metrics") == "/metrics"


@pytest.mark.live  # Prometheus' promtool
@pytest.mark.parametrize("name", ["prometheus.yml", "prometheus-loopback.yml"])
def test_promtool_accepts_the_config(name):
    done = subprocess.run(
        [promtool(), "check", "config", str(PROMETHEUS_DIR / name)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.live  # Prometheus' promtool
def test_promtool_would_catch_a_broken_config(tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text(
        (PROMETHEUS_DIR / "prometheus.yml").read_text().replace("scrape_interval: 1s", "scrape_interval: x")
    )
    done = subprocess.run([promtool(), "check", "config", str(broken)], capture_output=True, text=True, check=False)
    assert done.returncode != 0


def test_datasource_is_the_uid_every_panel_uses():
    provisioning = yaml.safe_load((PROVISIONING_DIR / "datasources" / "prometheus.yaml").read_text())
    (source,) = provisioning["datasources"]
    assert source["uid"] == experiment.DATASOURCE.uid == "prometheus"
    assert source["type"] == "prometheus" and source["url"] == "http://prometheus:9090" and source["isDefault"]
    uids = {panel["datasource"]["uid"] for panel in iter_panels(experiment.dashboard_json())}
    assert uids == {source["uid"]}


def test_dashboard_provider_loads_the_mounted_folder():
    provisioning = yaml.safe_load((PROVISIONING_DIR / "dashboards" / "retrystorm.yaml").read_text())
    (provider,) = provisioning["providers"]
    assert provider["type"] == "file"
    assert provider["options"]["path"] == "/var/lib/grafana/dashboards"
