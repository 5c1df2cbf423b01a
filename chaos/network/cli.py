"""``retrystorm chaos proxy``: the fault proxy process (:mod:`retrystorm.chaos.network.proxy`)."""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
import sys
from pathlib import Path

import click

from retrystorm.cli_types import DURATION
from retrystorm.errors import UserError

#: The longest life ``--exit-after`` may give a proxy.
MAX_EXIT_AFTER_S = 7 * 24 * 3600.0


def host_port(text: str, option: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[V6]:PORT`` for IPv6) as a pair; a :class:`UserError` naming ``option`` otherwise."""
    host, colon, port = text.strip().rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not colon or not host or not port.isdigit() or int(port) > 65535 or len(text) > 300:
        raise UserError(f"{option}: got {text[:80]!r}, expected HOST:PORT, e.g. 127.0.0.1:8000")
    return host, int(port)


async def _serve(
    listen: tuple[str, int], upstream: tuple[str, int], control: Path, seed: int, exit_after_s: float | None
) -> None:
    from retrystorm.chaos.network.control import private_socket_path, remove_private_folder, serve_control
    from retrystorm.chaos.network.proxy import Proxy

    proxy = Proxy(upstream, rng=random.Random(f"{seed}/proxy"))
    try:
        bound = await proxy.start(*listen)
    except OSError as error:
        raise UserError(f"--listen {listen[0]}:{listen[1]}: {error.strerror or error}") from None
    server = await serve_control(proxy, private_socket_path(control), bound)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(signum, stop.set)
    click.echo(f"fault proxy listening on {bound[0]}:{bound[1]} -> {upstream[0]}:{upstream[1]}; control {control}")
    sys.stdout.flush()
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), exit_after_s)
    finally:
        server.close()
        await proxy.close()
        with contextlib.suppress(FileNotFoundError):
            control.unlink()
        remove_private_folder(control.parent)


@click.command("proxy")
@click.option("--listen", required=True, metavar="HOST:PORT", help="Where clients connect (port 0: any free one).")
@click.option("--upstream", required=True, metavar="HOST:PORT", help="The service the proxy forwards to.")
@click.option(
    "--control", required=True, type=click.Path(dir_okay=False, path_type=Path),
    help="Its control socket (a Unix socket, mode 0600, in a folder made 0700).",
)  # fmt: skip
@click.option("--seed", type=click.IntRange(0, 2**63 - 1), default=1, show_default=True, help="Random seed.")
@click.option(
    "--exit-after", type=DURATION, default=None, metavar="DURATION",
    help="Exit this long after starting, toxics ended (default: run until SIGTERM).",
)  # fmt: skip
def proxy(*, listen: str, upstream: str, control: Path, seed: int, exit_after: float | None) -> None:
    """A TCP proxy in front of a service, playing network faults (delay, loss, hang, reset) set on its control
    socket, each ended at its deadline by the proxy itself. Started by `chaos serve --proxy` and `retrystorm run`."""
    listen_at = host_port(listen, "--listen")
    upstream_at = host_port(upstream, "--upstream")
    if exit_after is not None and not 0 < exit_after <= MAX_EXIT_AFTER_S:
        raise UserError(f"--exit-after: got {exit_after:g} s, expected a duration > 0 and at most 7 days")
    asyncio.run(_serve(listen_at, upstream_at, control, seed, exit_after))
