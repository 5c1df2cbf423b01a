"""The admin API: read and switch the model live, reset counters, reject bad bodies."""

import json

import pytest

from retrystorm.target.models import MODELS
from retrystorm.target.probe import fetch, read_reply

REQUESTS = "retrystorm_target_requests_total"


def test_get_model_describes_the_running_model(live):
    async def scenario():
        async with live.serve() as app:
            reply = await fetch(app.port, "/admin/model")
            document = json.loads(reply.body)
            assert reply.status == 200
            assert document["spec"] == (
                "exponential:base_delay=100ms,limit=30,factor=1.05,k=15,tick=50ms,max_delay=10m,overflow=clamp"
            )
            assert document["model"]["limit"] == "30"
            assert (document["in_flight"], document["delay_seconds"]) == (0, 0.1)

    live.run(scenario())


@pytest.mark.parametrize(
    "body",
    [
        {"spec": "exponential:limit=40"},
        {"name": "exponential", "limit": 40},
        {"name": "exponential", "limit": "40", "base_delay": 0.1},
        {"name": "exponential", "limit": 40, "base_delay": "100ms", "tick": 0.001},
    ],
)
def test_put_model_switches_in_place(live, body):
    async def scenario():
        async with live.serve() as app:
            reply = await fetch(app.port, "/admin/model", "PUT", json.dumps(body).encode())
            assert reply.status == 200, reply.text
            assert json.loads(reply.body)["model"]["limit"] == "40"
            assert app.driver.model.limit == 40
            assert live.metric(app, "retrystorm_target_model_parameter", model="exponential", parameter="limit") == 40

    live.run(scenario())


def test_switching_the_kind_keeps_requests_in_flight(live):
    async def scenario():
        async with live.serve(live.clock) as app:
            [(reader, writer)] = await live.hold(app, 1)
            reply = await fetch(app.port, "/admin/model", "PUT", b'{"spec": "fixed:base_delay=0"}')
            assert reply.status == 200
            assert (await read_reply(reader)).status == 200  # re-admitted at its arrival time, due at once
            assert live.metric(app, "retrystorm_target_model_info", model="fixed", spec="fixed:base_delay=0s") == 1
            writer.close()

    live.run(scenario())


LIMIT = "expected a whole number >= 0 and <= 1000000"
#: The registered models, as the refusals list them (a model registered later is listed too).
NAMES = ", ".join(MODELS.names())
BAD_MODEL_BODIES = [
    (b"", "body: empty; send a JSON object"),
    (b"{nope", "body: not valid JSON"),
    (b"[1, 2]", "body: got a JSON list, expected a JSON object"),
    (b'{"limit": 3}', f"body: needs 'name' (one of {NAMES}) or 'spec'"),
    (b'{"name": "quadratic"}', f"unknown model 'quadratic'; valid: {NAMES}"),
    (b'{"name": 5}', f"unknown model 5; valid: {NAMES}"),
    (b'{"name": "exponential", "limit": true}', f"model 'exponential': limit: got True, {LIMIT}"),
    (b'{"name": "exponential", "limit": -1}', "limit: got -1, expected a whole number >= 0"),
    (b'{"name": "exponential", "limit": 1.5}', "limit: got 1.5, expected a whole number"),
    (b'{"name": "exponential", "workers": 3}', "unknown parameter 'workers'; accepted: base_delay"),
    (b'{"name": "exponential", "factor": NaN}', "NaN is not a JSON number"),
    (b'{"name": "exponential", "k": 1e999}', "1e999 is beyond the range of a number"),
    (b'{"name": "exponential", "tick": "1us"}', "tick: got 1us, expected a duration"),
    (b'{"name": "exponential", "tick": 0.0001}', "tick: got 0.0001, expected a duration (a number with a unit"),
    (b'{"name": "fixed", "base_delay": "forever"}', "base_delay: got inf, expected a finite duration >= 0 and <= 1h"),
    (b'{"spec": "exponential:factor=1e999"}', "factor: got inf, expected a finite number >= 1 and <= 1000"),
    (b'{"name": "exponential", "base_delay": "1s", "max_delay": "10ms"}', "max_delay: must be at least"),
    (b'{"spec": "queue:workers=0"}', "workers: got 0, expected a whole number >= 1"),
    (b'{"spec": 5}', "spec: got 5, expected a spec string"),
    # ceilings: one PUT of these held every request for ever (or was a 500)
    (b'{"name": "exponential", "max_delay": 1e300}', "max_delay: got"),
    (b'{"spec": "exponential:max_delay=1e300s"}', "max_delay: got"),
    (b'{"name": "exponential", "max_delay": "2h"}', "max_delay: got 2h, expected a duration"),
    (b'{"name": "queue", "workers": 1000000000000}', "workers: got 1000000000000, expected a whole number >= 1 and"),
    (b'{"name": "exponential", "limit": 1' + b"0" * 5000 + b"}", f"limit: got a whole number of 5,001 digits, {LIMIT}"),
    (
        b'{"name": "exponential", "k": 1' + b"0" * 5000 + b"}",
        "k: got a whole number of 5,001 digits, expected a number",
    ),
    (b'{"name": "fixed", "base_delay": 1' + b"0" * 400 + b"}", "base_delay: got a whole number of 401 digits"),
    (b'{"name": "exponential", "k": 1' + b"0" * 400 + b"}", "k: got a whole number of 401 digits"),
    (
        b'{"spec": "exponential:limit=1' + b"0" * 5000 + b'"}',
        "limit: got '1000000000000",
    ),
    (
        b'{"spec": "queue:tick=' + b"9" * 5000 + b's"}',
        "tick: got '999999999",
    ),
    (b'{"name": "queue", "progress_per_tick": 2000000}', "progress_per_tick: got 2000000, expected a whole number"),
    (b'{"spec": "fixed", "name": "fixed"}', "body: 'spec' comes alone; also got 'name'"),
]
BAD_RESET_BODIES = [
    (b"\r\n", "body: empty; send a JSON object"),
    (b'{"release_in_flight": "yes"}', "release_in_flight: got 'yes', expected true or false"),
    (b'{"drop": true}', "unknown field 'drop'; accepted: release_in_flight"),
]


@pytest.mark.parametrize(
    ("method", "path", "body", "message"),
    [("PUT", "/admin/model", *case) for case in BAD_MODEL_BODIES]
    + [("POST", "/admin/reset", *case) for case in BAD_RESET_BODIES],
)
def test_bad_bodies_get_400_naming_the_field(live, method, path, body, message):
    async def scenario():
        async with live.serve() as app:
            reply = await fetch(app.port, path, method, body)
            assert reply.status == 400
            assert reply.text.count("\n") == 1
            assert message in reply.text
            assert app.driver.model.spec().startswith("exponential:base_delay=100ms,limit=30")

    live.run(scenario())


def test_reset_zeroes_the_counters(live):
    async def scenario():
        async with live.serve(model=_fixed_zero()) as app:
            assert (await fetch(app.port, "/api")).status == 200
            assert live.metric(app, REQUESTS, outcome="ok") == 1
            reply = await fetch(app.port, "/admin/reset", "POST")
            assert json.loads(reply.body) == {"reset": True, "released": 0}
            assert live.metric(app, REQUESTS, outcome="ok") == 0
            assert live.metric(app, "retrystorm_target_response_time_seconds_count", outcome="ok") == 0
            assert (await fetch(app.port, "/api")).status == 200
            assert live.metric(app, REQUESTS, outcome="ok") == 1

    live.run(scenario())


def test_reset_can_release_everything_in_flight(live):
    async def scenario():
        async with live.serve() as app:
            app.driver.switch(_parse("fixed:base_delay=1m"))
            [(reader, writer)] = await live.hold(app, 1)
            reply = await fetch(app.port, "/admin/reset", "POST", b'{"release_in_flight": true}')
            assert json.loads(reply.body) == {"reset": True, "released": 1}
            released = await read_reply(reader)
            assert (released.status, released.text) == (503, "released by POST /admin/reset\n")
            writer.close()

    live.run(scenario())


def _parse(spec):
    from retrystorm.target.models import parse_model

    return parse_model(spec)


def _fixed_zero():
    return _parse("fixed:base_delay=0")
