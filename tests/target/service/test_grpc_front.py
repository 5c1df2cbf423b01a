"""The built-in target over gRPC: real grpcio clients against an in-process target on loopback."""

from __future__ import annotations

import asyncio
import json
import signal
import sys

import grpc
import pytest
from grpc import aio
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from retrystorm.errors import UserError
from retrystorm.target.models import parse_model
from retrystorm.target.probe import fetch
from retrystorm.target.service.grpc_front import PUSHBACK, attempt_number, grpc_code
from retrystorm.target.service.grpc_proto import FULL_METHOD, REQUEST, SERVICE, message_classes

ATTEMPTS = "retrystorm_target_grpc_attempts_total"
REQUESTS = "retrystorm_target_requests_total"
#: gRFC A6's example retry policy, for the target's service.
A6_POLICY = {
    "methodConfig": [
        {
            "name": [{"service": SERVICE}],
            "retryPolicy": {
                "maxAttempts": 4,
                "initialBackoff": "0.1s",
                "maxBackoff": "1s",
                "backoffMultiplier": 2,
                "retryableStatusCodes": ["UNAVAILABLE"],
            },
        }
    ]
}


def channel(port: int, service_config: dict | None = None) -> aio.Channel:
    options = [("grpc.service_config", json.dumps(service_config))] if service_config else []
    return aio.insecure_channel(f"127.0.0.1:{port}", options=options)


async def put_rule(port: int, rule: dict) -> None:
    reply = await fetch(port, "/admin/faults", "PUT", json.dumps(rule).encode())
    assert reply.status == 200, reply.text


def test_a_call_is_answered_after_the_models_delay_with_its_payload(live):
    request_class, reply_class = message_classes()

    async def scenario():
        async with live.serve(model=parse_model("fixed:base_delay=50ms"), grpc_port=0) as app:
            async with channel(app.grpc_port) as chan:
                sent = request_class(payload=b"hello").SerializeToString()
                answer = await chan.unary_unary(FULL_METHOD)(sent, timeout=10)
            assert reply_class.FromString(answer).payload == b"hello"
            assert live.metric(app, REQUESTS, outcome="ok") == 1
            assert live.metric(app, ATTEMPTS, attempt="1") == 1
            assert app.driver.in_flight == 0

    live.run(scenario())


def test_grpcio_retries_the_faulted_attempts_and_the_target_counts_each_by_number(live):
    async def scenario():
        async with live.serve(model=parse_model("fixed:base_delay=0"), grpc_port=0) as app:
            await put_rule(app.port, {"status": 503, "first_attempts": 2})
            async with channel(app.grpc_port, A6_POLICY) as chan:
                await chan.unary_unary(FULL_METHOD)(b"", timeout=10)
            assert [live.metric(app, ATTEMPTS, attempt=str(n)) for n in (1, 2, 3, 4)] == [1, 1, 1, 0]
            assert [(n, status) for _, n, status in app.faults.recent] == [(1, 503), (2, 503), (3, None)]

    live.run(scenario())


def test_without_a_retry_policy_a_faulted_call_fails_with_the_rules_code(live):
    async def scenario():
        async with live.serve(model=parse_model("fixed:base_delay=0"), grpc_port=0) as app:
            async with channel(app.grpc_port) as chan:
                call = chan.unary_unary(FULL_METHOD)
                await put_rule(app.port, {"status": 503})
                with pytest.raises(aio.AioRpcError) as unavailable:
                    await call(b"", timeout=10)
                await put_rule(app.port, {"status": 429, "retry_after": 2})
                with pytest.raises(aio.AioRpcError) as exhausted:
                    await call(b"", timeout=10)
            assert unavailable.value.code() is grpc.StatusCode.UNAVAILABLE
            assert "fault rule" in unavailable.value.details()
            assert exhausted.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            assert (PUSHBACK, "2000") in list(exhausted.value.trailing_metadata())
            assert live.metric(app, "retrystorm_target_injected_failures_total", status="429") == 1

    live.run(scenario())


def test_pushback_holds_grpcios_retry_for_as_long_as_it_says(live):
    policy = json.loads(json.dumps(A6_POLICY))
    policy["methodConfig"][0]["retryPolicy"]["retryableStatusCodes"] = ["RESOURCE_EXHAUSTED"]

    async def scenario():
        async with live.serve(model=parse_model("fixed:base_delay=0"), grpc_port=0) as app:
            await put_rule(app.port, {"status": 429, "retry_after": 1, "first_attempts": 1})
            async with channel(app.grpc_port, policy) as chan:
                await chan.unary_unary(FULL_METHOD)(b"", timeout=20)
            (first_s, _, _), (second_s, number, status) = app.faults.recent
            assert (number, status) == (2, None)
            assert second_s - first_s >= 1.0  # the backoff alone would be at most 0.12 s

    live.run(scenario())


def test_a_call_whose_client_gave_up_stays_in_the_model_as_abandoned(live):
    async def scenario():
        async with live.serve(model=parse_model("fixed:base_delay=1s"), grpc_port=0) as app:
            async with channel(app.grpc_port) as chan:
                with pytest.raises(aio.AioRpcError) as late:
                    await chan.unary_unary(FULL_METHOD)(b"", timeout=0.1)
            assert late.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
            await live.eventually(lambda: app.abandoned_in_flight == 1)
            assert app.driver.in_flight == 1
            await live.eventually(lambda: live.metric(app, REQUESTS, outcome="abandoned") == 1)
            assert (app.abandoned_in_flight, app.driver.in_flight) == (0, 0)

    live.run(scenario())


def test_with_cancel_on_disconnect_it_leaves_the_model_at_once(live):
    async def scenario():
        config = {"model": parse_model("fixed:base_delay=1m"), "grpc_port": 0, "cancel_on_disconnect": True}
        async with live.serve(**config) as app:
            async with channel(app.grpc_port) as chan:
                with pytest.raises(aio.AioRpcError):
                    await chan.unary_unary(FULL_METHOD)(b"", timeout=0.1)
            await live.eventually(lambda: app.driver.in_flight == 0)
            assert live.metric(app, REQUESTS, outcome="abandoned") == 1

    live.run(scenario())


def test_a_rejection_of_the_model_and_a_shutdown_are_unavailable(live):
    async def scenario():
        async with live.serve(model=parse_model("fixed:base_delay=1m"), grpc_port=0) as app:
            chan = channel(app.grpc_port)
            waiting = chan.unary_unary(FULL_METHOD)(b"", timeout=30)
            await live.eventually(lambda: app.driver.in_flight == 1)
            await app.stop()
            with pytest.raises(aio.AioRpcError) as stopped:
                await waiting
            await chan.close()
        assert stopped.value.code() is grpc.StatusCode.UNAVAILABLE
        assert "shutting down" in stopped.value.details()

    live.run(scenario())


def test_server_reflection_describes_the_service(live):
    def reflect(port: int) -> tuple[list[str], str]:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as chan:
            database = ProtoReflectionDescriptorDatabase(chan)
            services = list(database.get_services())
            found = database.FindFileContainingSymbol(REQUEST)
        return services, found.name

    async def scenario():
        async with live.serve(model=parse_model("fixed:base_delay=0"), grpc_port=0) as app:
            return await asyncio.to_thread(reflect, app.grpc_port)

    services, file_name = live.run(scenario())
    assert SERVICE in services
    assert file_name == "retrystorm/target/v1/target.proto"


def test_the_attempt_number_is_one_more_than_the_previous_attempts():
    assert attempt_number(()) == 1
    assert attempt_number((("x", "1"), ("grpc-previous-rpc-attempts", "3"))) == 4
    assert attempt_number((("retrystorm-attempt", "3"),)) == 3
    with pytest.raises(UserError, match="grpc-previous-rpc-attempts: got 'x'"):
        attempt_number((("grpc-previous-rpc-attempts", "x"),))
    with pytest.raises(UserError, match="retrystorm-attempt: got '0', expected a whole number >= 1"):
        attempt_number((("retrystorm-attempt", "0"),))


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (429, "RESOURCE_EXHAUSTED"),
        (500, "INTERNAL"),
        (501, "UNIMPLEMENTED"),
        (503, "UNAVAILABLE"),
        (504, "UNAVAILABLE"),
    ],
)
def test_a_rules_status_becomes_a_grpc_code(status, code):
    assert grpc_code(status).name == code


def test_a_target_process_serves_grpc_and_a_pause_holds_its_calls(target_process):
    process = target_process("--model", "fixed:base_delay=10ms", "--grpc-port", "0")
    line = process.first_line
    grpc_port = int(line.split("gRPC on 127.0.0.1:")[1].split()[0])
    with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as chan:
        echo = chan.unary_unary(FULL_METHOD)
        assert echo(b"\n\x01x", timeout=10) == b"\n\x01x"
        process.proc.send_signal(signal.SIGSTOP)
        try:
            with pytest.raises(grpc.RpcError) as frozen:
                echo(b"", timeout=0.3)
        finally:
            process.proc.send_signal(signal.SIGCONT)
        assert frozen.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
        assert echo(b"", timeout=10) == b""


def test_without_grpcio_the_grpc_port_is_one_line_naming_the_extra(live, monkeypatch):
    monkeypatch.setitem(sys.modules, "retrystorm.target.service.grpc_front", None)  # import raises ImportError

    async def scenario():
        async with live.serve(model=parse_model("fixed:base_delay=0"), grpc_port=0):
            pass

    with pytest.raises(UserError, match=r"--grpc-port needs grpcio and protobuf .*pip install 'retrystorm\[grpc\]'"):
        live.run(scenario())
