"""``retrystorm dashboards push`` over plain HTTP, against the recorded-contract stub of Grafana's API."""

import base64
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from retrystorm.cli import main
from retrystorm.dashboards import experiment
from retrystorm.dashboards.files import DASHBOARD_DIR
from retrystorm.dashboards.push import GrafanaRequestError, push_dashboards
from retrystorm.grafana import GrafanaSettings, GrafanaSettingsError
from tests.grafana_stub import PASSWORD, TOKEN, USER, running_stub
from tests.loadgen.conftest import free_port


@pytest.fixture
def grafana():
    with running_stub() as stub:
        yield stub


def run_cli(*args):
    with pytest.raises(SystemExit) as done:
        main(["dashboards", "push", *args])
    return done.value.code


def test_push_with_a_token_creates_the_folder_and_overwrites(grafana, capsys):
    assert run_cli("--grafana-url", grafana.url, "--token", TOKEN, "--folder", "retrystorm") == 0
    (folder,) = grafana.folders
    assert folder["title"] == "retrystorm"
    (saved,) = grafana.received("POST", "/api/dashboards/db")
    assert saved.authorization == f"Bearer {TOKEN}"
    assert saved.body["overwrite"] is True and saved.body["folderUid"] == folder["uid"]
    assert saved.body["dashboard"]["id"] is None
    assert {k: v for k, v in saved.body["dashboard"].items() if k != "id"} == experiment.dashboard_json()
    assert "pushed retrystorm (version 1)" in capsys.readouterr().out

    assert run_cli("--grafana-url", grafana.url, "--token", TOKEN, "--folder", "retrystorm") == 0
    assert len(grafana.folders) == 1, "the folder is found again, not created twice"
    assert grafana.dashboards[experiment.UID]["version"] == 2
    assert "(version 2)" in capsys.readouterr().out


def test_push_with_basic_auth_and_no_folder(grafana):
    settings = GrafanaSettings(url=grafana.url, user=USER, password=PASSWORD)
    (pushed,) = push_dashboards(settings, {"retrystorm": experiment.dashboard_json()})
    assert pushed.uid == "retrystorm" and pushed.url.startswith("/d/retrystorm/")
    (saved,) = grafana.received("POST", "/api/dashboards/db")
    assert saved.authorization == "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    assert "folderUid" not in saved.body
    assert not grafana.received("GET", "/api/folders")


def test_credentials_from_the_environment(grafana, monkeypatch):
    monkeypatch.setenv("GRAFANA_URL", grafana.url)
    monkeypatch.setenv("GRAFANA_TOKEN", TOKEN)
    assert run_cli() == 0
    assert grafana.dashboards[experiment.UID]["version"] == 1


def test_wrong_token_is_one_line_and_exit_2(grafana, capsys):
    assert run_cli("--grafana-url", grafana.url, "--token", "wrong") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "HTTP 401" in err and "Unauthorized" in err
    assert not grafana.dashboards


def test_unreachable_grafana_is_one_line_and_exit_2(capsys):
    assert run_cli("--grafana-url", f"http://127.0.0.1:{free_port()}", "--token", TOKEN) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("retrystorm: error: grafana at http://127.0.0.1:")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--grafana-url", "ftp://grafana", "--token", "t"], "grafana url: got 'ftp://grafana'"),
        (["--grafana-url", "http://127.0.0.1:3000", "--token", "t", "--user", "u", "--password", "p"], "one of them"),
        (["--grafana-url", "http://127.0.0.1:3000", "--user", "u"], "a user needs a password"),
        (["--grafana-url", "http://127.0.0.1:3000", "--folder", " "], "--folder"),
        ([], "--grafana-url"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message, capsys, monkeypatch):
    for name in ("GRAFANA_URL", "GRAFANA_TOKEN", "GRAFANA_USER", "GRAFANA_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    assert run_cli(*args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def test_settings_hide_the_password():
    settings = GrafanaSettings(url="http://admin:secret@127.0.0.1:3000/grafana", user="u", password="secret")
    assert "secret" not in repr(settings) and settings.where() == "http://127.0.0.1:3000/grafana"
    assert GrafanaSettings.from_env({}) is None
    with pytest.raises(GrafanaSettingsError):
        GrafanaSettings.from_env({"GRAFANA_URL": "grafana:3000"})


def test_a_refused_dashboard_names_grafana_and_its_message(grafana):
    with pytest.raises(GrafanaRequestError, match=r"HTTP 400: Dashboard title cannot be empty"):
        push_dashboards(GrafanaSettings(url=grafana.url, token=TOKEN), {"x": {"uid": "x", "title": ""}})


# --- the stub keeps Grafana's contract (so a client passing here would pass there) -----------------


def call(stub, method, path, body=None, *, token=TOKEN, raw=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    request = urllib.request.Request(stub.url + path, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_stub_refuses_what_grafana_refuses(grafana):
    assert call(grafana, "GET", "/api/health", token=None)[0] == 200
    assert call(grafana, "GET", "/api/folders", token=None) == (401, {"message": "Unauthorized"})
    assert call(grafana, "POST", "/api/dashboards/db", raw=b"{not json")[0] == 400
    assert call(grafana, "POST", "/api/dashboards/db", {"overwrite": True})[0] == 400
    board = {"dashboard": {"uid": "u", "title": "t"}}
    assert call(grafana, "POST", "/api/dashboards/db", board)[1]["status"] == "success"
    assert call(grafana, "POST", "/api/dashboards/db", board)[1]["status"] == "version-mismatch"
    assert call(grafana, "POST", "/api/dashboards/db", {**board, "folderUid": "nope", "overwrite": True})[0] == 400
    assert call(grafana, "POST", "/api/folders", {"title": "f"})[0] == 200
    assert call(grafana, "POST", "/api/folders", {"title": "f"})[0] == 409
    assert call(grafana, "POST", "/api/annotations", {"time": 1, "timeEnd": 2, "tags": ["a"]})[0] == 400
    assert call(grafana, "POST", "/api/annotations", {"time": 2.5, "text": "x"})[0] == 400
    assert call(grafana, "POST", "/api/annotations", {"time": 5, "timeEnd": 2, "text": "x"})[0] == 400
    status, added = call(grafana, "POST", "/api/annotations", {"time": 1, "timeEnd": 2, "tags": ["a"], "text": "x"})
    assert (status, added["message"]) == (200, "Annotation added")
    assert [a["id"] for a in call(grafana, "GET", "/api/annotations?tags=a")[1]] == [added["id"]]


# --- what needs the foundation SDK (the grafana extra) and what does not ---------------------------

#: ``retrystorm ARGS...`` in a process where Grafana's foundation SDK cannot be imported.
WITHOUT_SDK = (
    "import sys; sys.modules['grafana_foundation_sdk'] = None; from retrystorm.cli import main; main(sys.argv[1:])"
)


def without_sdk(*args, env=None):
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_SDK, *args],
        capture_output=True, text=True, timeout=120, check=False, env={**os.environ, **(env or {})},
    )  # fmt: skip


@pytest.mark.live
def test_push_uploads_the_shipped_files_without_the_sdk(grafana):
    done = without_sdk("dashboards", "push", "--grafana-url", grafana.url, "--token", TOKEN)
    assert done.returncode == 0, done.stderr
    (saved,) = grafana.received("POST", "/api/dashboards/db")
    shipped = json.loads((DASHBOARD_DIR / "retrystorm.json").read_text())
    assert saved.body["dashboard"] == {**shipped, "id": None}


@pytest.mark.live
def test_build_without_the_sdk_says_what_to_install(tmp_path):
    done = without_sdk("dashboards", "build", "--out", str(tmp_path))
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "build needs Grafana's foundation SDK" in lines[0] and lines[0].endswith("pip install 'retrystorm[grafana]'")
    assert list(tmp_path.iterdir()) == []
