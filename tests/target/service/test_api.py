"""GET /api live, through real sockets, with the model's time set by hand.

The service runs on a manual clock: its clock task still sleeps and wakes on the real
event loop, but every evaluation reads the time the test has set, so what is released
when, and the response times the service records, are exact.
"""

import asyncio

import pytest

from retrystorm.target.models import parse_model
from retrystorm.target.probe import read_reply, send_and_leave

ELAPSED_SUM = "retrystorm_target_response_time_seconds_sum"
REQUESTS = "retrystorm_target_requests_total"


async def replies(streams):
    return [await read_reply(reader) for reader, _ in streams]


def close_all(streams):
    for _, writer in streams:
        writer.close()


async def hold(seconds=0.2):
    """Let the clock task evaluate the model several times at the current manual time."""
    await asyncio.sleep(seconds)


def test_a_request_ends_at_its_own_check_that_reaches_the_base_delay(live):
    async def scenario():
        async with live.serve(live.clock) as app:  # the seed: 100 ms, checked every 50 ms
            streams = await live.hold(app, 1)
            live.clock.now_s = 0.099  # its second check, at 0.1, has not come
            await hold()
            assert app.driver.in_flight == 1
            live.clock.now_s = 0.1
            [reply] = await replies(streams)
            assert (reply.status, reply.body) == (200, b"OK")
            assert live.metric(app, ELAPSED_SUM, outcome="ok") == pytest.approx(0.1)
            close_all(streams)

    live.run(scenario())


def test_above_the_limit_the_delay_grows_with_the_load(live):
    async def scenario():
        async with live.serve(live.clock) as app:
            streams = await live.hold(app, 60)
            # 30 above the limit with k = 15: two factors of 1.05
            assert live.metric(app, "retrystorm_target_delay_seconds") == pytest.approx(0.1 * 1.05**2)
            live.clock.now_s = 0.149  # the check at 0.1 is short of 0.11025, the next is at 0.15
            await hold()
            assert app.driver.in_flight == 60
            live.clock.now_s = 0.15
            answered = await replies(streams)
            assert {reply.status for reply in answered} == {200}
            assert live.metric(app, REQUESTS, outcome="ok") == 60
            assert live.metric(app, ELAPSED_SUM, outcome="ok") == pytest.approx(60 * 0.15)
            close_all(streams)

    live.run(scenario())


def test_the_delay_is_clamped_at_max_delay(live):
    async def scenario():
        model = "exponential:limit=0,factor=2,k=1,max_delay=300ms"
        async with live.serve(live.clock, model=parse_model(model)) as app:
            streams = await live.hold(app, 10)
            assert live.metric(app, "retrystorm_target_delay_seconds") == 0.3  # not 0.1 * 2**10
            live.clock.now_s = 0.299  # the check at 0.25 is short of 0.3
            await hold()
            assert app.driver.in_flight == 10
            live.clock.now_s = 0.3
            assert {reply.status for reply in await replies(streams)} == {200}
            close_all(streams)

    live.run(scenario())


def test_served_live_the_go_overflow_lets_one_request_through_per_admission_past_it(live):
    async def scenario():
        model = parse_model("exponential:limit=0,factor=1000,k=1,overflow=go")  # 1e8 s at 3, overflowed at 4
        async with live.serve(live.clock, model=model) as app:
            stuck = await live.hold(app, 3)
            live.clock.now_s = 1.0
            await hold()
            assert app.driver.in_flight == 3
            live.clock.now_s = 1.01
            fourth = await live.hold(app, 1)  # admitted at 1.01: past the overflow point
            live.clock.now_s = 1.05  # the next check of any request: the three stuck ones, oldest first
            assert (await read_reply(stuck[0][0])).status == 200
            await hold()
            assert app.driver.in_flight == 3  # below the point again: stuck
            assert live.metric(app, REQUESTS, outcome="ok") == 1
            close_all(stuck + fourth)

    live.run(scenario())


def test_abandoned_requests_keep_their_place_until_released(live):
    async def scenario():
        async with live.serve(live.clock) as app:
            for _ in range(5):
                await send_and_leave(app.port)
            staying = await live.open_requests(app.port, 1)
            await live.eventually(lambda: live.metric(app, "retrystorm_target_in_flight_requests") == 6)
            await live.eventually(lambda: live.metric(app, "retrystorm_target_abandoned_in_flight_requests") == 5)
            assert live.metric(app, "retrystorm_target_delay_seconds") == 0.1
            live.clock.now_s = 0.15
            [reply] = await replies(staying)
            assert reply.status == 200
            await live.eventually(lambda: app.driver.in_flight == 0)
            assert live.metric(app, REQUESTS, outcome="abandoned") == 5
            assert live.metric(app, REQUESTS, outcome="ok") == 1
            assert live.metric(app, "retrystorm_target_abandoned_in_flight_requests") == 0
            close_all(staying)

    live.run(scenario())


def test_cancel_on_disconnect_frees_the_model_at_once(live):
    async def scenario():
        async with live.serve(live.clock, cancel_on_disconnect=True) as app:
            for _ in range(5):
                await send_and_leave(app.port)
            await live.eventually(lambda: live.metric(app, REQUESTS, outcome="abandoned") == 5)
            assert app.driver.in_flight == 0  # the clock never moved
            assert live.metric(app, "retrystorm_target_abandoned_in_flight_requests") == 0

    live.run(scenario())


def test_the_queue_model_rejects_with_503(live):
    async def scenario():
        model = parse_model("queue:workers=1,service_time=1s,reject_after=50ms,tick=50ms")
        async with live.serve(live.clock, model=model) as app:
            first = await live.hold(app, 1)
            second = await live.hold(app, 1)
            live.clock.now_s = 0.05
            [reply] = await replies(second)
            assert reply.status == 503
            assert "rejected" in reply.text
            assert live.metric(app, REQUESTS, outcome="rejected") == 1
            assert app.driver.in_flight == 1  # the first still holds the worker
            close_all(first + second)

    live.run(scenario())


def test_fixed_zero_delay_answers_without_the_clock_task(live):
    async def scenario():
        async with live.serve(live.clock, model=parse_model("fixed:base_delay=0")) as app:
            await app.driver.stop()  # nothing left to wake up
            streams = await live.open_requests(app.port, 3)
            assert [reply.status for reply in await replies(streams)] == [200, 200, 200]
            assert live.metric(app, ELAPSED_SUM, outcome="ok") == 0
            close_all(streams)

    live.run(scenario())


def test_a_frozen_clock_catches_up_in_one_evaluation(live):
    async def scenario():
        async with live.serve(live.clock) as app:
            streams = await live.hold(app, 40)
            live.clock.now_s = 30.0  # as after a 30 s SIGSTOP: the overdue wake-up sees the real time
            assert {reply.status for reply in await replies(streams)} == {200}
            assert live.metric(app, ELAPSED_SUM, outcome="ok") == pytest.approx(40 * 30.0)
            close_all(streams)

    live.run(scenario())
