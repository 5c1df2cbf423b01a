"""A strategy entry's ``http_client``: urllib3's own Retry, and what it cannot take refused naming the field."""

import pytest

from retrystorm.experiment.scenario import RunSpec, ScenarioError, parse_scenario

BASE = "name: u\nmodel: exponential\n"
LOAD = "load: {users: 10, duration: 20s}\n"


def scenario(text: str):
    return parse_scenario(BASE + (text if "load:" in text else LOAD + text), source="u.yaml")


def problems(text: str) -> str:
    with pytest.raises(ScenarioError) as caught:
        scenario(text)
    return str(caught.value)


def test_urllib3_beside_its_emulation_and_the_default_is_the_strategy_s_loop():
    found = scenario(
        "strategies:\n"
        "  - {label: real, strategy: 'urllib3:total=2', http_client: urllib3}\n"
        "  - {label: emulated, strategy: 'urllib3:total=2'}\n"
        "  - {label: loop, strategy: fixed:100ms, http_client: retrystorm}\n"
    )
    clients = [RunSpec.of(found, entry).http_client for entry in found.strategies]
    assert clients == ["urllib3", "retrystorm", "retrystorm"]


def test_urllib3_runs_the_urllib3_preset_only_and_refuses_what_its_retry_takes_from_the_preset():
    text = problems(
        "retry_on: [5xx]\n"
        "load: {users: 10, duration: 20s, budget: tokens, reset_after_success: false}\n"
        "strategies:\n"
        "  - {strategy: fixed:100ms, http_client: urllib3}\n"
        "  - {label: capped, strategy: urllib3, http_client: urllib3, max_attempts: 2, request_deadline: 5s}\n"
    )
    assert "strategies[0].strategy: urllib3's own Retry runs the urllib3 preset only" in text
    assert "strategies[1].max_attempts: not with http_client urllib3; write total into the preset" in text
    assert "strategies[1].request_deadline: not with http_client urllib3" in text
    assert "load.budget: not with http_client urllib3; urllib3 has no retry budget" in text
    assert "load.reset_after_success: not with http_client urllib3" in text
    assert "retry_on: not with http_client urllib3; write status_forcelist into the preset" in text


def test_a_grpc_load_and_an_unknown_client_are_refused():
    grpc = problems("grpc: {mode: emulated}\nstrategies: [{strategy: urllib3, http_client: urllib3}]\n")
    assert "strategies[0].http_client: applies to an HTTP load; a grpc: load has grpc_mode" in grpc
    unknown = problems("strategies: [{strategy: urllib3, http_client: requests}]\n")
    assert "strategies[0].http_client" in unknown and "urllib3" in unknown


def test_urllib3_across_hosts_is_refused_in_one_line():
    text = (
        'hosts: {master: "10.0.0.1:5557", workers: 1, agents: {app: "http://10.0.0.4:8071"}}\n'
        'target: {url: "http://10.0.0.4:8070", host: app}\n'
        "strategies: [{strategy: urllib3, http_client: urllib3}]\n"
    )
    assert "strategies[0].http_client: urllib3's own Retry does not run across hosts yet" in problems(text)
