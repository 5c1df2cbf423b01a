"""Seed-style users for the CPU benchmark: think, request, give up, retry.

Each user waits an exponentially distributed think time, sends GET /api on a fresh
connection, gives up after ``--timeout`` (closing the connection, as the seed's Go
client does) and retries after a fixed ``--retry`` delay until it succeeds. Prints
attempts, successes and timeouts at the end. The retry strategies proper live in
``loadgen``; this stand-alone client only makes the benchmark's load.
"""

import argparse
import asyncio
import random
import time

from retrystorm.target.probe import encode_request, read_reply

REQUEST = encode_request("GET", "/api", close=True)


class Tally:
    def __init__(self) -> None:
        self.attempts = self.ok = self.timeouts = self.errors = 0


async def attempt(port: int, timeout_s: float, tally: Tally) -> bool:
    tally.attempts += 1
    writer = None
    try:
        async with asyncio.timeout(timeout_s):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(REQUEST)
            reply = await read_reply(reader)
    except TimeoutError:
        tally.timeouts += 1
        return False
    except OSError:
        tally.errors += 1
        return False
    finally:
        if writer is not None:
            writer.close()
    if reply.status == 200:
        tally.ok += 1
        return True
    return False


async def user(args: argparse.Namespace, rng: random.Random, until: float, tally: Tally) -> None:
    while True:
        think_s = rng.expovariate(1 / args.think) if args.think > 0 else 0.0
        await asyncio.sleep(min(think_s, max(0.0, until - time.monotonic())))
        while time.monotonic() < until:
            if await attempt(args.port, args.timeout, tally):
                break
            await asyncio.sleep(args.retry)
        if time.monotonic() >= until:
            return


async def main(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    until = time.monotonic() + args.seconds
    tally = Tally()
    await asyncio.gather(*(user(args, random.Random(rng.random()), until, tally) for _ in range(args.users)))
    print(f"attempts {tally.attempts} ok {tally.ok} timeouts {tally.timeouts} errors {tally.errors}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--think", type=float, default=10.0, help="mean think time, seconds")
    parser.add_argument("--timeout", type=float, default=2.0)
    parser.add_argument("--retry", type=float, default=0.1, help="fixed delay before a retry, seconds")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=1)
    asyncio.run(main(parser.parse_args()))
