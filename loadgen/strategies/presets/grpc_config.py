"""A loaded gRPC service config (JSON) -> a ``grpc-retry`` preset. Pure: the caller reads the file.

Reads ``methodConfig[i].retryPolicy`` (the first method config that has one, or the
one ``index`` names) and ``retryThrottling``, validated as gRFC A6 ("Validation of
retryPolicy", "Validation of retryThrottling") and grpc-go ``service_config.go`` do.
Every problem is one :class:`ServiceConfigError` naming the JSON path:
``methodConfig[0].retryPolicy.backoffMultiplier: got 0; must be > 0``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from retrystorm.errors import SpecError
from retrystorm.loadgen.strategies.presets.grpc import CODES, GrpcRetry

#: proto3 JSON Duration: decimal seconds with an ``s`` (``"0.1s"``, ``"2s"``).
_DURATION = re.compile(r"^-?\d+(\.\d{1,9})?s$")
_CODE_BY_NUMBER = {number: name for name, number in CODES.items()}


class ServiceConfigError(SpecError):
    """A service config that cannot become a retry policy; the message names the JSON path."""


def _fail(path: str, message: str) -> ServiceConfigError:
    return ServiceConfigError(f"{path}: {message}")


def _mapping(value: object, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(path, f"got {_show(value)}; expected a JSON object")
    return value


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _required(obj: Mapping[str, Any], key: str, path: str) -> object:
    if key not in obj:
        raise _fail(f"{path}.{key}", "missing; gRFC A6 requires it")
    return obj[key]


def _duration_s(value: object, path: str) -> float:
    if not isinstance(value, str) or not _DURATION.match(value):
        raise _fail(path, f'got {_show(value)}; expected a proto3 JSON duration like "0.1s"')
    seconds = float(value[:-1])
    if not seconds > 0:
        raise _fail(path, f"got {value}; must be > 0")
    return seconds


def _number(value: object, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _fail(path, f"got {_show(value)}; expected a JSON number")
    return float(value)


def _codes(value: object, path: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise _fail(path, f'got {_show(value)}; expected a non-empty list of status codes like ["UNAVAILABLE"]')
    names: list[str] = []
    for index, item in enumerate(value):
        if isinstance(item, str) and item.upper() in CODES:
            name = item.upper()
        elif isinstance(item, int) and not isinstance(item, bool) and item in _CODE_BY_NUMBER:
            name = _CODE_BY_NUMBER[item]
        else:
            raise _fail(f"{path}[{index}]", f"got {_show(item)}; expected a gRPC status code name or number 0-16")
        if name not in names:
            names.append(name)
    return tuple(names)


def _pick(method_configs: object, index: int | None) -> tuple[Mapping[str, Any], str]:
    if not isinstance(method_configs, list):
        raise _fail("methodConfig", f"got {_show(method_configs)}; expected a list of method configs")
    if index is not None:
        if not 0 <= index < len(method_configs):
            raise _fail(f"methodConfig[{index}]", f"no such entry; the file has {len(method_configs)}")
        chosen = _mapping(method_configs[index], f"methodConfig[{index}]")
        if "retryPolicy" not in chosen:
            what = "a hedgingPolicy, not supported" if "hedgingPolicy" in chosen else "no retryPolicy"
            raise _fail(f"methodConfig[{index}]", f"{what}; expected a retryPolicy")
        return chosen, f"methodConfig[{index}]"
    for position, entry in enumerate(method_configs):
        if isinstance(entry, Mapping) and "retryPolicy" in entry:
            return entry, f"methodConfig[{position}]"
    raise _fail("methodConfig", "no entry has a retryPolicy; nothing to retry with")


def preset_from_service_config(config: object, *, index: int | None = None) -> GrpcRetry:
    """The ``grpc-retry`` preset of a parsed service config; ``index`` picks a method config."""
    root = _mapping(config, "(top level)")
    if "methodConfig" not in root:
        raise _fail("methodConfig", "missing; expected methodConfig[].retryPolicy")
    method, where = _pick(root["methodConfig"], index)
    path = f"{where}.retryPolicy"
    policy = _mapping(method["retryPolicy"], path)
    attempts = _required(policy, "maxAttempts", path)
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 2:
        raise _fail(f"{path}.maxAttempts", f"got {_show(attempts)}; must be a whole number > 1")
    initial = _duration_s(_required(policy, "initialBackoff", path), f"{path}.initialBackoff")
    maximum = _duration_s(_required(policy, "maxBackoff", path), f"{path}.maxBackoff")
    multiplier = _number(_required(policy, "backoffMultiplier", path), f"{path}.backoffMultiplier")
    if not multiplier > 0:
        raise _fail(f"{path}.backoffMultiplier", f"got {multiplier:g}; must be > 0")
    codes = _codes(_required(policy, "retryableStatusCodes", path), f"{path}.retryableStatusCodes")
    max_tokens, ratio = _throttling(root.get("retryThrottling"))
    try:
        return GrpcRetry(
            max_attempts=attempts,
            initial_backoff_s=initial,
            max_backoff_s=maximum,
            multiplier=multiplier,
            codes=codes,
            max_tokens=max_tokens,
            token_ratio=ratio if ratio is not None else 0.1,
        )
    except SpecError as error:
        raise _fail(path, str(error)) from None


def _throttling(value: object) -> tuple[float | None, float | None]:
    if value is None:
        return None, None
    path = "retryThrottling"
    throttling = _mapping(value, path)
    tokens = _number(_required(throttling, "maxTokens", path), f"{path}.maxTokens")
    if not 0 < tokens <= 1000:
        raise _fail(f"{path}.maxTokens", f"got {tokens:g}; must be in (0, 1000]")
    ratio = _number(_required(throttling, "tokenRatio", path), f"{path}.tokenRatio")
    if not ratio > 0:
        raise _fail(f"{path}.tokenRatio", f"got {ratio:g}; must be > 0")
    ratio = math.floor(ratio * 1000) / 1000  # A6: decimal places beyond 3 are ignored
    if not 0 < ratio <= 1:
        raise _fail(f"{path}.tokenRatio", f"got {ratio:g}; the tokens budget takes (0, 1] (0.001 at least)")
    return tokens, ratio
