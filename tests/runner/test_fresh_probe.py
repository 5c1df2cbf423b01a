"""Fresh requests against a real HTTP server on loopback (an asyncio server in this process)."""

import asyncio
import dataclasses

from retrystorm.experiment.scenario import RunSpec
from retrystorm.loadgen.grpc_settings import GrpcMode, GrpcSettings
from retrystorm.loadgen.request_mix import RequestSpec
from retrystorm.loadgen.strategies import RetryPolicy, parse_strategy
from retrystorm.runner.fresh_probe import (
    NO_TIMEOUT_WAIT_S,
    FreshAnswer,
    FreshProbe,
    in_time_per_second,
    probe_for,
    summary,
)


async def serve(answer):
    """A server on a free loopback port whose handler is ``answer(request_head) -> bytes | None`` (None: hold)."""
    seen = []

    async def handle(reader, writer):
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            seen.append(head)
            reply = answer(head)
            if reply is None:
                await asyncio.sleep(30)  # never answers in the probe's time
            else:
                writer.write(reply)
                await writer.drain()
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", seen


def one_probe(answer, timeout_s=0.3, request=None):
    async def main():
        server, url, seen = await serve(answer)
        async with server:
            probe = FreshProbe(url, request or RequestSpec(), timeout_s)
            await probe.probe(3.5)
            server.close()
            return probe.answers, seen

    return asyncio.run(main())


def test_an_answer_below_400_in_time_is_in_time_and_the_request_is_the_scenarios_on_a_closing_connection():
    request = RequestSpec(method="POST", path="/orders", headers={"X-Key": "k"}, body='{"qty": 1}')
    [answer], [head] = one_probe(lambda _head: b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n", request=request)
    assert answer.in_time and answer.status == 201 and answer.sent_s == 3.5 and answer.latency_s < 0.3
    assert head.startswith(b"POST /orders HTTP/1.1\r\n")
    lines = head.lower().split(b"\r\n")
    assert b"x-key: k" in lines and b"content-length: 10" in lines and b"connection: close" in lines
    assert not any(line.startswith(b"content-type") for line in lines)  # no content type the load does not send


def test_a_server_that_holds_the_request_past_the_timeout_is_not_in_time():
    [answer], _ = one_probe(lambda _head: None, timeout_s=0.2)
    assert not answer.in_time and answer.status is None and answer.latency_s is None
    assert answer.error.startswith("none within")


def test_an_error_status_is_an_answer_but_not_in_time():
    [answer], _ = one_probe(lambda _head: b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
    assert not answer.in_time and answer.status == 503


def test_a_refused_connection_is_not_in_time():
    async def main():
        server, url, _ = await serve(lambda _head: None)
        server.close()
        await server.wait_closed()  # nothing listens there any more
        probe = FreshProbe(url, timeout_s=1.0)
        await probe.probe(0.5)
        return probe.answers

    [answer] = asyncio.run(main())
    assert not answer.in_time and answer.status is None and answer.error


def test_a_run_sends_one_in_each_second_and_an_answer_held_past_its_timeout_does_not_delay_the_next():
    held = []

    def answer(head):
        held.append(head)
        return None if len(held) == 1 else b"HTTP/1.0 200 OK\r\n\r\n"  # the first is held past its timeout

    async def main():
        server, url, _ = await serve(answer)
        async with server:
            loop = asyncio.get_running_loop()
            probe = FreshProbe(url, timeout_s=2.5, clock=loop.time)
            await probe.run(loop.time(), 3.0)
            server.close()
            return probe.answers

    answers = sorted(asyncio.run(main()), key=lambda a: a.sent_s)
    # one after the other, the second would be sent only when the first gave up, at 3.0 s, past the run's end
    assert [a.in_time for a in answers] == [False, True, True]
    assert all(a.sent_s < 2.9 for a in answers), answers


def test_each_second_is_in_time_only_when_every_request_sent_in_it_was():
    answers = [FreshAnswer(0.5, True, 0.01), FreshAnswer(1.5, False, None), FreshAnswer(1.9, True, 0.01)]
    assert in_time_per_second(answers, 4) == [1.0, 0.0, None, None]
    assert summary(answers, 2.0) == {"sent": 3, "answered_in_time": 2, "every_s": 1.0, "timeout_s": 2.0}


def test_the_probe_sends_the_first_request_of_the_mix_and_none_for_grpc_or_a_url_that_is_not_http():
    spec = RunSpec(
        label="t", model=None, policy=RetryPolicy(strategy=parse_strategy("fixed:100ms")), users=1, duration_s=10.0,
        attempt_timeout_s=None, requests=(RequestSpec(path="/first"), RequestSpec(path="/second")),
    )  # fmt: skip
    probe = probe_for(spec, "http://127.0.0.1:8000", lambda: 0.0)
    assert probe.request.path == "/first" and probe.timeout_s == NO_TIMEOUT_WAIT_S
    assert probe_for(spec, "https://127.0.0.1:8000", lambda: 0.0) is None
    grpc = GrpcSettings(mode=GrpcMode.REAL, method="/p.S/M", request=b"")
    assert probe_for(dataclasses.replace(spec, grpc=grpc), "http://127.0.0.1:8000", lambda: 0.0) is None
