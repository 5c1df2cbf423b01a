"""GET /api live, through real sockets, with the model's time set by hand.

The service runs on a manual clock: its clock task still sleeps and wakes on the real
event loop, but every evaluation reads the time the test has set, so what is released
when, and the response times the service records, are exact.
"""

import asyncio

import pytest

from target.models import parse_model
from target.probe import encode_request, read_reply, send_and_leave

ELAPSED_SUM = "retrystorm_target_response_time_seconds_sum"
REQUESTS = "retrystorm_target_requests_total"


async def open_requests(port, count):
    """``count`` connections, each with one GET /api sent."""
    streams = [await asyncio.open_connection("127.0.0.1", port) for _ in range(count)]
    for _, writer in streams:
        writer.write(encode_request("GET", "/api"))
    return streams


async def replies(streams):
    return [await read_reply(reader) for reader, _ in streams]


def close_all(streams):
    for _, writer in streams:
        writer.close()


async def hold(seconds=0.2):
    """Let the clock task evaluate the model several times at the current manual time."""
    await asyncio.sleep(seconds)


def test_a_request_ends_at_the_first_tick_past_the_base_delay(run, serving, clock, metric, eventually):
    async def scenario():
        async with serving(clock) as app:  # the seed: 100 ms, tick 50 ms
            streams = await open_requests(app.port, 1)
            await eventually(lambda: app.driver.in_flight == 1)
            clock.now_s = 0.1  # age 0.1 is not past the delay
            await hold()
            assert app.driver.in_flight == 1
            clock.now_s = 0.15
            [reply] = await replies(streams)
            assert (reply.status, reply.body) == (200, b"OK")
            assert metric(app, ELAPSED_SUM, outcome="ok") == pytest.approx(0.15)
            close_all(streams)

    run(scenario())


def test_above_the_limit_the_delay_grows_with_the_load(run, serving, clock, metric, eventually):
    async def scenario():
        async with serving(clock) as app:
            streams = await open_requests(app.port, 60)
            await eventually(lambda: app.driver.in_flight == 60)
            # 30 above the limit with k = 15: two factors of 1.05
            assert metric(app, "retrystorm_target_delay_seconds") == pytest.approx(0.1 * 1.05**2)
            clock.now_s = 0.11  # past the base delay, not past 0.11025
            await hold()
            assert app.driver.in_flight == 60
            clock.now_s = 0.1125
            answered = await replies(streams)
            assert {reply.status for reply in answered} == {200}
            assert metric(app, REQUESTS, outcome="ok") == 60
            assert metric(app, ELAPSED_SUM, outcome="ok") == pytest.approx(60 * 0.1125)
            close_all(streams)

    run(scenario())


def test_the_delay_is_clamped_at_max_delay(run, serving, clock, metric, eventually):
    async def scenario():
        model = "exponential:limit=0,factor=2,k=1,max_delay=300ms"
        async with serving(clock, model=parse_model(model)) as app:
            streams = await open_requests(app.port, 10)
            await eventually(lambda: app.driver.in_flight == 10)
            assert metric(app, "retrystorm_target_delay_seconds") == 0.3  # not 0.1 * 2**10
            clock.now_s = 0.3
            await hold()
            assert app.driver.in_flight == 10
            clock.now_s = 0.35
            assert {reply.status for reply in await replies(streams)} == {200}
            close_all(streams)

    run(scenario())


def test_abandoned_requests_keep_their_place_until_released(run, serving, clock, metric, eventually):
    async def scenario():
        async with serving(clock) as app:
            for _ in range(5):
                await send_and_leave(app.port)
            staying = await open_requests(app.port, 1)
            await eventually(lambda: metric(app, "retrystorm_target_in_flight_requests") == 6)
            await eventually(lambda: metric(app, "retrystorm_target_abandoned_in_flight_requests") == 5)
            assert metric(app, "retrystorm_target_delay_seconds") == 0.1
            clock.now_s = 0.15
            [reply] = await replies(staying)
            assert reply.status == 200
            await eventually(lambda: app.driver.in_flight == 0)
            assert metric(app, REQUESTS, outcome="abandoned") == 5
            assert metric(app, REQUESTS, outcome="ok") == 1
            assert metric(app, "retrystorm_target_abandoned_in_flight_requests") == 0
            close_all(staying)

    run(scenario())


def test_cancel_on_disconnect_frees_the_model_at_once(run, serving, clock, metric, eventually):
    async def scenario():
        async with serving(clock, cancel_on_disconnect=True) as app:
            for _ in range(5):
                await send_and_leave(app.port)
            await eventually(lambda: metric(app, REQUESTS, outcome="abandoned") == 5)
            assert app.driver.in_flight == 0  # the clock never moved
            assert metric(app, "retrystorm_target_abandoned_in_flight_requests") == 0

    run(scenario())


def test_the_queue_model_rejects_with_503(run, serving, clock, metric, eventually):
    async def scenario():
        model = parse_model("queue:workers=1,service_time=1s,reject_after=50ms,tick=50ms")
        async with serving(clock, model=model) as app:
            first = await open_requests(app.port, 1)
            await eventually(lambda: app.driver.in_flight == 1)
            second = await open_requests(app.port, 1)
            await eventually(lambda: app.driver.in_flight == 2)
            clock.now_s = 0.05
            [reply] = await replies(second)
            assert reply.status == 503
            assert "rejected" in reply.text
            assert metric(app, REQUESTS, outcome="rejected") == 1
            assert app.driver.in_flight == 1  # the first still holds the worker
            close_all(first + second)

    run(scenario())


def test_fixed_zero_delay_answers_without_the_clock_task(run, serving, clock, metric):
    async def scenario():
        async with serving(clock, model=parse_model("fixed:base_delay=0")) as app:
            await app.driver.stop()  # nothing left to wake up
            streams = await open_requests(app.port, 3)
            assert [reply.status for reply in await replies(streams)] == [200, 200, 200]
            assert metric(app, ELAPSED_SUM, outcome="ok") == 0
            close_all(streams)

    run(scenario())


def test_a_frozen_clock_catches_up_in_one_evaluation(run, serving, clock, metric, eventually):
    async def scenario():
        async with serving(clock) as app:
            streams = await open_requests(app.port, 40)
            await eventually(lambda: app.driver.in_flight == 40)
            clock.now_s = 30.0  # as after a 30 s SIGSTOP: the overdue wake-up sees the real time
            assert {reply.status for reply in await replies(streams)} == {200}
            assert metric(app, ELAPSED_SUM, outcome="ok") == pytest.approx(40 * 30.0)
            close_all(streams)

    run(scenario())
