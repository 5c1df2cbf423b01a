"""A bare grpcio (``grpc.aio``) echo server: the baseline the gRPC target is measured against.

The same method name and the same bytes-in, bytes-out handler as the target's gRPC front, with no
model, faults or metrics. Prints ``gRPC on 127.0.0.1:PORT`` once it listens; SIGTERM stops it.
"""

import asyncio
import signal
import sys

import grpc
from grpc import aio


async def echo(request: bytes, context: aio.ServicerContext) -> bytes:  # noqa: ARG001 - grpcio passes both
    return request


async def main() -> None:
    server = aio.server()
    handler = grpc.unary_unary_rpc_method_handler(echo)
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("retrystorm.target.v1.Target", {"Echo": handler}),)
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(f"gRPC on 127.0.0.1:{port}", file=sys.stderr, flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await server.stop(0)


if __name__ == "__main__":
    asyncio.run(main())
