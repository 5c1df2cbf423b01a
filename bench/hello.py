"""The floor of the target's HTTP stack: asyncio + httptools answering ``OK`` at once.

The same event loop, transport and parser as ``target/service/http.py``, with keep-alive
and nothing else; ``bench/throughput.py`` compares the target against it.
"""

import asyncio
import sys

import httptools

RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 2\r\n\r\nOK"


class Hello(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport
        self.parser = httptools.HttpRequestParser(self)

    def data_received(self, data):
        self.parser.feed_data(data)

    def on_message_complete(self):
        self.transport.write(RESPONSE)


async def main():
    server = await asyncio.get_running_loop().create_server(Hello, "127.0.0.1", 0, backlog=4096)
    port = server.sockets[0].getsockname()[1]
    print(f"hello: listening on http://127.0.0.1:{port}", file=sys.stderr, flush=True)
    await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
