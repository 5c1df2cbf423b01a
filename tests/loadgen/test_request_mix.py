"""The request mix: the one-line form, its JSON twin, weighted draws, ceilings, retry_on."""

from __future__ import annotations

import random
from collections import Counter
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrystorm.errors import SpecError, UserError
from retrystorm.loadgen.options import load_options
from retrystorm.loadgen.request_mix import (
    MAX_REQUESTS,
    RequestMix,
    RequestSpec,
    parse_request_line,
    parse_request_lines,
    split_requests,
)
from retrystorm.loadgen.strategies.retry_on import RetryOn


def test_the_one_line_form_and_its_json_twin_read_the_same_request():
    line = 'POST /orders weight=3 name=create header=Content-Type:application/json body={"qty": 1, "note": "a b"}'
    request = parse_request_line(line)
    assert request == RequestSpec(
        method="POST", path="/orders", name="create", weight=3,
        headers={"Content-Type": "application/json"}, body='{"qty": 1, "note": "a b"}',
    )  # fmt: skip
    assert parse_request_line(request.to_json()) == request
    assert parse_request_line("get /x").name == "GET /x"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("FETCH /x", "method: got 'FETCH', expected one of GET"),
        ("GET x", "path: got 'x', expected a path starting with /"),
        ("GET /x weight=0", "weight: got 0, expected a whole number from 1 to 1,000,000"),
        ("GET /x weight=2000000", "weight: got 2000000"),
        ("GET /x colour=red", "'colour=red': expected weight=N, name=NAME, header=NAME:VALUE or body=TEXT"),
        ("GET /x header=Host:evil", "headers: Host is set by the load generator itself"),
        ('{"method": "GET", "path": "/x", "verb": 1}', "got ['verb'], expected the fields"),
        ("GET", "got 'GET', expected METHOD PATH"),
    ],
)
def test_a_bad_request_line_is_one_line_naming_the_field(line, message):
    with pytest.raises(SpecError, match="^" + message.replace("(", r"\(").replace("[", r"\[")):
        parse_request_line(line)


def test_draws_follow_the_weights_and_a_single_request_draws_nothing():
    mix = RequestMix([RequestSpec(path="/a", weight=3), RequestSpec(path="/b", weight=7)])
    rng = random.Random(5)
    drawn = Counter(mix.choose(rng).path for _ in range(20_000))
    assert 0.28 < drawn["/a"] / 20_000 < 0.32
    single, rng = RequestMix([RequestSpec()]), random.Random(5)
    single.choose(rng)
    assert rng.random() == random.Random(5).random()  # the seeded stream is untouched


def test_at_most_twenty_distinct_names():
    lines = [f"GET /r{i}" for i in range(MAX_REQUESTS + 1)]
    with pytest.raises(SpecError, match=r"21 requests, expected at most 20"):
        parse_request_lines(lines)
    with pytest.raises(SpecError, match=r"two requests named 'GET /r0'"):
        parse_request_lines(["GET /r0", "# a comment", "", "GET /r0 weight=2"])


def test_the_web_forms_single_line_separates_requests_with_double_semicolons():
    assert split_requests("GET /a ;; POST /b body=x;y") == ["GET /a", "POST /b body=x;y"]
    assert split_requests('{"path": "/a", "body": "x ;; y"}') == ['{"path": "/a", "body": "x ;; y"}']


def test_options_carry_the_mix_and_retry_on_and_name_the_flag_when_wrong(tmp_path):
    options = load_options({"request": "GET /a weight=2\nPOST /b", "retry_on": "timeout,429"})
    assert [request.name for request in options.request_mix] == ["GET /a", "POST /b"]
    assert options.policy.retry_on == RetryOn(timeout=True, statuses=frozenset({429}))
    assert load_options({}).policy.retry_on is None  # auto: the strategy's own, else the default rule
    assert [r.name for r in load_options({}).request_mix] == ["/api"]  # the default: GET --request-path
    with pytest.raises(UserError, match=r"^--retry-on: got 'sometimes', expected a list in brackets of .*, or auto$"):
        load_options({"retry_on": "sometimes"})
    with pytest.raises(UserError, match=r"^--request: request 1: method"):
        load_options({"request": "FETCH /a"})
    file = tmp_path / "requests.txt"
    file.write_text("# the writes\nPOST /b weight=3\n")
    assert [r.name for r in load_options({"request": "GET /a", "requests_file": file.read_text()}).requests] == [
        "GET /a",
        "POST /b",
    ]
    assert RetryOn.parse("[]") == RetryOn()  # retries nothing


WORDS = ["GET", "post", "/a", "/", "weight=", "weight=3", "weight=²", "weight=١", "weight=99999999999",
         "name=", "name=x", "header=",
         "header=A:b", "header=Host:x", "body=", "body={", "{", "}", '{"path": "/a"}', '{"weight": true}',
         "\x00", "\t", "é", " ;; ", "=", ":", "\u2028"]  # fmt: skip
FUZZ = settings(derandomize=True, max_examples=300, deadline=timedelta(seconds=1))


@FUZZ
@given(st.lists(st.one_of(st.sampled_from(WORDS), st.text(max_size=20)), max_size=8).map(" ".join))
def test_any_text_is_a_request_or_one_line_saying_why(text):
    try:
        request = parse_request_line(text)
    except SpecError as error:
        message = str(error)
    else:
        assert parse_request_line(request.to_json()) == request  # what reads, reads back exactly
        return
    assert "\n" not in message


def test_hostile_lines_are_refused_in_one_line():
    for text in ("[" * 100_000, "{" + '"a":' * 50_000, "GET /a body=" + "x" * 500_000):
        with pytest.raises(SpecError) as caught:
            parse_request_line(text)
        assert "\n" not in str(caught.value) and len(str(caught.value)) < 300
