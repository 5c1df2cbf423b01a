"""Memory under connection churn: many clients that send a request and leave, as clients
that time out and reconnect do in a retry storm.

``retrystorm target --model fixed --base-delay 100ms`` gets ``--batches`` rounds of
``--per-batch`` connections, each sending ``GET /api`` and closing at once (an abandoned
request); then, once nothing is in flight, the script prints the target's RSS before and
after, and the ratio. ``--baseline DIR`` (repeatable) runs another checkout's target
(``git archive COMMIT | tar -x -C DIR``) the same way, for a side by side. Run:
``.venv/bin/python bench/churn.py --baseline /tmp/before``.
"""

import argparse
import asyncio
import time
from pathlib import Path

from benchlib import raise_open_files_limit, rss_bytes, scrape, target

IN_FLIGHT = "retrystorm_target_in_flight_requests"


async def send_and_leave(port: int) -> None:
    _, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    await writer.drain()
    writer.close()  # without waiting for the server to see it go


async def churn(port: int, batches: int, per_batch: int) -> None:
    for _ in range(batches):
        await asyncio.gather(*(send_and_leave(port) for _ in range(per_batch)))
        await asyncio.sleep(0.05)


def measure(source: Path | None, args: argparse.Namespace) -> tuple[int, int]:
    """RSS before and after the churn, nothing in flight."""
    with target("--model", "fixed", "--base-delay", "100ms", source=source) as service:
        time.sleep(1.0)
        before = rss_bytes(service.pid)
        asyncio.run(churn(service.port, args.batches, args.per_batch))
        deadline = time.monotonic() + 30
        while scrape(service.port)[IN_FLIGHT] > 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1.0)
        return before, rss_bytes(service.pid)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--per-batch", type=int, default=1000)
    parser.add_argument("--baseline", type=Path, action="append", default=[], help="another checkout's tree")
    args = parser.parse_args()
    raise_open_files_limit()
    total = args.batches * args.per_batch
    print(f"{total:,} connections that send GET /api and leave, {args.per_batch} at a time")
    for name, source in [("this checkout", None), *((f"baseline {path}", path) for path in args.baseline)]:
        before, after = measure(source, args)
        print(f"{name}: RSS before {before / 2**20:.1f} MiB, after {after / 2**20:.1f} MiB ({after / before:.2f}x)")


if __name__ == "__main__":
    main()
