"""The local backend: fresh processes on 127.0.0.1 per strategy (no Docker).

A ``retrystorm target`` process (:mod:`runner.local.target`), a headless Locust process
(:mod:`runner.local.locust`), and readings scraped from both ``/metrics`` endpoints
(:mod:`runner.local.scrape`). It never imports the compose backend, nor the Docker SDK.
"""

from __future__ import annotations

from pathlib import Path

from runner.local.locust import LocustDriver
from runner.local.scrape import HttpMetricsSource
from runner.local.target import LocalTargets
from runner.orchestrate import Stack

#: The stack ``retrystorm run`` uses by default: no Docker.
LOCAL_STACK = "local processes (retrystorm target + headless Locust, SIGSTOP/SIGCONT)"


def local_stack(log_dir: Path, workers: int | None = None) -> Stack:
    """Local processes: a fresh ``retrystorm target`` and headless Locust per strategy.

    ``workers``: Locust processes per strategy (1: one process; more: a master and that
    many workers); ``None`` chooses from the cores and the load
    (:func:`~runner.local.locust.default_workers`).
    """
    return Stack(LOCAL_STACK, LocalTargets(log_dir), LocustDriver(log_dir, workers), HttpMetricsSource())
