"""``retrystorm worker --master HOST:PORT``: a Locust worker with retrystorm's user, joining a run's master.

A scenario across hosts (``hosts:``) has the runner start a Locust master on ``hosts.master``; each host that
sends load runs this command, which replaces itself with ``python -m locust -f <retrystorm's locustfile>
--worker --master-host HOST --master-port PORT`` (so signals reach Locust itself). The worker takes every option
of each strategy from the master's swarm, and quits when the master stops.
"""

from __future__ import annotations

import os
import sys

import click

from retrystorm.addresses import host_port
from retrystorm.runner.locust_args import LOCUSTFILE


def worker_argv(master: str) -> list[str]:
    """The Locust command line of a worker joining ``master`` (``HOST:PORT``)."""
    host, port = host_port(master, "--master")
    return [
        sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--worker",
        "--master-host", host, "--master-port", str(port),
    ]  # fmt: skip


@click.command("worker")
@click.option("--master", required=True, metavar="HOST:PORT", help="The master's address (a scenario's hosts.master).")
def worker(*, master: str) -> None:
    """Run a Locust worker with retrystorm's user that joins the master at HOST:PORT (a run across hosts)."""
    argv = worker_argv(master)
    sys.stdout.flush()
    os.execv(argv[0], argv)  # noqa: S606 - this interpreter and Locust, no shell
