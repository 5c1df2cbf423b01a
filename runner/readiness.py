"""Waiting for a service of one's own to be ready before any load starts.

Ready means ``GET base_url + ready`` answers 2xx, or, without a ``ready`` path, that the
base URL answers anything at all (any status: a service need not serve ``/``); a gRPC service
(``grpc://HOST:PORT``) is ready when its port accepts a connection. Until
then the caller's ``alive`` check runs between attempts (a command that exited fails at
once, with its output's last lines); past the deadline it is a
:class:`~retrystorm.runner.errors.RunFailedError` (exit 3) naming the URL and the last error.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import aiohttp

from retrystorm.runner.errors import RunFailedError

#: How long a service has to get ready.
READY_TIMEOUT_S = 60.0
_PROBE_TIMEOUT_S = 2.0


async def connect_probe(grpc_url: str) -> str | None:
    """``None`` when ``grpc://HOST:PORT`` accepts a TCP connection now; otherwise why not."""
    host, _, port = grpc_url.removeprefix("grpc://").rpartition(":")
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host.strip("[]"), int(port)), _PROBE_TIMEOUT_S)
    except (TimeoutError, OSError) as error:
        return f"connecting to {host}:{port}: {error or type(error).__name__}"
    writer.close()
    await writer.wait_closed()
    return None


async def probe(base_url: str, ready: str | None) -> str | None:
    """``None`` when the service is ready now; otherwise why not, in a few words."""
    if base_url.startswith("grpc://"):
        return await connect_probe(base_url)
    url = base_url + (ready or "")
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=_PROBE_TIMEOUT_S)) as session,
            session.get(url, allow_redirects=False) as response,
        ):
            if ready is None or 200 <= response.status < 300:
                return None
            return f"GET {url} answered {response.status}"
    except (aiohttp.ClientError, TimeoutError, OSError) as error:
        return f"GET {url}: {error or type(error).__name__}"


async def wait_ready(
    base_url: str,
    ready: str | None,
    *,
    alive: Callable[[], None] = lambda: None,
    timeout_s: float = READY_TIMEOUT_S,
    what: str = "the service",
) -> None:
    """Return once the service answers (see the module docstring); ``alive()`` may raise to give up early."""
    deadline = time.monotonic() + timeout_s
    while True:
        problem = await probe(base_url, ready)
        if problem is None:
            return
        alive()
        if time.monotonic() > deadline:
            raise RunFailedError(f"{what} at {base_url} is not ready after {timeout_s:.0f} s: {problem}")
        await asyncio.sleep(0.2)
