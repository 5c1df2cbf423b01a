"""``--otel-endpoint`` for a Locust process: its own instruments exported over OTLP (off by default).

The flag (or ``OTEL_EXPORTER_OTLP_ENDPOINT``, which a process started by ``retrystorm run`` inherits) makes the
process build :class:`~retrystorm.loadgen.otel_instruments.ClientInstruments` on the SDK's providers; each worker of
a distributed run exports its own (``service.instance.id`` tells them apart), and the master, which runs no users,
exports none. A bad value stops Locust at start with one line naming the flag (exit 2). OTLP over gRPC in a
gevent-patched process needs grpcio's gevent support, which is turned on first.
"""

from __future__ import annotations

import argparse
from typing import Any

from retrystorm.errors import UserError
from retrystorm.loadgen.otel_instruments import SCOPE, ClientInstruments
from retrystorm.otel import OtelSettings, Providers, from_environment, require_sdk
from retrystorm.otel import start as start_otel

SERVICE = "retrystorm-loadgen"


def check_endpoint(text: str) -> str:
    """``--otel-endpoint``'s value: a collector's URL, or empty or ``none`` (off)."""
    if text.strip().lower() in ("", "none"):
        return ""
    try:
        OtelSettings(text.strip())
        require_sdk()
    except UserError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("--otel-endpoint: ")) from None
    return text.strip()


def add_arguments(parser: Any) -> None:
    """Register ``--otel-endpoint`` on Locust's parser (not in the start form: it is about the process)."""
    parser.add_argument(
        "--otel-endpoint",
        type=check_endpoint,
        default="",
        include_in_web_ui=False,
        help="Export this process's per-attempt and per-request instruments over OTLP to the collector at this URL "
        "(http://HOST:4317, or :4318 with OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf); default: "
        "OTEL_EXPORTER_OTLP_ENDPOINT, else off.",
    )


def start(options: Any, *, grpc: bool) -> tuple[ClientInstruments, Providers] | None:
    """The process's instruments and providers, or ``None`` when no export is asked for."""
    endpoint = str(getattr(options, "otel_endpoint", "") or "") or None
    settings = from_environment(SERVICE, endpoint=endpoint)
    if settings is None:
        return None
    if settings.protocol == "grpc":  # grpcio under gevent (the gRPC user turns it on too; twice is harmless)
        from grpc.experimental import gevent as grpc_gevent  # noqa: PLC0415 - only when exporting over gRPC

        grpc_gevent.init_gevent()
    providers = start_otel(endpoint, SERVICE, {"retrystorm.process": "loadgen"})
    if providers is None:
        return None
    return ClientInstruments(providers.meters.get_meter(SCOPE), grpc=grpc), providers
