"""A scenario's ``grpc:`` section: who retries, what one call sends, and what a gRPC load cannot take."""

import pytest

from retrystorm.experiment.scenario import RunSpec, ScenarioError, parse_scenario
from retrystorm.loadgen.grpc_settings import DEFAULT_METHOD, GrpcMode

BASE = """\
name: g
model: exponential
load: {users: 10, duration: 20s}
"""


def scenario(text: str):
    return parse_scenario(BASE + text, source="g.yaml")


def problems(text: str) -> str:
    with pytest.raises(ScenarioError) as caught:
        scenario(text)
    return str(caught.value)


def test_each_strategy_runs_in_the_section_s_mode_unless_it_has_its_own():
    found = scenario(
        "grpc: {mode: real, request_bytes: 'hex:0a026869'}\n"
        "strategies: [grpc-retry, {label: e, strategy: fixed:100ms, grpc_mode: emulated}]\n"
    )
    real, emulated = (RunSpec.of(found, entry).grpc for entry in found.strategies)
    assert real.mode is GrpcMode.REAL and emulated.mode is GrpcMode.EMULATED
    assert real.method == DEFAULT_METHOD and real.request == b"\n\x02hi"


def test_an_http_scenario_has_no_grpc_settings_and_refuses_grpc_mode():
    plain = scenario("strategies: [fixed:100ms]\n")
    assert RunSpec.of(plain, plain.strategies[0]).grpc is None
    assert "strategies[0].grpc_mode: applies to a gRPC load; add a grpc: section" in problems(
        "strategies: [{strategy: fixed:100ms, grpc_mode: real}]\n"
    )


def test_real_mode_needs_a_strategy_grpcio_can_run_and_refuses_what_grpcio_takes_from_the_config():
    text = problems(
        "grpc: {}\nretry_on: [5xx]\n"
        "strategies: [{strategy: fixed:100ms}, {strategy: grpc-retry, max_attempts: 3, label: capped}]\n"
    )
    assert "strategies[0].strategy: fixed:100ms has no grpcio form in grpc mode real" in text
    assert "strategies[1].max_attempts: grpcio takes it from the service config in grpc mode real" in text
    assert "retry_on: grpcio retries the service config's retryableStatusCodes" in text


def test_emulated_mode_takes_any_strategy_and_its_controls():
    found = scenario("grpc: {mode: emulated}\nstrategies: [{strategy: fixed:100ms, max_attempts: 3}]\n")
    assert RunSpec.of(found, found.strategies[0]).policy.max_attempts == 3


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        (
            "{method: Echo}",
            "grpc.method: got 'Echo', expected a full method name like /retrystorm.target.v1.Target/Echo",
        ),
        ("{request_bytes: 'b64:!!'}", "grpc.request_bytes: got 'b64:!!', expected the request message's bytes"),
        ("{request: [1, 2]}", "grpc.request: got [1, 2]; expected the request message as a JSON object"),
        ("{request: {a: 1}, request_bytes: 'hex:00'}", "grpc.request_bytes: give request (JSON) or request_bytes"),
        ("{method: /a.B/C}", "grpc.method: the built-in target serves /retrystorm.target.v1.Target/Echo only"),
        ("{mode: both}", "grpc.mode: got 'both'"),
        ("{descriptor_set: ''}", "grpc.descriptor_set: got ''; expected the path of a descriptor set"),
    ],
)
def test_a_bad_section_names_the_field_and_what_it_accepts(section, expected):
    assert expected in problems(f"grpc: {section}\nstrategies: [grpc-retry]\n")


def test_a_grpc_load_is_closed_loop_without_an_http_request_mix():
    text = problems("grpc: {}\nrequests: [{path: /x}]\nstrategies: [grpc-retry]\n")
    assert "requests: an HTTP request mix; a gRPC load sends grpc.method with grpc.request" in text
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(
            "name: g\nmodel: exponential\nload: {users: 10, duration: 20s, arrival: open, rate: 10}\n"
            "grpc: {}\nstrategies: [grpc-retry]\n",
            source="g.yaml",
        )
    assert "load.arrival: the gRPC user runs closed-loop only" in str(caught.value)


OWN = """\
name: own
load: {users: 10, duration: 20s}
strategies: [grpc-retry]
"""


def own(text: str):
    return parse_scenario(OWN + text, source="own.yaml")


def test_a_grpc_service_of_one_s_own_is_a_grpc_url_with_what_one_call_is():
    found = own(
        "target: {url: 'grpc://127.0.0.1:50051', command: python greeter.py}\n"
        "grpc: {method: /demo.v1.Greeter/SayHello, request: {name: storm}, descriptor_set: greeter.pb}\n"
    )
    assert found.target.grpc_address == "127.0.0.1:50051"
    assert found.grpc.request == '{"name":"storm"}'
    assert RunSpec.of(found, found.strategies[0]).grpc.method == "/demo.v1.Greeter/SayHello"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("target: {url: 'grpc://127.0.0.1:50051'}\n", "target.url: a gRPC service; add a grpc: section"),
        ("target: {url: 'http://127.0.0.1:8000'}\ngrpc: {}\n", "target.url: a gRPC load calls grpc://HOST:PORT"),
        ("target: {url: 'grpc://127.0.0.1'}\ngrpc: {}\n", "target.url: got 'grpc://127.0.0.1'; expected grpc://HOST"),
        ("target: {url: 'grpc://h:1/a'}\ngrpc: {}\n", "target.url: got 'grpc://h:1/a'; expected grpc://HOST:PORT"),
        (
            "target: {url: 'grpc://127.0.0.1:1', ready: /healthz}\ngrpc: {}\n",
            "target.ready: an HTTP path; a grpc:// service is ready when its port accepts a connection",
        ),
        ("model: exponential\ngrpc: {descriptor_set: x.pb}\n", "grpc.descriptor_set: the built-in target's own"),
    ],
)
def test_a_grpc_target_that_does_not_fit_its_section_names_the_field(text, expected):
    with pytest.raises(ScenarioError) as caught:
        own(text)
    assert expected in str(caught.value)
