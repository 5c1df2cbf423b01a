"""urllib3's own ``Retry`` from the ``urllib3`` preset: what the urllib3 Locust user retries with.

The preset's parameters are ``Retry``'s own (:class:`~retrystorm.loadgen.strategies.presets.urllib3.Urllib3Retry`,
urllib3 2.8.0 ``src/urllib3/util/retry.py``), so the user's settings pass through unchanged:
``urllib3:total=5,backoff_factor=0.5,status_forcelist=[503]`` becomes
``Retry(total=5, backoff_factor=0.5, backoff_max=120, backoff_jitter=0, status_forcelist=[503],
respect_retry_after_header=True)``; the rest is ``Retry``'s defaults (``allowed_methods``: the idempotent
methods; ``raise_on_status``: a spent status retry raises ``MaxRetryError``).

urllib3 takes its attempt cap and conditions from the ``Retry`` and has no budget, no deadline of a whole
request and no way to keep its backoff between requests: the options that would set them
(``--max-attempts``, ``--retry-budget``, ``--request-deadline``, ``--retry-on``, ``--keep-backoff``,
``--ignore-retry-after``) are refused, naming the preset parameter that does it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from retrystorm.errors import UserError, shown
from retrystorm.loadgen.options import OPTIONS
from retrystorm.loadgen.strategies import RetryStrategy
from retrystorm.loadgen.strategies.presets import Urllib3Retry

_DEFAULTS = {option.dest: option.default for option in OPTIONS}
#: Options urllib3 cannot take, and what to write instead.
_REFUSED = {
    "max_attempts": "write total into the preset (urllib3:total=N, N retries)",
    "retry_budget": "urllib3 has no retry budget",
    "request_deadline": "urllib3 bounds each attempt (--attempt-timeout), not a request",
    "retry_on": "write status_forcelist into the preset (urllib3:status_forcelist=[503])",
}
_REFUSED_FLAGS = {
    "keep_backoff": "urllib3 starts every request's backoff afresh",
    "ignore_retry_after": "write respect_retry_after_header=false into the preset",
}


def real_preset(strategy: RetryStrategy, values: Mapping[str, Any]) -> Urllib3Retry:
    """The ``urllib3`` preset urllib3 retries with; :class:`UserError` for another strategy or a refused option.

    ``values``: the parsed options (``vars(parsed_options)``), to tell a flag given from its default.
    """
    if not isinstance(strategy, Urllib3Retry):
        text = str(values.get("retry_strategy", _DEFAULTS["retry_strategy"])).strip()
        raise UserError(
            f"--retry-strategy {shown(text)}: urllib3's own Retry runs the urllib3 preset only; give "
            "urllib3:total=N,backoff_factor=S,... (see `retrystorm strategies show urllib3`)"
        )
    for dest, instead in _REFUSED.items():
        written = str(values.get(dest, _DEFAULTS[dest])).strip()
        if written != _DEFAULTS[dest]:
            raise UserError(f"--{dest.replace('_', '-')} {shown(written)}: not with urllib3's own Retry; {instead}")
    for dest, instead in _REFUSED_FLAGS.items():
        if values.get(dest):
            raise UserError(f"--{dest.replace('_', '-')}: not with urllib3's own Retry; {instead}")
    return strategy


def retry_arguments(preset: Urllib3Retry) -> dict[str, Any]:
    """urllib3 ``Retry``'s keyword arguments for ``preset`` (the names are the preset's parameters)."""
    return {
        "total": preset.total,
        "backoff_factor": preset.backoff_factor,
        "backoff_max": preset.backoff_max_s,
        "backoff_jitter": preset.backoff_jitter_s,
        "status_forcelist": list(preset.status_forcelist) or None,
        "respect_retry_after_header": preset.respect_retry_after_header,
    }
