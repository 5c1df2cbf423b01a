"""Fault injection through the admin API, over real sockets: PUT/GET/DELETE /admin/faults."""

import json

import pytest

from retrystorm.target.models import parse_model
from retrystorm.target.probe import fetch

INJECTED = "retrystorm_target_injected_failures_total"
REQUESTS = "retrystorm_target_requests_total"


async def put_rule(port, rule):
    reply = await fetch(port, "/admin/faults", "PUT", json.dumps(rule).encode())
    assert reply.status == 200, reply.text
    return json.loads(reply.body)


async def attempt(port, number=None):
    headers = None if number is None else {"Retrystorm-Attempt": str(number)}
    return await fetch(port, "/api", headers=headers)


def test_off_by_default(live):
    async def scenario():
        async with live.serve(model=parse_model("fixed:base_delay=0")) as app:
            reply = await fetch(app.port, "/admin/faults")
            assert json.loads(reply.body) == {"rule": None, "injected": 0, "passed": 0, "remaining": None, "recent": []}
            assert (await attempt(app.port)).status == 200
            assert (await attempt(app.port, "nonsense")).status == 200  # the header is read only by a rule

    live.run(scenario())


def test_the_first_attempts_fail_at_once_with_retry_after(live):
    async def scenario():
        async with live.serve(model=parse_model("fixed:base_delay=1m")) as app:
            document = await put_rule(app.port, {"first_attempts": 2, "status": 503, "retry_after": 2})
            assert document["rule"] == {
                "status": 503, "retry_after": 2, "first_attempts": 2, "probability": 1.0, "count": None,
            }  # fmt: skip
            for number in (None, 2):  # no header: attempt 1
                failed = await attempt(app.port, number)
                assert (failed.status, failed.headers["retry-after"]) == (503, "2")
                assert failed.text == "failed on purpose: fault rule of PUT /admin/faults (503)\n"
            assert app.driver.in_flight == 0  # a failed attempt never enters the model
            app.driver.switch(parse_model("fixed:base_delay=0"))
            assert (await attempt(app.port, 3)).status == 200
            assert live.metric(app, INJECTED, status="503") == 2
            assert live.metric(app, REQUESTS, outcome="ok") == 1
            document = json.loads((await fetch(app.port, "/admin/faults")).body)
            assert [(e["attempt"], e["status"]) for e in document["recent"]] == [(1, 503), (2, 503), (3, None)]
            assert (document["injected"], document["passed"]) == (2, 1)

    live.run(scenario())


@pytest.mark.parametrize("status", [429, 500, 502, 599])
def test_any_retryable_status_with_its_reason(live, status):
    async def scenario():
        async with live.serve(model=parse_model("fixed:base_delay=0")) as app:
            await put_rule(app.port, {"status": status, "count": 1})
            failed = await attempt(app.port)
            assert failed.status == status
            assert "retry-after" not in failed.headers
            assert (await attempt(app.port)).status == 200  # count 1: the second passes
            assert json.loads((await fetch(app.port, "/admin/faults")).body)["remaining"] == 0
            assert live.metric(app, INJECTED, status=str(status)) == 1

    live.run(scenario())


def test_delete_disarms_and_keeps_the_counts_reset_zeroes_the_metric(live):
    async def scenario():
        async with live.serve(model=parse_model("fixed:base_delay=0")) as app:
            await put_rule(app.port, {})
            assert (await attempt(app.port)).status == 503
            reply = await fetch(app.port, "/admin/faults", "DELETE")
            assert reply.status == 200
            assert json.loads(reply.body)["rule"] is None
            assert json.loads(reply.body)["injected"] == 1
            assert (await attempt(app.port)).status == 200
            assert live.metric(app, INJECTED, status="503") == 1
            await fetch(app.port, "/admin/reset", "POST")
            assert live.metric(app, INJECTED, status="503") == 0

    live.run(scenario())


def test_a_bad_attempt_header_gets_400_while_a_rule_is_armed(live):
    async def scenario():
        async with live.serve(model=parse_model("fixed:base_delay=0")) as app:
            await put_rule(app.port, {"first_attempts": 1})
            reply = await attempt(app.port, "zero")
            assert reply.status == 400
            assert reply.text == "Retrystorm-Attempt: got 'zero', expected a whole number >= 1 (absent: attempt 1)\n"
            assert live.metric(app, "retrystorm_target_bad_requests_total", status="400") == 1

    live.run(scenario())


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"", "body: empty; send a JSON object"),
        (b"[503]", "body: got a JSON list, expected a JSON object"),
        (b'{"status": 404}', "status: got 404, expected 429 or 500 to 599"),
        (b'{"probability": NaN}', "NaN is not a JSON number"),
        (b'{"first_attempts": 2, "after": 1}', "body: unknown field 'after'; accepted: status, retry_after"),
        # Python reads no whole number of over 4,300 digits: this was a 500
        (b'{"count": 1' + b"0" * 5000 + b"}", "count: got a whole number of 5,001 digits, expected a whole number"),
        (b'{"first_attempts": -' + b"9" * 5000 + b"}", "first_attempts: got a whole number of 5,000 digits"),
        (b'{"probability": 1' + b"0" * 400 + b"}", "probability: got a whole number of 401 digits, expected a number"),
        (b'{"retry_after": 1' + b"0" * 30 + b"}", "retry_after: got a whole number of 31 digits, expected"),
        (b'{"status": 5' + b"0" * 5000 + b"}", "status: got a whole number of 5,001 digits, expected 429 or 500"),
        (b'{"count": 1e300}', "count: got 1e+300, expected a whole number from 1 to 1,000,000,000"),
    ],
)
def test_bad_rules_get_400_and_leave_the_rule_as_it_was(live, body, message):
    async def scenario():
        async with live.serve() as app:
            await put_rule(app.port, {"status": 500, "count": 3})
            reply = await fetch(app.port, "/admin/faults", "PUT", body)
            assert reply.status == 400
            assert reply.text.count("\n") == 1
            assert message in reply.text
            assert app.faults.rule is not None
            assert (app.faults.rule.status, app.faults.rule.count) == (500, 3)

    live.run(scenario())
