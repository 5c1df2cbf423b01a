"""The Chaos Toolkit example run by the real ``chaos run``: a real target, retrystorm's chaos API pausing it with a
real SIGSTOP, retrystorm's Locust load with one strategy. The seed's exponential backoff (smira) recovers, so the
steady-state hypothesis holds and ``chaos run`` exits 0; fixed 100 ms retries keep the server down, so the
hypothesis deviates and ``chaos run`` exits 1. Small and short: 50 users, a 4 s pause 6 s into the load, a model
whose knee is low (limit 10, k 2), on loopback; bounds of 5 s (server) and 15 s (users) after the resume, so the
control ends each load once its verdict is known, about 20 s into it (the example's defaults: 10 s, 15 s, 30 s)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.loadgen.conftest import Processes, free_port, get_text, target_starter, wait_until

pytestmark = [pytest.mark.live, pytest.mark.signals, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENT = ROOT / "examples" / "chaostoolkit" / "experiment.json"
CHAOS = str(Path(sys.executable).with_name("chaos"))
RETRYSTORM = str(Path(sys.executable).with_name("retrystorm"))
MODEL = "exponential:limit=10,factor=1.05,k=2"


def run_experiment(
    tmp_path: Path, strategy: str, experiment: Path = EXPERIMENT
) -> tuple[subprocess.CompletedProcess[str], dict]:
    """``chaos run`` of ``experiment`` against a fresh target and chaos API; the finished run and its journal."""
    processes = Processes(tmp_path)
    try:
        target = target_starter(processes)("--model", MODEL)
        chaos_port = free_port()
        processes.start(
            "chaos",
            [RETRYSTORM, "chaos", "serve", "--port", str(chaos_port), "--target", f"target={target.process.pid}"],
            {"RETRYSTORM_CHAOS_JOURNAL": str(tmp_path / "journal.jsonl")},
        )
        chaos_url = f"http://127.0.0.1:{chaos_port}"
        wait_until(lambda: get_text(chaos_url + "/healthz"), 60, "the chaos API")
        env = {
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "RETRYSTORM_TARGET_URL": target.url,
            "RETRYSTORM_CHAOS_URL": chaos_url,
            "RETRYSTORM_STRATEGY": strategy,
            "RETRYSTORM_PAUSE": "4s",
            "RETRYSTORM_PAUSE_AT": "6s",
            "RETRYSTORM_SERVER_RECOVERS_WITHIN": "5s",
            "RETRYSTORM_CLIENT_RECOVERS_WITHIN": "15s",
        }
        done = subprocess.run(
            [CHAOS, "run", "--journal-path", str(tmp_path / "journal.json"), str(experiment)],
            cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300, check=False,
        )  # fmt: skip
    finally:
        processes.stop_all()
    journal = json.loads((tmp_path / "journal.json").read_text())
    return done, journal


def verdict_after(journal: dict) -> dict:
    (probe,) = [p for p in journal["steady_states"]["after"]["probes"] if p["activity"]["name"] == "retrystorm-verdict"]
    return probe["output"]


def test_a_recovering_strategy_passes(tmp_path):
    done, journal = run_experiment(tmp_path, "smira")
    assert done.returncode == 0, done.stdout + done.stderr
    assert journal["status"] == "completed" and not journal["deviated"]
    before = journal["steady_states"]["before"]["probes"][0]["output"]
    assert before["verdict"] == "not started"
    output = verdict_after(journal)
    assert output["verdict"] == "recovered", output
    assert output["ended"] == "a known verdict"  # the control ended the load before its 60 s
    (pause,) = output["pauses"]
    assert 3.5 < pause["end_s"] - pause["start_s"] < 5.5  # the chaos API's record of the real pause
    figures = output["figures"]
    assert figures["server_recovery_s"] <= 5 and figures["client_recovery_s"] <= 15
    bounds = {check["check"]: check["bound"] for check in figures["assertions"]}  # the experiment's settings taken
    assert bounds == {"server_recovers_within": "5s", "client_recovers_within": "15s"}
    assert figures["validity"]["valid"] and figures["amplification"] >= 1
    assert output["goodput_per_s"]["steady"] > 10
    (extension,) = [e for e in journal["extensions"] if e["name"] == "retrystorm"]
    assert extension["loads"][0]["verdict"] == "recovered"


def test_a_storming_strategy_deviates(tmp_path):
    done, journal = run_experiment(tmp_path, "fixed:100ms")
    assert done.returncode == 1, done.stdout + done.stderr
    assert journal["deviated"]
    output = verdict_after(journal)
    assert output["verdict"] == "not recovered", output
    assert output["reason"] == "pause 1: the server's recovery not seen, bound 5 s after the resume"
    assert output["figures"]["server_recovery_s"] is None
    assert output["figures"]["peak_in_flight"] > 200
    assert "Traceback" not in done.stderr


def test_a_malformed_argument_is_one_line_nothing_is_paused_and_the_hypothesis_deviates(tmp_path):
    experiment = json.loads(EXPERIMENT.read_text())
    experiment["method"][0]["provider"]["arguments"]["load"]["users"] = -5
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(experiment))
    done, journal = run_experiment(tmp_path, "smira", bad)
    assert done.returncode == 1, done.stdout + done.stderr
    assert journal["deviated"]
    runs = {run["activity"]["name"]: run for run in journal["run"]}
    assert runs["retrystorm-load"]["status"] == "failed"
    shown = done.stdout + done.stderr
    (line,) = [line for line in shown.splitlines() if "ActivityFailed: start_load:" in line]
    assert line.endswith(
        "=> failed: chaoslib.exceptions.ActivityFailed: start_load: load.users: got -5; expected "
        "greater than or equal to 1"
    ), line
    assert runs["pause-the-service"]["status"] == "failed"
    assert "did not start" in "".join(runs["pause-the-service"]["exception"])
    assert verdict_after(journal)["verdict"] == "no verdict"
    assert "Traceback" not in shown
    assert not (tmp_path / "retrystorm-chaostoolkit").exists()  # Locust never started: no log folder
