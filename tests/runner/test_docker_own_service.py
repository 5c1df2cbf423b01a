"""A scenario's own service as a container on the local backend: the opt-in label is required (real Docker)."""

from __future__ import annotations

import csv
import json
import os
import socket
import subprocess
import sys
import uuid

import pytest

from retrystorm.chaos.journal import Journal

pytestmark = [pytest.mark.docker, pytest.mark.live]

IMAGE = "retrystorm-gunicorn-example:local"


def docker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture
def unlabelled_container():
    """A container of the example's image, without the label, doing nothing; removed by its id afterwards."""
    try:
        ready = docker("image", "inspect", IMAGE).returncode == 0
    except OSError:
        ready = False
    if not ready:
        if os.environ.get("RETRYSTORM_REQUIRE_DOCKER") == "1":
            pytest.fail(f"Docker or {IMAGE} missing: run scripts/offline-images")
        pytest.skip(f"no Docker engine or no {IMAGE} (scripts/offline-images builds it)")
    name = f"rstest-nolabel-{uuid.uuid4().hex[:8]}"
    started = docker("run", "-d", "--network", "none", "--name", name, IMAGE, "sleep", "120")
    assert started.returncode == 0, started.stderr
    try:
        yield name
    finally:
        docker("rm", "-f", started.stdout.strip())


def test_a_container_without_the_opt_in_label_is_refused_before_any_load(unlabelled_container, tmp_path):
    scenario = tmp_path / "container.yaml"
    scenario.write_text(
        f"target: {{url: http://127.0.0.1:9, container: {unlabelled_container}}}\n"
        "load: {users: 1, duration: 10s}\nstrategies: [fixed:100ms]\nfaults: [{at: 5s, for: 2s}]\n"
    )
    env = {**os.environ, "RETRYSTORM_CHAOS_JOURNAL": str(tmp_path / "j.jsonl")}
    done = subprocess.run(
        [sys.executable, "-m", "retrystorm", "run", str(scenario), "--out", str(tmp_path / "run")],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert f"refusing to pause {unlabelled_container}" in last and "retrystorm.chaos=allow" in last
    assert not (tmp_path / "run" / "logs" / "fixed-100ms-locust.log").exists()
    assert docker("inspect", "-f", "{{.State.Status}}", unlabelled_container).stdout.strip() == "running"


def test_a_labelled_container_is_paused_and_resumed_through_the_docker_backend(tmp_path):
    try:
        present = docker("image", "inspect", IMAGE).returncode == 0
    except OSError:
        present = False
    if not present:
        pytest.skip(f"no Docker engine or no {IMAGE}")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    name = f"rstest-labelled-{uuid.uuid4().hex[:8]}"
    started = docker(
        "run", "-d", "--network", "host", "--label", "retrystorm.chaos=allow", "--name", name, IMAGE,
        "gunicorn", "-w", "2", "-b", f"127.0.0.1:{port}", "app:app",
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    try:
        scenario = tmp_path / "container.yaml"
        scenario.write_text(
            f"target: {{url: http://127.0.0.1:{port}, container: {name}, ready: /healthz}}\n"
            "load: {users: 5, think_time: exponential:500ms, attempt_timeout: 1s, duration: 14s}\n"
            "strategies: [fixed:100ms]\nfaults: [{at: 6s, for: 3s}]\n"
        )
        journal = tmp_path / "j.jsonl"
        done = subprocess.run(
            [sys.executable, "-m", "retrystorm", "run", str(scenario), "--allow-saturated",
             "--out", str(tmp_path / "run")],
            capture_output=True, text=True, timeout=180, check=False,
            env={**os.environ, "RETRYSTORM_CHAOS_JOURNAL": str(journal)},
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert not Journal(journal).pending()
        document = json.loads((tmp_path / "run" / "results.json").read_text())
        [row] = document["results"]
        start, end = row["outages"][0]
        assert end - start >= 2.5
        with (tmp_path / "run" / "timeseries.csv").open() as table:
            frozen = [r for r in csv.DictReader(table) if start + 1 < float(r["t_s"]) <= end]
        # Nothing answered while it was paused. Counters are interpolated between readings taken at slightly uneven
        # times (retrystorm/runner/series.py), so an answer just after the resume can leak a fraction of itself into
        # the last frozen second (0.0017 was seen): the frozen seconds together hold less than one answer.
        assert frozen and sum(float(r["goodput"]) for r in frozen) < 1, frozen
        assert docker("inspect", "-f", "{{.State.Status}}", name).stdout.strip() == "running"
    finally:
        docker("rm", "-f", started.stdout.strip())


def test_a_slow_of_a_labelled_container_cuts_its_own_cpus_and_writes_them_back(tmp_path):
    """The container had --cpus 1.5: a slow to 0.4 runs it at 0.6 CPU, and it gets 1.5 back exactly."""
    base = "retrystorm-base:bookworm"
    try:
        present = docker("image", "inspect", base).returncode == 0
    except OSError:
        present = False
    if not present:
        pytest.skip(f"no Docker engine or no {base}")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    name = f"rstest-slow-{uuid.uuid4().hex[:8]}"
    started = docker(
        "run", "-d", "--network", "host", "--cpus", "1.5", "--label", "retrystorm.chaos=allow", "--name", name,
        base, "python3", "-m", "http.server", "--bind", "127.0.0.1", str(port),
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    runner = None
    try:
        scenario = tmp_path / "container.yaml"
        scenario.write_text(
            f"target: {{url: http://127.0.0.1:{port}, container: {name}, ready: /}}\n"
            "load: {users: 2, think_time: constant:200ms, attempt_timeout: 2s, duration: 12s}\n"
            "requests: [{method: GET, path: /}]\n"  # http.server serves its folder: / answers 200
            "strategies: [fixed:100ms]\nfaults: [{slow: target, capacity: 0.4, at: 3s, for: 5s}]\n"
        )
        journal = tmp_path / "j.jsonl"
        runner = subprocess.Popen(
            [sys.executable, "-m", "retrystorm", "run", str(scenario), "--out", str(tmp_path / "run")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "RETRYSTORM_CHAOS_JOURNAL": str(journal)},
        )  # fmt: skip
        seen = set()
        while runner.poll() is None:
            seen.add(docker("inspect", "-f", "{{.HostConfig.NanoCpus}}", name).stdout.strip())
        out, err = runner.communicate(timeout=60)
        assert runner.returncode == 0, out + err
        assert str(600_000_000) in seen  # 0.4 of its 1.5 CPUs, through NanoCpus
        assert docker("inspect", "-f", "{{.HostConfig.NanoCpus}}", name).stdout.strip() == str(1_500_000_000)
        assert not Journal(journal).pending_throttles()
        [row] = json.loads((tmp_path / "run" / "results.json").read_text())["results"]
        [slow] = row["triggers"]
        assert (slow["kind"], slow["capacity"]) == ("slow", 0.4)
    finally:
        if runner is not None and runner.poll() is None:
            runner.kill()
            runner.communicate()
        docker("rm", "-f", started.stdout.strip())
