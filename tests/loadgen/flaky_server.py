"""A small real HTTP server that fails the first N attempts of every logical request.

The target service models overload, not scripted failures; the retry-sequence tests
need a server that answers 5xx (optionally with ``Retry-After``) to attempts 1..N of
each request and OK after, so they use this one. It reads the attempt number from
the ``Retrystorm-Attempt`` header the load generator sends on retries, records the
arrival time of every attempt, and serves the record at ``GET /log``.

Run: ``python flaky_server.py --fail-first 3 [--status 503] [--retry-after 1]``; it
prints ``port N`` once listening on 127.0.0.1 (an ephemeral port unless ``--port``).
"""

from __future__ import annotations

import argparse
import asyncio
import time

from aiohttp import web

ATTEMPT_HEADER = "Retrystorm-Attempt"


def create_app(*, fail_first: int, status: int, retry_after: str | None) -> web.Application:
    log: list[dict[str, float | int]] = []

    async def api(request: web.Request) -> web.Response:
        attempt = int(request.headers.get(ATTEMPT_HEADER, "1"))
        log.append({"t": time.monotonic(), "attempt": attempt})
        if attempt <= fail_first:
            headers = {"Retry-After": retry_after} if retry_after is not None else None
            return web.Response(status=status, text="failing on purpose", headers=headers)
        return web.Response(text="OK")

    async def get_log(request: web.Request) -> web.Response:
        return web.json_response(log)

    app = web.Application()
    app.router.add_get("/api", api)
    app.router.add_get("/log", get_log)
    return app


async def serve(args: argparse.Namespace) -> None:
    app = create_app(fail_first=args.fail_first, status=args.status, retry_after=args.retry_after)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", args.port)
    await site.start()
    port = runner.addresses[0][1]
    print(f"port {port}", flush=True)  # noqa: T201 - the parent reads the port from here
    await asyncio.sleep(args.lifetime)
    await runner.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--fail-first", type=int, default=0)
    parser.add_argument("--status", type=int, default=503)
    parser.add_argument("--retry-after", default=None)
    parser.add_argument("--lifetime", type=float, default=120.0, help="exit after this many seconds")
    asyncio.run(serve(parser.parse_args()))


if __name__ == "__main__":
    main()
