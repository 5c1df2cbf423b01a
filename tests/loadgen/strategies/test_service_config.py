"""gRPC service configs: A6's example becomes grpc-retry plus tokens; a bad file is one line naming the JSON path."""

import copy
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from retrystorm.errors import SpecError, UserError
from retrystorm.loadgen.cli import strategies
from retrystorm.loadgen.options import load_options
from retrystorm.loadgen.service_config import read_strategy
from retrystorm.loadgen.strategies import resolve
from retrystorm.loadgen.strategies.budgets import TokensBudget
from retrystorm.loadgen.strategies.presets import GrpcRetry, ServiceConfigError, preset_from_service_config
from tests.support.cli import run_cli

#: The retryPolicy and retryThrottling examples of gRFC A6 ("Retry Policy", "Throttling
#: Configuration"), copied from grpc/proposal A6-client-retries.md, in a service config
#: laid out as A6's "Integration with Service Config" describes.
A6_EXAMPLE = {
    "methodConfig": [
        {
            "name": [{"service": "helloworld.Greeter"}],
            "retryPolicy": {
                "maxAttempts": 4,
                "initialBackoff": "0.1s",
                "maxBackoff": "1s",
                "backoffMultiplier": 2,
                "retryableStatusCodes": ["UNAVAILABLE"],
            },
        }
    ],
    "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1},
}


def write(tmp_path: Path, config: object, name: str = "service-config.json") -> Path:
    path = tmp_path / name
    path.write_text(config if isinstance(config, str) else json.dumps(config))
    return path


def test_the_a6_example_is_grpc_retry_with_the_tokens_budget(tmp_path):
    strategy = read_strategy(f"grpc-service-config:{write(tmp_path, A6_EXAMPLE)}")
    assert strategy == GrpcRetry(
        max_attempts=4, initial_backoff_s=0.1, max_backoff_s=1.0, multiplier=2.0, codes=("UNAVAILABLE",), max_tokens=10
    )
    policy, budget = resolve(strategy)
    assert policy.max_attempts == 4
    assert budget == TokensBudget(max_tokens=10, ratio=0.1)
    # what a report prints parses back to the same preset, without the file
    assert read_strategy(strategy.spec()) == strategy


def test_the_a6_example_reaches_the_locust_user_and_a_scenario(tmp_path):
    path = write(tmp_path, A6_EXAMPLE)
    options = load_options({"retry_strategy": f"grpc-service-config:{path}"})
    assert options.policy.max_attempts == 4
    assert options.budget == TokensBudget(max_tokens=10, ratio=0.1)
    assert options.strategy_name == "grpc-retry"


def test_a6_leniencies_codes_as_numbers_attempts_above_five_and_token_ratio_decimals():
    config = copy.deepcopy(A6_EXAMPLE)
    policy = config["methodConfig"][0]["retryPolicy"]
    policy["retryableStatusCodes"] = [14, "resource_exhausted"]
    policy["maxAttempts"] = 9
    config["retryThrottling"]["tokenRatio"] = 0.1239
    strategy = preset_from_service_config(config)
    assert strategy.codes == ("UNAVAILABLE", "RESOURCE_EXHAUSTED")
    assert resolve(strategy)[0].max_attempts == 5  # values above 5 are treated as 5
    assert strategy.token_ratio == 0.123  # decimal places beyond 3 are ignored


def test_the_first_method_config_with_a_retry_policy_or_the_one_named():
    retrying = copy.deepcopy(A6_EXAMPLE)["methodConfig"][0]
    config = {"methodConfig": [{"name": [{"service": "a"}], "timeout": "1s"}, retrying]}
    assert preset_from_service_config(config).max_attempts == 4
    config["methodConfig"][1]["retryPolicy"]["maxAttempts"] = 3
    config["methodConfig"].append(copy.deepcopy(A6_EXAMPLE)["methodConfig"][0])
    assert preset_from_service_config(config).max_attempts == 3
    assert preset_from_service_config(config, index=2).max_attempts == 4
    with pytest.raises(ServiceConfigError, match=r"^methodConfig\[0\]: no retryPolicy"):
        preset_from_service_config(config, index=0)


def broken(path: str, value: object) -> dict:
    """The A6 example with the value at ``path`` (keys and indexes) replaced, or removed for ``...``."""
    config = copy.deepcopy(A6_EXAMPLE)
    *parents, last = path
    node = config
    for key in parents:
        node = node[key]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return config


POLICY = ("methodConfig", 0, "retryPolicy")
CODES = (*POLICY, "retryableStatusCodes")
MULTIPLIER = (*POLICY, "backoffMultiplier")

BAD = [
    (broken(MULTIPLIER, 0), r"^methodConfig\[0\]\.retryPolicy\.backoffMultiplier: got 0; must be > 0"),
    (broken((*POLICY, "backoffMultiplier"), "2"), r"retryPolicy\.backoffMultiplier: got '2'; expected a JSON number"),
    (broken((*POLICY, "maxAttempts"), 1), r"retryPolicy\.maxAttempts: got 1; must be a whole number > 1"),
    (broken((*POLICY, "maxAttempts"), ...), r"retryPolicy\.maxAttempts: missing; gRFC A6 requires it"),
    (broken((*POLICY, "initialBackoff"), "100ms"), r"retryPolicy\.initialBackoff: got '100ms'; expected a proto3"),
    (broken((*POLICY, "maxBackoff"), "0s"), r"retryPolicy\.maxBackoff: got 0s; must be > 0"),
    (broken(CODES, []), r"retryPolicy\.retryableStatusCodes: got \[\]; expected a non-empty"),
    (broken(CODES, ["UNAVAILABLE", "SOMETIMES"]), r"retryableStatusCodes\[1\]: got 'SOMETIMES'"),
    (broken(CODES, [99]), r"retryableStatusCodes\[0\]: got 99; expected a gRPC status code"),
    (broken(("methodConfig", 0, "retryPolicy"), ...), r"^methodConfig: no entry has a retryPolicy"),
    (broken(("methodConfig",), {"retryPolicy": {}}), r"^methodConfig: got .*expected a list of method configs"),
    (broken(POLICY, [1]), r"methodConfig\[0\]\.retryPolicy: got \[1\]; expected a JSON object"),
    (broken(("retryThrottling", "maxTokens"), 2000), r"^retryThrottling\.maxTokens: got 2000; must be in \(0, 1000\]"),
    (broken(("retryThrottling", "tokenRatio"), ...), r"^retryThrottling\.tokenRatio: missing"),
    (broken(("retryThrottling", "tokenRatio"), 0), r"^retryThrottling\.tokenRatio: got 0; must be > 0"),
    ({"loadBalancingPolicy": "round_robin"}, r"^methodConfig: missing; expected methodConfig\[\]\.retryPolicy"),
    ([1, 2], r"^\(top level\): got \[1, 2\]; expected a JSON object"),
]


@pytest.mark.parametrize(("config", "message"), BAD)
def test_a_bad_config_names_the_json_path(config, message):
    with pytest.raises(ServiceConfigError, match=message) as caught:
        preset_from_service_config(config)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"methodConfig": [', r"service-config\.json:1: not JSON"),
        (b"\xff\xfe".decode("latin-1"), "not JSON"),
    ],
)
def test_a_file_that_is_not_json_is_one_line(tmp_path, text, message):
    with pytest.raises(SpecError, match=message):
        read_strategy(f"grpc-service-config:{write(tmp_path, text)}")


def test_missing_file_empty_path_and_bad_index(tmp_path):
    with pytest.raises(SpecError, match=r"grpc-service-config: .*nowhere\.json: cannot read it"):
        read_strategy(f"grpc-service-config:{tmp_path / 'nowhere.json'}")
    with pytest.raises(SpecError, match="needs a file"):
        read_strategy("grpc-service-config:")
    path = write(tmp_path, A6_EXAMPLE)
    with pytest.raises(SpecError, match=r"#one: expected a methodConfig index"):
        read_strategy(f"grpc-service-config:{path}#one")
    with pytest.raises(SpecError, match=r"methodConfig\[3\]: no such entry; the file has 1"):
        read_strategy(f"grpc-service-config:{path}#3")


def test_the_locust_option_names_the_flag_and_the_json_path(tmp_path):
    path = write(tmp_path, broken((*POLICY, "backoffMultiplier"), -1))
    with pytest.raises(UserError) as caught:
        load_options({"retry_strategy": f"grpc-service-config:{path}"})
    message = str(caught.value)
    assert message.startswith("--retry-strategy: grpc-service-config: ")
    assert "methodConfig[0].retryPolicy.backoffMultiplier: got -1; must be > 0" in message


def test_strategies_show_exits_2_with_one_line_naming_the_json_path(tmp_path):
    path = write(tmp_path, broken((*POLICY, "backoffMultiplier"), 0))
    result = CliRunner().invoke(strategies, ["show", f"grpc-service-config:{path}"])
    assert result.exit_code == 2
    assert "methodConfig[0].retryPolicy.backoffMultiplier: got 0; must be > 0" in result.output
    assert "Traceback" not in result.output


def test_the_retrystorm_command_exits_2_on_a_config_without_retry_policy(tmp_path):
    path = write(tmp_path, {"methodConfig": [{"name": [{"service": "x"}], "timeout": "1s"}]})
    done = run_cli("strategies", "show", f"grpc-service-config:{path}")
    assert done.returncode == 2, done.stderr
    assert "methodConfig: no entry has a retryPolicy" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_config_grpcio_s_core_would_refuse_is_refused_in_its_words(tmp_path):
    config = copy.deepcopy(A6_EXAMPLE)
    config["retryThrottling"]["maxTokens"] = 10.0  # A6 reads a number; grpcio 1.85's core parses a whole number
    text = json.dumps(config)
    assert '"maxTokens": 10.0' in text
    with pytest.raises(SpecError) as caught:
        read_strategy(f"grpc-service-config:{write(tmp_path, text)}")
    assert "grpcio rejects it: [field:retryThrottling.maxTokens error:failed to parse non-negative number]" in str(
        caught.value
    )
    assert "\n" not in str(caught.value)
