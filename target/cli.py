"""``retrystorm target``: run the target service on the command line.

The model's parameters are flags generated from the model registry (``--limit``,
``--factor``, ``--base-delay``, ``--workers``, ...), so a new model parameter is a new
flag; a flag that the chosen model does not take is an error naming the ones it does.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import resource
import signal
import time
from collections.abc import Callable
from typing import Any

import click
from prometheus_client import CollectorRegistry

from retrystorm.cli_types import DURATION, otel_endpoint_option
from retrystorm.console import err
from retrystorm.errors import UserError
from retrystorm.otel import Providers
from retrystorm.otel import start as start_otel
from retrystorm.spec import ParamInfo, params_of, spec_to_mapping
from retrystorm.target.models import MODELS, OverloadModel, parse_model
from retrystorm.target.service import ConnectionLimits, ServiceConfig, create_app, default_backlog
from retrystorm.target.service.auth import COMPOSE_DEFAULT_TOKEN
from retrystorm.target.service.limits import DEFAULT_MAX_CONNECTIONS, MAX_CONNECTIONS

logger = logging.getLogger(__name__)


def _model_params() -> dict[str, tuple[ParamInfo, list[str]]]:
    """Each parameter key of any model -> (its first declaration, the models taking it)."""
    found: dict[str, tuple[ParamInfo, list[str]]] = {}
    for name, cls in MODELS.items():
        for info in params_of(cls):
            found.setdefault(info.key, (info, []))[1].append(name)
    return found


def _flag(key: str) -> str:
    return "--" + key.replace("_", "-")


def _model_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate ``command`` with one string option per model parameter."""
    for key, (info, names) in reversed(_model_params().items()):
        defaults = ", ".join(
            f"{name} {info.type.to_text(getattr(MODELS.get(name)(), _field(name, key)))}" for name in names
        )
        help_text = f"{info.help}: {info.describe_bounds(short=True)} (default: {defaults})"
        option = click.option(_flag(key), key, metavar=info.type.short.upper().replace(" ", "_"), help=help_text)
        command = option(command)
    return command


def _field(model_name: str, key: str) -> str:
    return next(info.field for info in params_of(MODELS.get(model_name)) if info.key == key)


def build_model(spec: str, flags: dict[str, str | None]) -> OverloadModel:
    """The model named by ``--model`` (a name or spec) with the parameter flags on top."""
    base = parse_model(spec)
    given = {key: value for key, value in flags.items() if value is not None}
    accepted = {info.key for info in params_of(type(base))}
    for key in given:
        if key not in accepted:
            valid = ", ".join(_flag(k) for k in sorted(accepted)) or "none"
            raise UserError(f"{_flag(key)} does not apply to --model {base.name}; its flags: {valid}")
    if not given:
        return base
    return parse_model({**spec_to_mapping(base), **given})


#: Open files the process needs besides its connections (listener, modules, the selector...).
_SPARE_FILES = 64


def raise_open_files_limit() -> int:
    """Raise the soft limit on open files to the hard limit (10k connections need it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            logger.warning("could not raise the open-files limit from %d to %d", soft, hard)
            return soft
    return hard


@click.command()
@click.option(
    "--model",
    "model_spec",
    default="exponential",
    show_default=True,
    metavar="NAME[:KEY=VALUE,...]",
    help=f"Overload model ({', '.join(MODELS.names())}), optionally with parameters; flags below override.",
)
@_model_options
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8070, show_default=True, help="Port (0: any free).")
@click.option(
    "--grpc-port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Also serve the model over gRPC (/retrystorm.target.v1.Target/Echo) on this port (0: any free); "
    "needs the grpc extra. [default: no gRPC]",
)
@click.option(
    "--backlog", type=click.IntRange(min=1), default=None, help="Listen backlog. [default: the system maximum]"
)
@click.option(
    "--report-interval",
    type=DURATION,
    default="1s",
    show_default=True,
    help="Print 'concurrency: N, last delay: D' this often; 0 disables.",
)
@click.option("--cancel-on-disconnect", is_flag=True, help="Remove a request from the model when its client goes away.")
@click.option("--seed", type=int, default=None, help="Seed for the model's random draws (queue model).")
@click.option(
    "--header-timeout",
    type=DURATION,
    default="10s",
    show_default=True,
    help="Close a connection whose request has not fully arrived this long after its first byte (at most 1h).",
)
@click.option(
    "--idle-timeout",
    type=DURATION,
    default="60s",
    show_default=True,
    help="Close a connection that owes nothing and sends nothing for this long (never one awaiting a response).",
)
@click.option(
    "--max-connections",
    type=click.IntRange(1, MAX_CONNECTIONS),
    default=None,
    help="Connections open at once; past it a new one is closed at once (counted as refused). "
    f"[default: {DEFAULT_MAX_CONNECTIONS}, or the open-files limit less {_SPARE_FILES} if lower]",
)
@click.option(
    "--admin-token",
    envvar="RETRYSTORM_ADMIN_TOKEN",
    default="",
    show_envvar=True,
    help="Bearer token /admin/* requires (Authorization: Bearer TOKEN); needed to listen beyond loopback.",
)
@otel_endpoint_option("each request's duration (http.server.request.duration) and the requests in flight")
def target(
    *,
    model_spec: str,
    host: str,
    port: int,
    grpc_port: int | None,
    backlog: int | None,
    report_interval: float,
    cancel_on_disconnect: bool,
    seed: int | None,
    header_timeout: float,
    idle_timeout: float,
    max_connections: int | None,
    admin_token: str,
    otel_endpoint: str | None,
    **model_flags: str | None,
) -> None:
    """Run the target service: GET /api answers after the modelled delay.

    With --grpc-port, the model is also served over gRPC (the same model, faults, metrics and
    admin API). Also serves /healthz, /metrics (Prometheus), /openapi.json and the admin API
    (GET/PUT /admin/model, POST /admin/reset, GET/PUT/DELETE /admin/faults to fail
    chosen attempts on purpose). SIGTERM or Ctrl-C stops it.
    """
    options: dict[str, Any] = {"backlog": backlog} if backlog is not None else {}
    open_files = raise_open_files_limit()
    if max_connections is None:
        max_connections = max(1, min(DEFAULT_MAX_CONNECTIONS, open_files - _SPARE_FILES))
    config = ServiceConfig(
        model=build_model(model_spec, model_flags),
        host=host,
        port=port,
        grpc_port=grpc_port,
        report_interval_s=report_interval,
        cancel_on_disconnect=cancel_on_disconnect,
        seed=seed,
        admin_token=admin_token,
        limits=ConnectionLimits(
            header_timeout_s=header_timeout, idle_timeout_s=idle_timeout, max_connections=max_connections
        ),
        **options,
    )
    otel = start_otel(otel_endpoint, "retrystorm-target")
    try:
        asyncio.run(serve(config, open_files=open_files, otel=otel))
    finally:
        if otel is not None:
            otel.shutdown()


def tune_garbage_collector() -> None:
    """Keep the cyclic garbage collector's pauses short with thousands of connections open.

    CPython's collector stops the event loop while it scans; a full pass over 10,000
    open connections (about 150,000 tracked objects) takes 100-250 ms here, which would
    make every response due meanwhile that late. Serving creates no reference cycles
    (``tests/target/service/test_no_cycles.py``): reference counting frees connections
    and requests, and the collector only has to find rare strays. So what exists after
    start-up (modules, classes) is frozen out of its scans, young passes run every 2,000
    allocations (about 1 ms each), and a full pass waits for 1,000 middle-generation
    passes (about 20 million allocations) instead of 10.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(2_000, 10, 1_000)


async def serve(config: ServiceConfig, *, open_files: int | None = None, otel: Providers | None = None) -> None:
    """Run one service until SIGTERM or SIGINT, then shut it down; ``open_files``: the process's limit; ``otel``:
    the OpenTelemetry providers its instruments export through (:mod:`retrystorm.target.otel_instruments`)."""
    app = create_app(config, registry=CollectorRegistry(), clock=time.monotonic)
    if otel is not None:
        from retrystorm.target.otel_instruments import SCOPE, TargetInstruments

        meter = otel.meters.get_meter(SCOPE)
        app.metrics.traffic.otel = TargetInstruments(meter, lambda: float(app.driver.in_flight))
    try:
        await app.start()
    except OSError as error:
        reason = os.strerror(error.errno) if error.errno else str(error)
        raise UserError(f"cannot listen on {config.host}:{config.port}: {reason}") from error
    tune_garbage_collector()
    grpc = f" and gRPC on {config.host}:{app.grpc_port}" if app.grpc_port is not None else ""
    err.print(
        f"target: listening on http://{config.host}:{app.port}{grpc} (model {config.model.spec()}, "
        f"backlog {config.backlog}, max connections {config.limits.max_connections})",
        markup=False,
        soft_wrap=True,
    )
    if config.admin_token == COMPOSE_DEFAULT_TOKEN:
        err.print(
            "target: warning: the admin token is the documented default; set RETRYSTORM_ADMIN_TOKEN", markup=False
        )
    if open_files is not None and open_files < (needed := config.limits.max_connections + _SPARE_FILES):
        err.print(
            f"target: note: the open-files limit ({open_files}) is below the {needed} that --max-connections "
            f"({config.limits.max_connections}) needs; connections past it fail to be accepted",
            markup=False,
        )
    if config.backlog > (cap := default_backlog()):
        err.print(f"target: note: the kernel caps the backlog at {cap} (net.core.somaxconn)", markup=False)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    err.print("target: stopping", markup=False)
    await app.stop()
