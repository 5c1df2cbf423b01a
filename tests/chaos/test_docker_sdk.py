"""The Docker SDK is the optional extra ``docker``: without it, what needs it says what to install (exit 2).

The commands run in a real Python process in which ``import docker`` fails, as it does
where the extra is not installed; everything else about them is real.
"""

import os
import subprocess
import sys

import pytest

from retrystorm.chaos.backends.docker_sdk import DockerSdkMissingError, docker_sdk_installed, require_docker_sdk

HINT = "pip install 'retrystorm[docker]'"

#: ``retrystorm ARGS...`` in a process where the Docker SDK cannot be imported.
WITHOUT_DOCKER = "import sys; sys.modules['docker'] = None; from retrystorm.cli import main; main(sys.argv[1:])"


def retrystorm_without_docker(*args, cwd, journal):
    env = {**os.environ, "RETRYSTORM_CHAOS_JOURNAL": str(journal), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_DOCKER, *map(str, args)],
        capture_output=True, text=True, cwd=cwd, env=env, timeout=120, check=False,
    )  # fmt: skip


@pytest.mark.live
@pytest.mark.parametrize(
    ("args", "what"),
    [
        (["chaos", "serve", "--backend", "docker", "--port", "0"], "--backend docker needs the Docker SDK"),
        (["chaos", "pause", "api", "--for", "1s", "--backend", "docker"], "--backend docker needs the Docker SDK"),
        (["chaos", "recover", "--backend", "process", "--backend", "docker"], "--backend docker needs"),
        (
            ["run", "smira-laptop", "--backend", "compose", "--dry-run"],
            "--backend compose without --chaos-url (the docker backend) needs the Docker SDK",
        ),
    ],
)
def test_without_the_sdk_the_docker_backend_is_one_line_and_exit_2(tmp_path, args, what):
    done = retrystorm_without_docker(*args, cwd=tmp_path, journal=tmp_path / "journal.jsonl")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1, done.stderr
    assert what in lines[0] and lines[0].endswith(HINT)
    assert not (tmp_path / "journal.jsonl").exists()


@pytest.mark.live
def test_without_the_sdk_what_does_not_pause_containers_still_works(tmp_path):
    through_api = ["--backend", "compose", "--chaos-url", "http://127.0.0.1:9", "--dry-run"]
    done = retrystorm_without_docker("run", "smira-laptop", *through_api, cwd=tmp_path, journal=tmp_path / "j.jsonl")
    assert done.returncode == 0, done.stderr
    assert "through the chaos API at http://127.0.0.1:9" in done.stdout
    local = retrystorm_without_docker("run", "smira-laptop", "--dry-run", cwd=tmp_path, journal=tmp_path / "j.jsonl")
    assert local.returncode == 0, local.stderr


def test_the_check_reads_what_is_installed(monkeypatch):
    assert docker_sdk_installed(), "the test extra installs the Docker SDK"
    require_docker_sdk()
    monkeypatch.setitem(sys.modules, "docker", None)
    assert not docker_sdk_installed()
    with pytest.raises(DockerSdkMissingError, match=r"^the docker backend needs the Docker SDK .*\[docker\]'$"):
        require_docker_sdk()
    monkeypatch.delitem(sys.modules, "retrystorm.chaos.backends.docker", raising=False)
    with pytest.raises(DockerSdkMissingError):
        import retrystorm.chaos.backends.docker  # noqa: F401
