"""Options: defaults, one-line errors naming the flag, web-form overlay, argparse wiring."""

import argparse
import subprocess

import pytest

from retrystorm.errors import UserError
from retrystorm.loadgen.flags import add_arguments
from retrystorm.loadgen.options import DEFAULT_STRATEGY, Arrival, load_options, overlay_form
from retrystorm.loadgen.strategies import FixedBackoff, GrpcBackoff, parse_strategy
from retrystorm.loadgen.strategies.budgets import QuotaBudget
from retrystorm.loadgen.think import ConstantThink, ExponentialThink
from tests.loadgen.conftest import LOCUST, LOCUSTFILE


class LocustLikeParser(argparse.ArgumentParser):
    """argparse plus the keyword Locust's parser adds (without importing Locust here)."""

    def __init__(self) -> None:
        self.web_ui: dict[str, bool] = {}
        self.env_vars: dict[str, str | None] = {}
        super().__init__(prog="locust", exit_on_error=False)

    def add_argument(self, *args, include_in_web_ui=True, env_var=None, **kwargs):
        action = super().add_argument(*args, **kwargs)
        self.web_ui[action.dest] = include_in_web_ui
        self.env_vars[action.dest] = env_var
        return action


def parse(*argv: str) -> dict:
    parser = LocustLikeParser()
    add_arguments(parser)
    return vars(parser.parse_args(list(argv)))


def test_defaults_are_the_seed_client():
    options = load_options(parse())
    assert options.policy.strategy == parse_strategy(DEFAULT_STRATEGY)
    assert options.think == ExponentialThink(average_s=10.0)
    assert options.attempt_timeout_s == 2.0
    assert options.policy.max_attempts is None
    assert options.policy.deadline_s is None
    assert options.policy.reset_after_success
    assert options.policy.honour_retry_after
    assert options.budget is None
    assert options.arrival is Arrival.CLOSED
    assert options.request_path == "/api"
    assert options.seed is None
    assert options.strategy_name == "exponential"


def test_every_option_read():
    argv = (
        "--retry-strategy=fixed:250ms --retry-budget=quota:capacity=20 --think-time=constant:1s "
        "--attempt-timeout=500ms --max-attempts=4 --request-deadline=30s --arrival=open "
        "--request-path=/slow --random-seed=42 --keep-backoff --ignore-retry-after"
    )
    options = load_options(parse(*argv.split()))
    assert options.policy.strategy == FixedBackoff(delay_s=0.25)
    assert options.budget == QuotaBudget(capacity=20.0)
    assert options.think == ConstantThink(wait_s=1.0)
    assert options.attempt_timeout_s == 0.5
    assert options.policy.max_attempts == 4
    assert options.policy.deadline_s == 30.0
    assert options.arrival is Arrival.OPEN
    assert options.request_path == "/slow"
    assert options.seed == 42
    assert not options.policy.reset_after_success
    assert not options.policy.honour_retry_after
    assert options.strategy_name == "fixed"


def test_grpc_raises_the_connect_timeout_to_its_floor():
    assert load_options({"retry_strategy": "grpc"}).connect_timeout_s == GrpcBackoff().min_connect_timeout_s
    assert load_options({"retry_strategy": "grpc:min_connect_timeout=1s"}).connect_timeout_s == 2.0
    assert load_options({"retry_strategy": "fixed"}).connect_timeout_s == 2.0


@pytest.mark.parametrize(
    ("values", "words"),
    [
        ({"retry_strategy": "bogus"}, ["--retry-strategy", "unknown strategy 'bogus'", "exponential", "smira"]),
        ({"retry_strategy": "fixed:soon"}, ["--retry-strategy", "delay", "100ms"]),
        ({"retry_budget": "piggybank"}, ["--retry-budget", "unknown budget", "quota"]),
        ({"think_time": "often"}, ["--think-time", "exponential:10s"]),
        ({"attempt_timeout": "0s"}, ["--attempt-timeout", "> 0"]),
        ({"attempt_timeout": "2"}, ["--attempt-timeout", "unit"]),
        ({"max_attempts": "0"}, ["--max-attempts", ">= 1", "none"]),
        ({"max_attempts": "three"}, ["--max-attempts", "whole number"]),
        ({"request_deadline": "-1s"}, ["--request-deadline"]),
        ({"arrival": "sometimes"}, ["--arrival", "closed, open"]),
        ({"request_path": "api"}, ["--request-path", "starting with /"]),
        ({"random_seed": "x"}, ["--random-seed", "whole number"]),
        ({"load_spikes": "60s:x2"}, ["--load-spikes", "AT+FOR:xFACTOR", "60s+10s:x2"]),
        ({"load_spikes": "60s+10s:x500"}, ["--load-spikes", "FACTOR must be from 1 to 100"]),
    ],
)
def test_errors_name_the_flag_and_what_is_accepted(values, words):
    with pytest.raises(UserError) as caught:
        load_options(values)
    message = str(caught.value)
    assert "\n" not in message
    for word in words:
        assert word in message


def test_bad_flag_is_refused_by_argparse_with_the_same_message():
    with pytest.raises(argparse.ArgumentError) as caught:
        parse("--retry-strategy", "exponential:factor=0.5")
    assert "factor" in str(caught.value)
    assert ">= 1" in str(caught.value)


def test_bad_load_spikes_are_refused_by_argparse_and_good_ones_read_as_spikes():
    with pytest.raises(argparse.ArgumentError, match=r"AT\+FOR:xFACTOR"):
        parse("--load-spikes", "at 60s, twice")
    options = load_options(parse("--load-spikes", "60s+10s:x2"))
    assert [(spike.start_s, spike.end_s, spike.factor) for spike in options.spikes] == [(60.0, 70.0, 2.0)]
    assert load_options(parse()).spikes == ()


def test_values_stay_text_for_the_web_form_and_the_workers():
    values = parse("--attempt-timeout", "750ms")
    assert values["attempt_timeout"] == "750ms"
    assert values["retry_strategy"] == DEFAULT_STRATEGY
    assert values["keep_backoff"] is False


def test_form_fields_and_metrics_flags_in_the_web_ui():
    parser = LocustLikeParser()
    add_arguments(parser)
    assert parser.web_ui["retry_strategy"]
    assert parser.web_ui["keep_backoff"]
    assert not parser.web_ui["metrics_port"]
    assert not parser.web_ui["metrics_linger"]
    assert not parser.web_ui["chaos_url"]
    assert not parser.web_ui["chaos_token"]  # a secret never goes into the page


def test_chaos_flags_default_to_off_and_read_the_environment():
    parser = LocustLikeParser()
    add_arguments(parser)
    assert (parser.env_vars["chaos_url"], parser.env_vars["chaos_token"]) == (
        "RETRYSTORM_CHAOS_URL",
        "RETRYSTORM_CHAOS_TOKEN",
    )
    values = parse()
    assert (values["chaos_url"], values["chaos_token"]) == ("none", "")
    assert parse("--chaos-url", "http://127.0.0.1:8071/")["chaos_url"] == "http://127.0.0.1:8071/"
    for bad in ("127.0.0.1:8071", "ftp://host", "http://host:99999", "http://host/?x=1"):
        with pytest.raises(argparse.ArgumentError, match="chaos API"):
            parse("--chaos-url", bad)


@pytest.mark.parametrize("text", ["inf", "forever", "exponential:forever"])
def test_a_think_time_that_never_ends_is_refused_by_flag_and_start_form(text):
    with pytest.raises(argparse.ArgumentError, match="finite"):
        parse("--think-time", text)
    # the web UI's start form: the check retrystorm.loadgen.web runs on POST /swarm
    with pytest.raises(UserError) as caught:
        load_options(overlay_form(parse(), {"think_time": text}))
    assert str(caught.value).startswith("--think-time: ")
    assert "finite" in str(caught.value)


def test_overlay_form_reads_checkboxes_as_locust_does():
    values = parse()
    merged = overlay_form(
        values,
        {"retry_strategy": "fixed:1s", "keep_backoff": "true", "ignore_retry_after": "false", "user_count": "5"},
    )
    assert merged["retry_strategy"] == "fixed:1s"
    assert merged["keep_backoff"] is True
    assert merged["ignore_retry_after"] is False
    assert "user_count" not in merged or merged["user_count"] == values.get("user_count")
    assert values["retry_strategy"] == DEFAULT_STRATEGY  # the original is left alone


ABSURD = {
    "400-digit duration": "1" * 400 + "s",
    "5000-digit number": "1" * 5000,
    "1e309": "1e309s",
    "inf": "inf",
    "1 MB": "x" * 1_000_000,
}
SPEC_FLAGS = {
    "retry_strategy": ["fixed:{}", "table:delays=[{}]", "exponential:factor={}", "{}"],
    "retry_budget": ["quota:capacity={}", "ratio:ttl={}", "{}"],
    "think_time": ["exponential:{}", "between:1s,{}", "{}"],
}


@pytest.mark.parametrize("dest", list(SPEC_FLAGS))
@pytest.mark.parametrize("absurd", list(ABSURD))
def test_absurd_values_in_spec_flags_are_one_line_by_flag_and_start_form(dest, absurd):
    flag = "--" + dest.replace("_", "-")
    for template in SPEC_FLAGS[dest]:
        text = template.format(ABSURD[absurd])
        if dest == "retry_budget" and text == "inf":
            continue  # none, inf and forever: no budget, as documented
        with pytest.raises(argparse.ArgumentError) as refused:
            parse(flag, text)
        assert len(str(refused.value).splitlines()) == 1
        assert len(str(refused.value)) < 500
        with pytest.raises(UserError) as caught:
            load_options({dest: text})
        assert str(caught.value).startswith(f"{flag}: ")
        assert len(str(caught.value).splitlines()) == 1
        assert len(str(caught.value)) < 500


@pytest.mark.parametrize(
    ("dest", "text", "words"),
    [
        ("attempt_timeout", "1" * 400 + "s", ["--attempt-timeout", "at most 100 characters"]),
        ("attempt_timeout", "inf", ["--attempt-timeout", "finite"]),
        ("attempt_timeout", "25h", ["--attempt-timeout", "<= 24h"]),  # a socket timeout of 1e300 s overflows
        ("request_deadline", "1e309s", ["--request-deadline", "finite"]),
        ("request_deadline", "25h", ["--request-deadline", "<= 24h"]),
        ("max_attempts", "1" * 5000, ["--max-attempts", "<= 10000", "5000 characters"]),  # was int()'s ValueError
        ("max_attempts", "10001", ["--max-attempts", "<= 10000"]),
        ("max_attempts", "²", ["--max-attempts", "whole number"]),  # isdigit() is true, int() refused it
        ("random_seed", "1" * 5000, ["--random-seed", "at most 20 digits"]),
    ],
)
def test_absurd_values_in_other_flags_are_one_line(dest, text, words):
    with pytest.raises(UserError) as caught:
        load_options({dest: text})
    message = str(caught.value)
    assert len(message.splitlines()) == 1
    for word in words:
        assert word in message


def test_no_deadline_and_no_attempt_cap_may_be_written_inf_or_forever():
    options = load_options({"request_deadline": "inf", "max_attempts": "forever"})
    assert options.policy.deadline_s is None
    assert options.policy.max_attempts is None


def test_metrics_linger_has_a_ceiling():
    with pytest.raises(argparse.ArgumentError, match="<= 24h"):
        parse("--metrics-linger", "1000000s")
    assert parse("--metrics-linger", "24h")["metrics_linger"] == "24h"


@pytest.mark.live  # Locust itself
def test_locust_itself_exits_2_with_one_line_for_an_absurd_strategy():
    """The real Locust parser, in its own process: it prints the flag's message and nothing else."""
    result = subprocess.run(
        [LOCUST, "-f", str(LOCUSTFILE), "--headless", "--retry-strategy", "fixed:" + "1" * 90 + "s"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "--retry-strategy: strategy 'fixed': delay: got '1111" in lines[0]
    assert "<= 1000000000s" in lines[0]


# -- presets ----------------------------------------------------------------------------


def test_a_preset_brings_its_attempt_cap_budget_and_conditions():
    options = load_options(parse("--retry-strategy", "aws-standard"))
    assert options.policy.max_attempts == 3
    assert options.budget == QuotaBudget(cost=14, timeout_cost=14, throttle_cost=5)
    assert options.policy.retry_on is not None and options.policy.per_request
    assert options.strategy_name == "aws-standard"


def test_explicit_flags_override_a_preset_and_none_removes_its_own():
    options = load_options(parse("--retry-strategy", "aws-standard", "--max-attempts", "5", "--retry-budget", "tokens"))
    assert options.policy.max_attempts == 5
    assert options.budget is not None and options.budget.name == "tokens"
    options = load_options(
        parse("--retry-strategy", "aws-standard", "--max-attempts", "none", "--retry-budget", "none")
    )
    assert options.policy.max_attempts is None
    assert options.budget is None


def test_the_preset_field_is_a_choice_beside_the_free_text():
    parser = LocustLikeParser()
    add_arguments(parser)
    action = next(a for a in parser._actions if a.dest == "retry_preset")
    assert parser.web_ui["retry_preset"]
    assert action.choices[0] == "custom"
    assert {"grpc-retry", "envoy", "aws-standard", "aws-adaptive", "polly", "resilience4j", "urllib3"} <= set(
        action.choices
    )
    options = load_options(overlay_form(parse(), {"retry_preset": "envoy"}))
    assert options.strategy_name == "envoy"
    assert options.policy.max_attempts == 2


def test_a_preset_and_a_strategy_at_once_are_refused():
    with pytest.raises(UserError, match=r"--retry-preset envoy and --retry-strategy fixed:1s: give one of them"):
        load_options({"retry_preset": "envoy", "retry_strategy": "fixed:1s"})
    with pytest.raises(UserError, match=r"--retry-preset: got 'envoi', expected custom or one of .*envoy"):
        load_options({"retry_preset": "envoi"})


def test_an_unknown_preset_on_the_strategy_flag_suggests_one():
    with pytest.raises(UserError) as caught:
        load_options({"retry_strategy": "aws-standart"})
    message = str(caught.value)
    assert "(did you mean 'aws-standard'?)" in message
    assert "presets: aws-standard, aws-adaptive" in message


def test_requests_file_is_read_when_parsed_so_its_text_travels_with_the_options(tmp_path):
    file = tmp_path / "requests.txt"
    file.write_text("POST /b weight=3 body=x y\n")
    parser = LocustLikeParser()
    add_arguments(parser)
    parsed = parser.parse_args(["--request", "GET /a", "--request", "GET /c", "--requests-file", str(file)])
    assert parsed.requests_file == file.read_text()
    assert [r.name for r in load_options(vars(parsed)).requests] == ["GET /a", "GET /c", "POST /b"]
    with pytest.raises(argparse.ArgumentError, match="cannot read"):
        parser.parse_args(["--requests-file", str(tmp_path / "missing.txt")])
