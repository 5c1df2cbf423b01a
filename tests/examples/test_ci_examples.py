"""The CI examples (examples/ci/) are valid workflow files, do what docs/guides/ci.md says, and are what it shows.

The GitHub Actions workflow and the GitLab CI job are checked against SchemaStore's schemas as vendored by
check-jsonschema (offline; actionlint is in no registry this project installs from as a binary), then for what makes
them a gate: the run writes JUnit, its step may not continue on error, and the upload runs whatever the outcome.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
GITHUB = ROOT / "examples" / "ci" / "github-actions.yml"
GITLAB = ROOT / "examples" / "ci" / "gitlab-ci.yml"
GUIDE = ROOT / "docs" / "guides" / "ci.md"
CHECKER = str(Path(sys.executable).with_name("check-jsonschema"))


@pytest.mark.live  # check-jsonschema
@pytest.mark.parametrize(("path", "schema"), [(GITHUB, "vendor.github-workflows"), (GITLAB, "vendor.gitlab-ci")])
def test_the_examples_satisfy_their_ci_systems_schema(path, schema, tmp_path):
    done = subprocess.run([CHECKER, "--builtin-schema", schema, path], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    broken = tmp_path / path.name
    broken.write_text(path.read_text().replace("script:", "scripts:").replace("runs-on:", "runs_on:"))
    assert subprocess.run([CHECKER, "--builtin-schema", schema, broken], capture_output=True, check=False).returncode


def test_the_github_workflow_gates_on_the_exit_status_and_always_uploads():
    steps = yaml.safe_load(GITHUB.read_text())["jobs"]["retrystorm"]["steps"]
    (run,) = [step for step in steps if "retrystorm run" in step.get("run", "")]
    assert "--junit" in run["run"] and "--out retrystorm-run" in run["run"]
    assert not run.get("continue-on-error") and "||" not in run["run"]
    (upload,) = [step for step in steps if step.get("uses", "").startswith("actions/upload-artifact@")]
    assert upload["if"] == "always()"
    assert {"retrystorm-run/", "retrystorm-junit.xml"} <= set(upload["with"]["path"].split())


def test_the_gitlab_job_reports_junit_and_keeps_the_run_folder_always():
    job = yaml.safe_load(GITLAB.read_text())["retrystorm"]
    assert any("--junit retrystorm-junit.xml" in line for line in job["script"])
    assert not job.get("allow_failure")
    assert job["artifacts"]["when"] == "always"
    assert job["artifacts"]["reports"]["junit"] == "retrystorm-junit.xml"
    assert "retrystorm-run/" in job["artifacts"]["paths"]


def test_the_guide_shows_the_examples_as_they_are():
    blocks = re.findall(r"```yaml\n(.*?)```", GUIDE.read_text(), flags=re.DOTALL)
    assert GITHUB.read_text() in blocks
    assert GITLAB.read_text() in blocks
