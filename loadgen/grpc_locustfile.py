"""What ``locust -f loadgen/grpc_locustfile.py`` loads: the seed's client calling a gRPC method.

Usage (docs/guides/grpc.md)::

    retrystorm target --grpc-port 9070 &
    locust -f loadgen/grpc_locustfile.py --host 127.0.0.1:9070 \\
        --grpc-mode real --retry-strategy grpc-service-config:service-config.json

grpcio is made cooperative with gevent before any channel exists
(``grpc.experimental.gevent.init_gevent``): without it a blocking call would stall every user of
the process. Importing this module patches the process with gevent: asyncio code never imports it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import gevent
from grpc.experimental import gevent as grpc_gevent
from locust import events

from retrystorm.errors import SpecError
from retrystorm.loadgen.grpc_settings import GRPC_OPTIONS
from retrystorm.loadgen.grpc_user import GrpcUser
from retrystorm.loadgen.plugin import install

grpc_gevent.init_gevent()
install(events)


@events.init.add_listener  # type: ignore[untyped-decorator]
def _fresh_loop_time(**_: Any) -> None:
    """Bring gevent's cached loop time up to date before Locust arms ``--run-time``.

    Locust arms its run-time timer relative to the loop's cached time, which stops at the last
    loop iteration before the locustfile was imported: importing grpcio takes seconds on a busy
    machine, and a 3 s run ended after 0.7 s.
    """
    gevent.get_hub().loop.update_now()


@events.init_command_line_parser.add_listener  # type: ignore[untyped-decorator]
def _grpc_arguments(parser: Any, **_: Any) -> None:
    """The gRPC options, on the command line and in the web UI's start form (a bad one: exit 2 naming it)."""
    for flag, default, help_text, check in GRPC_OPTIONS:
        parser.add_argument(flag, default=default, help=help_text, type=_checked(check), include_in_web_ui=True)


def _checked(check: Callable[[str], Any]) -> Callable[[str], str]:
    """An argparse ``type`` that validates with ``check`` and keeps the text as written."""

    def parse(text: str) -> str:
        try:
            check(text)
        except SpecError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
        return text

    return parse


class GrpcClient(GrpcUser):
    """One of the seed experiment's clients, over gRPC (all behaviour comes from the options)."""


__all__ = ["GrpcClient"]
