"""Delay statistics per retry number (strategies show): percentiles and means against known distributions."""

import json
import random

import pytest
from click.testing import CliRunner

from retrystorm.loadgen.cli import strategies
from retrystorm.loadgen.strategies import parse_strategy
from retrystorm.loadgen.strategies.stats import delay_stats, percentile, retries_shown


def test_percentile_interpolates_linearly_between_ranks():
    values = [0.0, 1.0, 2.0, 3.0, 4.0]
    assert percentile(values, 0) == 0.0
    assert percentile(values, 50) == 2.0
    assert percentile(values, 95) == pytest.approx(3.8)
    assert percentile([7.0], 5) == 7.0
    with pytest.raises(ValueError, match="no values"):
        percentile([], 50)


def test_retries_shown_stop_at_ten_or_the_attempt_cap():
    assert retries_shown(parse_strategy("fixed:1s")) == 10
    assert retries_shown(parse_strategy("aws-standard")) == 2
    assert retries_shown(parse_strategy("grpc-retry")) == 3
    assert retries_shown(parse_strategy("urllib3:total=0")) == 0
    assert retries_shown(parse_strategy("finagle")) == 10


def test_full_jitter_exponential_percentiles_and_means():
    # U(0, d_n), d_n = 2^(n-1) s: p5 = 0.05 d, median 0.5 d, p95 0.95 d, mean 0.5 d
    rows = delay_stats(
        parse_strategy("exponential:base=1s,factor=2,max=1000s,jitter=full"), draws=40_000, rng=random.Random(1)
    )
    assert [row.retry for row in rows] == list(range(1, 11))
    for row in rows:
        cap = 2.0 ** (row.retry - 1)
        assert row.p5 == pytest.approx(0.05 * cap, abs=0.01 * cap)
        assert row.median == pytest.approx(0.5 * cap, abs=0.01 * cap)
        assert row.p95 == pytest.approx(0.95 * cap, abs=0.01 * cap)
        assert row.mean == pytest.approx(0.5 * cap, abs=0.01 * cap)


def test_a_preset_stops_at_its_attempt_cap_and_smira_grows_from_the_think_time():
    rows = delay_stats(parse_strategy("grpc-retry:jitter=none"), draws=50, rng=random.Random(1))
    assert [(row.retry, row.median) for row in rows] == [(1, 0.1), (2, 0.2), (3, 0.4)]
    smira = delay_stats(parse_strategy("smira:jitter=0"), draws=20_000, rng=random.Random(2), think_time_s=10)
    assert smira[0].mean == pytest.approx(2.71828 * 10, rel=0.03)  # e x an exponential think time of mean 10 s


def test_seeded_draws_repeat():
    strategy = parse_strategy("polly:backoff=exponential,jitter=true")
    first = delay_stats(strategy, draws=500, rng=random.Random(9))
    assert first == delay_stats(strategy, draws=500, rng=random.Random(9))


def test_strategies_show_json_document():
    result = CliRunner().invoke(strategies, ["show", "aws-standard", "--json", "--draws", "5000", "--seed", "3"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["spec"].startswith("aws-standard:max_attempts=3,")
    assert document["max_attempts"] == 3
    assert document["budget"] == "quota:capacity=500,cost=14,timeout_cost=14,throttle_cost=5,increment=1"
    assert [row["retry"] for row in document["retries"]] == [1, 2]
    second = document["retries"][1]
    assert set(second) == {"retry", "p5", "median", "p95", "mean"}
    assert second["mean"] == pytest.approx(0.05, rel=0.05)  # U(0, 100 ms)
    plain = json.loads(CliRunner().invoke(strategies, ["show", "fixed:250ms", "--json", "--draws", "10"]).output)
    assert plain["max_attempts"] is None and plain["budget"] is None
    assert [row["median"] for row in plain["retries"]] == [0.25] * 10


def test_strategies_show_table_and_an_unknown_preset():
    result = CliRunner().invoke(strategies, ["show", "envoy", "--draws", "1000"])
    assert result.exit_code == 0
    for words in ("max attempts: 2", "budget: concurrency:percent=0,min=3", "retries on: [timeout,connection,5xx]"):
        assert words in result.output
    assert "connections:" not in result.output
    grpc = CliRunner().invoke(strategies, ["show", "grpc-retry", "--draws", "10"])
    assert "connections: one gRPC channel per process: after a refused or reset connect" in grpc.output
    assert "min(1s x 1.6^(n-1), 2m) x U(0.8, 1.2)" in " ".join(grpc.output.split())
    result = CliRunner().invoke(strategies, ["show", "envoi"])
    assert result.exit_code == 2
    assert "unknown strategy 'envoi' (did you mean 'envoy'?)" in result.output
    # registration order: a module that builds on another (dotnet on polly) registers the other first
    assert "presets: aws-standard, aws-adaptive, aws-standard-2025, aws-legacy, polly, dotnet-standard, envoy" in (
        result.output
    )


def test_strategies_lists_presets_in_a_section_of_their_own():
    result = CliRunner().invoke(strategies, [], terminal_width=200)
    assert result.exit_code == 0
    listing, presets_and_budgets = result.output.split("Client-library presets")
    presets, _ = presets_and_budgets.split("Retry budgets")
    assert "smira" in listing and "grpc-retry" not in listing
    for name in ("grpc-retry", "envoy", "aws-standard", "aws-adaptive", "polly", "resilience4j", "urllib3", "finagle"):
        assert name in presets
