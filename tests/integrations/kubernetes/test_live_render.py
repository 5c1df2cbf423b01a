"""``retrystorm k8s render`` as a user runs it: the same bytes from two interpreters with different hash seeds, and
``kubectl kustomize`` renders the folder it writes into the same objects."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import yaml

pytestmark = pytest.mark.live

RENDER = [sys.executable, "-m", "retrystorm", "k8s", "render", "smira-laptop", "--locust-operator",
          "--service-monitor", "--chaos-agent"]  # fmt: skip


def _render(*extra: str, hash_seed: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    return subprocess.run([*RENDER, *extra], capture_output=True, text=True, timeout=120, env=env, check=False)


def test_two_interpreters_write_the_same_bytes():
    first, second = _render(hash_seed="1"), _render(hash_seed="2")
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    assert first.stdout.count("\n---\n") >= 8


def test_kubectl_kustomize_renders_the_folder(tmp_path):
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    written = _render("--out", str(tmp_path / "k8s"), hash_seed="0")
    assert written.returncode == 0, written.stderr
    assert (tmp_path / "k8s" / "kustomization.yaml").is_file()
    built = subprocess.run([kubectl, "kustomize", str(tmp_path / "k8s")], capture_output=True, text=True,
                           timeout=120, check=False)  # fmt: skip
    assert built.returncode == 0, built.stderr
    streamed = _render(hash_seed="0")

    def names(text: str) -> set[tuple[str, str]]:
        return {(item["kind"], item["metadata"]["name"]) for item in yaml.safe_load_all(text) if item}

    assert names(built.stdout) == names(streamed.stdout)
