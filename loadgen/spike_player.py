"""The live ``spike`` trigger in the Locust process that decides the user count: the single one, or the master.

At test start, when ``--load-spikes`` lists spikes (:mod:`retrystorm.loadgen.spikes`) and this process
is not a worker, :func:`start_player` spawns a greenlet that follows the spikes from that
moment (:class:`~retrystorm.loadgen.spikes.SpikeSteps` decides): at each spike's start and end it
calls ``runner.start(users, rate)``, the call Locust's web UI makes when a running test's
user count is edited (a master dispatches the change to its workers). ``rate`` is
``--spawn-rate``, raised so the largest spike's users start within a second. The test's
users are read from the options at every step, so an edit in the web UI during a test moves
the base the spikes multiply. At a spike's end Locust stops that many users, with the
requests they have in flight (the simulator lets them finish theirs).

Every second, and at each change, the player serves the factor in force as
``retrystorm_client_load_factor{strategy}`` (the dashboard's spike band); only the process
that plays the spikes has that series, so a master's sum of its workers is it. The player
ends with the test (``test_stop``) or with the process.

No :class:`locust.LoadTestShape`: a shape takes the user count over for every test, from
the web UI too, while this acts only when spikes are asked for, the same way on the command
line, in the web UI's start form, and through a master's ``POST /swarm`` (the compose backend).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import gevent
import locust.runners

from retrystorm.loadgen.spikes import LoadSpike, SpikeSteps

logger = logging.getLogger(__name__)


def _test_users(runner: Any) -> tuple[int, float]:
    options = runner.environment.parsed_options
    return int(getattr(options, "num_users", 0) or 0), float(getattr(options, "spawn_rate", 1) or 1)


def play(runner: Any, spikes: tuple[LoadSpike, ...], show_factor: Callable[[float], None]) -> None:
    """Play ``spikes`` on ``runner`` from now until killed (the test's end)."""
    started = time.monotonic()
    steps = SpikeSteps(spikes, _test_users(runner)[0])
    while True:
        users, rate = _test_users(runner)
        step = steps.step(time.monotonic() - started, users, rate)
        if step.start is not None:
            logger.info("load spike: %d users (x%.4g of %d)", step.start[0], step.factor, users)
            runner.start(*step.start)
        show_factor(step.factor)
        gevent.sleep(step.sleep_s)


def plays_spikes(runner: Any) -> bool:
    """Whether ``runner`` decides the user count: not a worker (a worker takes its count from its master)."""
    return runner is not None and not isinstance(runner, locust.runners.WorkerRunner)


def start_player(
    runner: Any, spikes: tuple[LoadSpike, ...], show_factor: Callable[[float], None]
) -> gevent.Greenlet | None:
    """Spawn the player of ``spikes`` on ``runner`` (``None``: no spike, or a worker); the caller kills it."""
    if not spikes or not plays_spikes(runner):
        return None
    greenlet = gevent.spawn(play, runner, spikes, show_factor)
    greenlet.link_exception(lambda dead: logger.error("the load spike player stopped: %r", dead.exception))
    return greenlet
