"""The load generator's locustfile, with the workers' report interval from the environment.

For ``bench/worker_reports.py`` only: ``RETRYSTORM_BENCH_REPORT_INTERVAL`` seconds
(Locust's own default is 3) replaces what ``loadgen/locustfile.py`` sets.
"""

from __future__ import annotations

import os

import locust.runners

from retrystorm.loadgen.locustfile import SeedClient

locust.runners.WORKER_REPORT_INTERVAL = float(os.environ.get("RETRYSTORM_BENCH_REPORT_INTERVAL", "3"))

__all__ = ["SeedClient"]
