"""What ``locust -f loadgen/urllib3_locustfile.py`` loads: the seed's client, retried by urllib3's own ``Retry``.

Usage (docs/guides/locust.md)::

    retrystorm target --port 8070 &
    locust -f loadgen/urllib3_locustfile.py --host http://127.0.0.1:8070 \\
        --retry-strategy urllib3:total=5,backoff_factor=0.5,status_forcelist=[503]

``--retry-strategy`` must be the ``urllib3`` preset, whose parameters are ``Retry``'s
(:mod:`retrystorm.loadgen.urllib3_settings`); anything else stops the run in one line, as a bad option does.
Importing this module patches the process with gevent (through Locust): asyncio code never imports it.
"""

from __future__ import annotations

import logging
from typing import Any

import gevent
from locust import events

from retrystorm.errors import UserError
from retrystorm.loadgen.options import load_options
from retrystorm.loadgen.plugin import install, runtime_of
from retrystorm.loadgen.urllib3_settings import real_preset
from retrystorm.loadgen.urllib3_user import Urllib3User

logger = logging.getLogger(__name__)
install(events)


@events.init.add_listener  # type: ignore[untyped-decorator]
def _urllib3_can_run_the_flags(environment: Any, **_: Any) -> None:
    """Headless (or a worker), refuse at once what urllib3 cannot run: one line and exit 2, as a bad flag."""
    options = environment.parsed_options
    if options is None or not (getattr(options, "headless", False) or getattr(options, "worker", False)):
        return  # the web UI's form may change them: checked when the test starts
    try:
        real_preset(load_options(vars(options)).policy.strategy, vars(options))
    except UserError as error:
        logger.error("retrystorm: %s", error)  # noqa: TRY400 - one line, no traceback
        raise SystemExit(2) from None  # not an Exception: Locust's event hook lets it end the process


@events.test_start.add_listener  # type: ignore[untyped-decorator]
def _urllib3_can_run_it(environment: Any, **_: Any) -> None:
    """Refuse a strategy urllib3 cannot run before any user starts: one line, and the run quits."""
    run = runtime_of(environment).run
    if run is None:  # the options were refused already
        return
    try:
        real_preset(run.options.policy.strategy, vars(environment.parsed_options or {}))
    except UserError as error:
        logger.error("retrystorm: %s; not starting users", error)  # noqa: TRY400 - one line, no traceback
        runtime_of(environment).run = None
        gevent.spawn(environment.runner.quit)


class Urllib3Client(Urllib3User):
    """One of the seed experiment's clients, retried by urllib3 (all behaviour comes from the options)."""


__all__ = ["Urllib3Client"]
