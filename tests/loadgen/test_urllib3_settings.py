"""The urllib3 user's ``Retry``: the preset's settings passed through, and what urllib3 cannot take refused."""

from __future__ import annotations

import pytest
from urllib3.util.retry import Retry

from retrystorm.errors import UserError
from retrystorm.loadgen.strategies import parse_strategy
from retrystorm.loadgen.urllib3_settings import real_preset, retry_arguments

FIELDS = ("total", "backoff_factor", "backoff_max", "backoff_jitter", "status_forcelist", "respect_retry_after_header")


def test_the_preset_s_defaults_are_urllib3_s_retry_default():
    """``urllib3`` as given is ``Retry.DEFAULT`` (``Retry(3)``), field by field, in the installed urllib3."""
    built = Retry(**retry_arguments(real_preset(parse_strategy("urllib3"), {})))
    for field in (*FIELDS, "allowed_methods", "raise_on_status", "connect", "read", "status"):
        assert getattr(built, field) == getattr(Retry.DEFAULT, field), field


def test_the_user_s_settings_pass_through():
    spec = "urllib3:total=5,backoff_factor=0.5,backoff_max=10s,backoff_jitter=100ms,status_forcelist=[429,503]"
    built = Retry(**retry_arguments(real_preset(parse_strategy(spec), {})))
    assert (built.total, built.backoff_factor, built.backoff_max, built.backoff_jitter) == (5, 0.5, 10.0, 0.1)
    assert set(built.status_forcelist) == {429, 503}
    assert built.respect_retry_after_header is True
    off = parse_strategy("urllib3:respect_retry_after_header=false")
    assert Retry(**retry_arguments(real_preset(off, {}))).respect_retry_after_header is False


@pytest.mark.parametrize(
    ("strategy", "values", "message"),
    [
        (
            "fixed:100ms",
            {"retry_strategy": "fixed:100ms"},
            "--retry-strategy 'fixed:100ms': urllib3's own Retry runs the urllib3 preset only",
        ),
        ("urllib3", {"max_attempts": "3"}, "--max-attempts '3': not with urllib3's own Retry; write total"),
        ("urllib3", {"retry_budget": "tokens"}, "--retry-budget 'tokens': not with urllib3's own Retry"),
        ("urllib3", {"request_deadline": "5s"}, "--request-deadline '5s': not with urllib3's own Retry"),
        ("urllib3", {"retry_on": "5xx"}, "--retry-on '5xx': not with urllib3's own Retry; write status_forcelist"),
        ("urllib3", {"keep_backoff": True}, "--keep-backoff: not with urllib3's own Retry"),
        ("urllib3", {"ignore_retry_after": True}, "--ignore-retry-after: not with urllib3's own Retry"),
    ],
)
def test_what_urllib3_cannot_take_is_refused_naming_the_flag(strategy, values, message):
    with pytest.raises(UserError) as refused:
        real_preset(parse_strategy(strategy), values)
    assert message in str(refused.value)
    assert "\n" not in str(refused.value)


def test_the_options_at_their_defaults_are_accepted():
    values = {"max_attempts": "auto", "retry_budget": "auto", "request_deadline": "none", "retry_on": "auto"}
    assert real_preset(parse_strategy("urllib3:total=0"), values).total == 0
