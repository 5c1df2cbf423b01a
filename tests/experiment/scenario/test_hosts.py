"""The hosts: section: where each fault's target lives, and the tokens agents beyond loopback need."""

from __future__ import annotations

import pytest

from retrystorm.errors import UserError
from retrystorm.experiment.scenario import ScenarioError, parse_scenario
from retrystorm.experiment.scenario.hosts import Hosts, check_tokens

HOSTS = Hosts.model_validate(
    {
        "master": "10.0.0.1:5557",
        "workers": 2,
        "agents": {"app": "http://10.0.0.4:8071", "db": {"url": "http://10.0.0.5:8071", "token_env": "DB_TOKEN"}},
    }
)


def test_a_fault_lives_on_its_named_host_else_on_the_targets_host():
    assert HOSTS.locate("cache@db", "app") == ("db", "cache")
    assert HOSTS.locate("target", "app") == ("app", "target")
    with pytest.raises(UserError, match=r"'x@dbb': no agent for host 'dbb' \(did you mean 'db'\?\); hosts: app, db"):
        HOSTS.locate("x@dbb", "app")
    with pytest.raises(UserError, match="'web': on which host\\? write web@HOST"):
        HOSTS.locate("web", None)
    assert HOSTS.master_address() == ("10.0.0.1", 5557)


def test_an_agent_beyond_loopback_needs_its_token_and_loopback_does_not():
    assert check_tokens(HOSTS, {"RETRYSTORM_CHAOS_TOKEN": "a", "DB_TOKEN": "b"}) == {"app": "a", "db": "b"}
    with pytest.raises(
        UserError,
        match=r"^hosts\.agents\.db: http://10\.0\.0\.5:8071 is beyond loopback and needs a token: set DB_TOKEN",
    ):
        check_tokens(HOSTS, {"RETRYSTORM_CHAOS_TOKEN": "a"})
    local = Hosts.model_validate({"master": "127.0.0.1:5557", "workers": 1, "agents": {"me": "http://127.0.0.1:8071"}})
    assert check_tokens(local, {}) == {"me": ""}


SCENARIO = """
name: across
model: fixed
hosts: {{master: "10.0.0.1:5557", workers: 1, agents: {{app: "http://10.0.0.4:8071"}}}}
target: {target}
load: {{users: 1, duration: 30s}}
strategies: [fixed:100ms]
faults: [{fault}]
"""


@pytest.mark.parametrize(
    ("target", "fault", "message"),
    [
        ('{url: "http://10.0.0.4:8070", host: ap}', "{at: 5s, for: 1s}", "target.host: got 'ap' (did you mean 'app'?)"),
        ('{url: "http://10.0.0.4:8070", host: app}', "{pause: x@web, at: 5s, for: 1s}", "no agent for host 'web'"),
        ('{url: "http://10.0.0.4:8070", host: app, pid: 12}', "{at: 5s, for: 1s}", "target.pid: with host: the"),
        ('{url: "http://10.0.0.4:8070"}', "{pause: target, at: 5s, for: 1s}", "'target': on which host?"),
    ],
)
def test_a_scenario_across_hosts_names_what_is_wrong_by_file_and_field(target, fault, message):
    text = SCENARIO.format(target=target, fault=fault)
    if "'target': on which host?" in message:  # two agents: a bare name needs target.host
        text = text.replace('agents: {app: "http://10.0.0.4:8071"}', 'agents: {app: "http://a:1", b: "http://b:1"}')
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, source="s.yaml")
    assert message in str(caught.value)
    assert str(caught.value).startswith("s.yaml:")


def test_model_server_needs_a_model_and_hosts_needs_a_target():
    text = SCENARIO.format(target='{url: "http://10.0.0.4:8070", host: app, model_server: true}', fault="")
    with pytest.raises(ScenarioError, match="model_server: needs model:"):
        parse_scenario(text.replace("model: fixed\n", "model: null\n"), source="s.yaml")
    with pytest.raises(ScenarioError, match="hosts: needs target:"):
        parse_scenario(text.replace("target: {url", "#target: {url"), source="s.yaml")


def test_a_grpc_load_across_hosts_is_refused_in_one_line():
    text = SCENARIO.format(target='{url: "grpc://10.0.0.4:8070", host: app}', fault="")
    text += "grpc: {request: {name: world}}\n"
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, source="s.yaml")
    assert "grpc: a gRPC load does not run across hosts yet; remove hosts: to run it on this host" in str(caught.value)
