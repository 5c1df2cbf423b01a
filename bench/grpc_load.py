"""A closed-loop gRPC load: N concurrent callers of Target/Echo for a while; prints the calls made.

Run: ``python bench/grpc_load.py ADDRESS CONCURRENCY SECONDS``. grpc.aio, one channel, no retries.
"""

import asyncio
import sys
import time

from grpc import aio


async def main(address: str, concurrency: int, seconds: float) -> None:
    calls = 0
    async with aio.insecure_channel(address, options=[("grpc.enable_retries", 0)]) as channel:
        echo = channel.unary_unary("/retrystorm.target.v1.Target/Echo")
        end = time.monotonic() + seconds

        async def caller() -> None:
            nonlocal calls
            while time.monotonic() < end:
                await echo(b"\n\x02hi", timeout=10)
                calls += 1

        await asyncio.gather(*(caller() for _ in range(concurrency)))
    print(calls)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3])))
