"""``retrystorm worker``: the Locust command line it becomes, and its refusal of a bad ``--master``."""

from __future__ import annotations

import sys

from retrystorm.runner.locust_args import LOCUSTFILE
from retrystorm.runner.worker_cli import worker_argv
from tests.support.cli import run_cli


def test_a_worker_is_locust_with_retrystorms_locustfile_joining_the_master():
    assert worker_argv("10.0.0.1:5557") == [
        sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--worker",
        "--master-host", "10.0.0.1", "--master-port", "5557",
    ]  # fmt: skip
    assert worker_argv("[fd00::1]:5557")[-4:] == ["--master-host", "fd00::1", "--master-port", "5557"]


def test_a_bad_master_address_is_one_line_and_exit_2():
    for bad in ("nope", "10.0.0.1:0", "10.0.0.1:70000", ":5557"):
        done = run_cli("worker", "--master", bad)
        assert done.returncode == 2, (bad, done.stderr)
        assert done.stderr == f"retrystorm: error: --master: got {bad!r}, expected HOST:PORT, e.g. 10.0.0.1:5557\n"
