"""A capacity cut through the admin API (the live ``slow`` trigger), over real sockets, on a manual clock.

``PUT /admin/capacity`` runs the model on a clock of its own at that fraction of real
time; ``DELETE /admin/capacity`` and ``POST /admin/reset`` restore full capacity.
"""

import asyncio
import json

import pytest

from retrystorm.target.models import parse_model
from retrystorm.target.probe import fetch, read_reply


async def capacity(port, method="GET", body=None):
    reply = await fetch(port, "/admin/capacity", method, b"" if body is None else json.dumps(body).encode())
    return reply.status, json.loads(reply.body) if reply.status == 200 else reply.text


async def settle():
    """Let the clock task evaluate the model at the current manual time."""
    await asyncio.sleep(0.2)


def test_full_capacity_by_default_and_a_cut_stretches_every_delay(live):
    async def scenario():
        async with live.serve(live.clock, model=parse_model("fixed:base_delay=1s")) as app:
            assert await capacity(app.port) == (200, {"capacity": 1.0})
            assert await capacity(app.port, "PUT", {"capacity": 0.5}) == (200, {"capacity": 0.5})
            [(reader, writer)] = await live.hold(app, 1)  # admitted at 0: 1 s of work at half speed
            live.clock.now_s = 1.999
            await settle()
            assert app.driver.in_flight == 1
            live.clock.now_s = 2.0
            reply = await read_reply(reader)
            assert reply.status == 200
            writer.close()

    live.run(scenario())


def test_restored_capacity_speeds_up_the_work_in_progress(live):
    async def scenario():
        async with live.serve(live.clock, model=parse_model("fixed:base_delay=1s")) as app:
            await capacity(app.port, "PUT", {"capacity": 0.25})
            [(reader, writer)] = await live.hold(app, 1)
            live.clock.now_s = 2.0  # half of its work done at a quarter of the speed
            assert await capacity(app.port, "DELETE") == (200, {"capacity": 1.0})
            live.clock.now_s = 2.499
            await settle()
            assert app.driver.in_flight == 1
            live.clock.now_s = 2.5  # the other half at full speed
            assert (await read_reply(reader)).status == 200
            writer.close()

    live.run(scenario())


def test_reset_restores_full_capacity_and_a_model_switch_keeps_the_cut(live):
    async def scenario():
        async with live.serve(live.clock, model=parse_model("fixed:base_delay=1s")) as app:
            await capacity(app.port, "PUT", {"capacity": 0.4})
            app.driver.switch(parse_model("queue:workers=2"))  # another kind: a new server, the cut stays
            assert await capacity(app.port) == (200, {"capacity": 0.4})
            assert app.driver.delay_s == pytest.approx(app.driver.server.inner.delay_s / 0.4)
            reply = await fetch(app.port, "/admin/reset", "POST")
            assert reply.status == 200
            assert await capacity(app.port) == (200, {"capacity": 1.0})

    live.run(scenario())


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"capacity": 0}, "capacity: got 0, expected a number >= 0.001 and <= 1"),
        ({"capacity": 5e-324}, "capacity: got 5e-324, expected a number >= 0.001 and <= 1"),  # stopped the clock
        ({"capacity": 0.0009}, "capacity: got 0.0009, expected a number >= 0.001 and <= 1"),
        ({"capacity": 1.5}, "capacity: got 1.5, expected a number >= 0.001 and <= 1"),
        ({"capacity": "half"}, "capacity: got 'half', expected a number >= 0.001 and <= 1"),
        ({}, "capacity: required"),
        ({"capacity": 0.5, "for": 3}, "for"),
    ],
)
def test_a_bad_capacity_is_one_line_naming_the_field(live, body, message):
    async def scenario():
        async with live.serve(model=parse_model("fixed:base_delay=0")) as app:
            status, text = await capacity(app.port, "PUT", body)
            assert status == 400
            assert message in text
            assert text.count("\n") == 1
            assert await capacity(app.port) == (200, {"capacity": 1.0})

    live.run(scenario())


def test_at_the_floor_the_model_still_answers_in_finite_json(live):
    """At 5e-324 the server's clock stopped: /admin/model said ``Infinity`` (not JSON) and /api never answered."""

    async def scenario():
        async with live.serve(live.clock, model=parse_model("fixed:base_delay=1ms")) as app:
            assert await capacity(app.port, "PUT", {"capacity": 0.001}) == (200, {"capacity": 0.001})
            [(reader, writer)] = await live.hold(app, 1)  # 1 ms of work at 1/1000 of the speed: 1 s
            reply = await fetch(app.port, "/admin/model")
            document = json.loads(reply.body, parse_constant=lambda name: pytest.fail(f"not JSON: {name}"))
            assert document["delay_seconds"] == pytest.approx(1.0)
            live.clock.now_s = 1.0
            assert (await read_reply(reader)).status == 200
            writer.close()

    live.run(scenario())
