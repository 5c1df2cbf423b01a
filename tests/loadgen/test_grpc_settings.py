"""The gRPC user's options and the service config real mode hands grpcio (no Locust, no network)."""

from __future__ import annotations

import json

import pytest

from retrystorm.errors import SpecError, UserError
from retrystorm.loadgen.grpc_settings import (
    DEFAULT_METHOD,
    GrpcMode,
    preset_service_config,
    read_settings,
    real_service_config,
)
from retrystorm.loadgen.service_config import read_strategy
from retrystorm.loadgen.strategies import parse_strategy
from retrystorm.loadgen.strategies.presets import preset_from_service_config


def test_defaults_call_the_built_in_targets_echo_with_grpcios_own_retries():
    settings = read_settings({})
    assert (settings.mode, settings.method, settings.request) == (GrpcMode.REAL, DEFAULT_METHOD, b"")
    assert settings.service == "retrystorm.target.v1.Target"
    assert read_settings({"grpc_request": "hex:0a0268"}).request == b"\n\x02h"
    assert read_settings({"grpc_request": "b64:CgJoaQ=="}).request == b"\n\x02hi"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"grpc_mode": "both"}, "--grpc-mode: got 'both', expected real or emulated"),
        ({"grpc_method": "Echo"}, "--grpc-method: got 'Echo', expected a full method name like /retrystorm"),
        ({"grpc_request": "0a02"}, "--grpc-request: got '0a02', expected the request message's bytes as b64:"),
        ({"grpc_request": "b64:!!"}, "--grpc-request: got 'b64:!!'"),
    ],
)
def test_a_bad_option_is_one_line_naming_the_flag(values, message):
    with pytest.raises(UserError) as error:
        read_settings(values)
    assert str(error.value).startswith(message) and "\n" not in str(error.value)


def test_a_preset_becomes_a_service_config_that_reads_back_as_the_same_preset():
    preset = parse_strategy("grpc-retry:max_attempts=5,initial_backoff=250ms,max_tokens=10,token_ratio=0.1")
    config = preset_service_config(preset)
    assert config["methodConfig"][0]["name"] == [{}]  # every method of the channel
    assert config["retryThrottling"] == {"maxTokens": 10, "tokenRatio": 0.1}  # an int: C-core rejects 10.0
    assert config["methodConfig"][0]["retryPolicy"]["initialBackoff"] == "0.25s"
    assert preset_from_service_config(json.loads(json.dumps(config))) == preset


def test_real_mode_takes_the_files_chosen_method_config_for_every_method(tmp_path):
    path = tmp_path / "config.json"
    policy = {"maxAttempts": 3, "initialBackoff": "1s", "maxBackoff": "2s", "backoffMultiplier": 2}
    path.write_text(
        json.dumps(
            {
                "methodConfig": [
                    {"name": [{"service": "a.B"}], "timeout": "3s"},
                    {"name": [{"service": "c.D"}], "retryPolicy": {**policy, "retryableStatusCodes": ["UNAVAILABLE"]}},
                ],
                "retryThrottling": {"maxTokens": 5, "tokenRatio": 0.5},
                "loadBalancingConfig": [{"round_robin": {}}],
            }
        )
    )
    text = f"grpc-service-config:{path}"
    config = real_service_config(text, read_strategy(text))
    assert config == {
        "methodConfig": [{"name": [{}], "retryPolicy": {**policy, "retryableStatusCodes": ["UNAVAILABLE"]}}],
        "retryThrottling": {"maxTokens": 5, "tokenRatio": 0.5},
    }


def test_real_mode_refuses_a_strategy_grpcio_cannot_run():
    with pytest.raises(UserError, match=r"--grpc-mode real: --retry-strategy 'fixed:100ms' has no grpcio form"):
        real_service_config("fixed:100ms", parse_strategy("fixed:100ms"))


def test_grpcio_s_core_refuses_status_codes_as_numbers_in_a_file_a6_s_parser_here_reads(tmp_path):
    path = tmp_path / "numbers.json"
    policy = {"maxAttempts": 3, "initialBackoff": "1s", "maxBackoff": "2s", "backoffMultiplier": 2}
    path.write_text(
        json.dumps({"methodConfig": [{"name": [{}], "retryPolicy": {**policy, "retryableStatusCodes": [14]}}]})
    )
    with pytest.raises(SpecError) as caught:
        read_strategy(f"grpc-service-config:{path}")
    assert "grpcio rejects it: [field:methodConfig[0].retryPolicy.retryableStatusCodes" in str(caught.value)
