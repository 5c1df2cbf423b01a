"""The load generator's options: what each is, what it accepts, and how they are read.

:data:`OPTIONS` (with a value) and :data:`FLAGS` (on or off) are the options, in the
order the web UI shows them; :mod:`retrystorm.loadgen.flags` registers them on Locust's parser.
Values stay strings (specs and durations as people write them) until
:func:`load_options` turns them into a :class:`LoadOptions`; every error names the flag
and what it accepts, on one line. The same check runs three times: as each flag's
argparse ``type`` (a bad flag exits 2 before anything starts), on the web UI's
``POST /swarm`` (see :mod:`retrystorm.loadgen.web`), and at test start in every process.

No Locust import, so this module stays importable anywhere.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Callable, Mapping
from typing import Any

from retrystorm.durations import format_duration, parse_duration
from retrystorm.errors import SpecError, UserError, shown
from retrystorm.loadgen.request_mix import (
    MAX_REQUESTS,
    RequestSpec,
    parse_request_lines,
    split_requests,
)
from retrystorm.loadgen.service_config import read_strategy
from retrystorm.loadgen.spikes import NO_SPIKES, LoadSpike, parse_load_spikes
from retrystorm.loadgen.strategies import (
    NONE,
    STRATEGIES,
    GrpcBackoff,
    RetryBudget,
    RetryPolicy,
    parse_budget,
    parse_strategy,
    resolve,
)
from retrystorm.loadgen.strategies.controls import MAX_ATTEMPTS, MAX_DEADLINE_S
from retrystorm.loadgen.strategies.retry_on import RetryOn
from retrystorm.loadgen.think import ThinkTime, parse_think_time
from retrystorm.user_files import UserFileError, read_user_file

DEFAULT_STRATEGY = "exponential:base=100ms,factor=2.718,max=5m,jitter=full"
#: The ceiling of --attempt-timeout and --metrics-linger: one day, as a request's deadline.
MAX_FLAG_DURATION_S = MAX_DEADLINE_S
_DAY = format_duration(MAX_FLAG_DURATION_S)
_WHOLE = re.compile(r"[+-]?[0-9]{1,20}", re.ASCII)
#: ``--max-attempts`` and ``--retry-budget`` not given: a preset's own, else none.
AUTO = "auto"
#: ``--retry-preset`` not used: the strategy comes from ``--retry-strategy``.
CUSTOM = "custom"
#: The presets, the choices of the web UI's preset field.
PRESETS = tuple(name for name, cls in STRATEGIES.items() if cls.is_preset)


class Arrival(enum.StrEnum):
    """Closed loop (wait for each request) or open loop (start requests on schedule)."""

    CLOSED = "closed"
    OPEN = "open"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class LoadOptions:
    """Everything a user needs to behave like one of the seed's clients."""

    policy: RetryPolicy
    budget: RetryBudget | None
    think: ThinkTime
    attempt_timeout_s: float
    arrival: Arrival
    request_path: str
    seed: int | None
    #: What one logical request is: the weighted mix of ``--request`` (default: ``GET --request-path``).
    requests: tuple[RequestSpec, ...] = ()
    #: Load spikes (``--load-spikes``), played by the single process or the master
    #: (:mod:`retrystorm.loadgen.spike_player`).
    spikes: tuple[LoadSpike, ...] = ()

    @property
    def request_mix(self) -> tuple[RequestSpec, ...]:
        """The requests to draw from: ``requests``, or ``GET request_path`` named after its path."""
        return self.requests or (RequestSpec(path=self.request_path, name=self.request_path),)

    @property
    def strategy_name(self) -> str:
        """The strategy's family name: the ``strategy`` label of every metric."""
        return self.policy.strategy.name

    @property
    def connect_timeout_s(self) -> float:
        """How long an attempt may take to connect.

        The attempt timeout, raised to the strategy's ``min_connect_timeout`` for
        ``grpc`` (gRPC connects with deadline ``max(deadline, MIN_CONNECT_TIMEOUT)``).
        """
        strategy = self.policy.strategy
        if isinstance(strategy, GrpcBackoff):
            return max(self.attempt_timeout_s, strategy.min_connect_timeout_s)
        return self.attempt_timeout_s


def _none_or(text: str) -> str | None:
    """``None`` for ``none`` and, where a flag documents it, ``inf`` or ``forever``: no limit."""
    stripped = text.strip()
    return None if stripped.lower() in ("", "none", "forever", "inf") else stripped


def _strategy(text: str) -> Any:
    return read_strategy(text)


def _preset(text: str) -> str | None:
    name = text.strip()
    if name in ("", CUSTOM):
        return None
    if name not in PRESETS:
        raise SpecError(f"got {text!r}, expected {CUSTOM} or one of {', '.join(PRESETS)}")
    return name


def _budget(text: str) -> RetryBudget | str | None:
    if text.strip().lower() == AUTO:
        return None
    value = _none_or(text)
    return NONE if value is None else parse_budget(value)


def _positive_duration(text: str, what: str) -> float:
    seconds = parse_duration(text, what=what, at_most=MAX_FLAG_DURATION_S)
    if not seconds > 0:
        raise SpecError(
            f"{what}: got {shown(text)}, expected a duration > 0 and <= {format_duration(MAX_FLAG_DURATION_S)}, like 2s"
        )
    return seconds


def _max_attempts(text: str) -> int | str | None:
    if text.strip().lower() == AUTO:
        return None
    value = _none_or(text)
    if value is None:
        return NONE
    if not (_WHOLE.fullmatch(value) and 1 <= int(value) <= MAX_ATTEMPTS):
        expected = f"a whole number >= 1 and <= {MAX_ATTEMPTS}, none (retry forever) or {AUTO}"
        raise SpecError(f"got {shown(text)}, expected {expected}")
    return int(value)


def _deadline(text: str) -> float | None:
    value = _none_or(text)
    return None if value is None else _positive_duration(value, "deadline")


def _arrival(text: str) -> Arrival:
    try:
        return Arrival(text.strip())
    except ValueError:
        raise SpecError(f"got {shown(text)}, expected one of {', '.join(Arrival)}") from None


def _path(text: str) -> str:
    if not text.startswith("/") or any(c.isspace() for c in text):
        raise SpecError(f"got {shown(text)}, expected a path starting with / and without spaces, like /api")
    return text


def _requests(text: str) -> tuple[RequestSpec, ...]:
    lines = split_requests(text)
    return parse_request_lines(lines) if any(line.strip() for line in lines) else ()


#: The largest requests file read: :data:`MAX_REQUESTS` lines of at most 80 KiB.
MAX_REQUESTS_FILE_BYTES = MAX_REQUESTS * 80 * 1024


def read_requests_file(text: str) -> str:
    """The text of a requests file (one request per line), checked; ``""`` for none."""
    value = _none_or(text)
    if value is None:
        return ""
    try:
        raw = read_user_file(value, MAX_REQUESTS_FILE_BYTES)
    except UserFileError as error:
        raise SpecError(f"cannot read {shown(value)}: {error}") from None
    if len(raw) > MAX_REQUESTS_FILE_BYTES:
        limit_kib = MAX_REQUESTS_FILE_BYTES // 1024
        raise SpecError(f"{shown(value)}: larger than {limit_kib} KiB; a requests file holds at most {MAX_REQUESTS}")
    try:
        content = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SpecError(f"cannot read {shown(value)}: not UTF-8 text; expected one request per line") from None
    _requests(content)
    return content


def _retry_on(text: str) -> RetryOn | None:
    """``auto`` (the strategy's own conditions, else the default), or conditions like ``timeout,5xx,429``."""
    if text.strip().lower() == AUTO:
        return None
    try:
        return RetryOn.parse(text)
    except SpecError as error:  # the flag's name is put in front of the message: drop the parser's own
        raise SpecError(str(error).removeprefix("retry_on: ") + f", or {AUTO}") from None


def _seed(text: str) -> int | None:
    value = _none_or(text)
    if value is None:
        return None
    if not _WHOLE.fullmatch(value):
        expected = "a whole number of at most 20 digits, or none (a fresh seed per process)"
        raise SpecError(f"got {shown(text)}, expected {expected}")
    return int(value)


@dataclasses.dataclass(frozen=True, slots=True)
class _Option:
    flag: str
    default: str
    help: str
    check: Callable[[str], Any]
    choices: tuple[str, ...] | None = None

    @property
    def dest(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")

    def read(self, text: str) -> Any:
        try:
            return self.check(text)
        except SpecError as error:
            raise UserError(f"{self.flag}: {error}") from None


#: The options that take a value, in the order the web UI shows them.
OPTIONS = (
    _Option(
        "--retry-strategy",
        DEFAULT_STRATEGY,
        "Retry strategy spec: none, fixed:100ms, uniform, exponential:base=..,factor=..,max=..,jitter=.., "
        "decorrelated, grpc, table, smira; or a client library's preset with its parameters, "
        "like envoy:num_retries=2, or grpc-service-config:FILE.json (see `retrystorm strategies`).",
        _strategy,
    ),
    _Option(
        "--retry-preset",
        CUSTOM,
        f"A client library's retry behaviour with its defaults ({CUSTOM}: use --retry-strategy).",
        _preset,
        (CUSTOM, *PRESETS),
    ),
    _Option(
        "--retry-budget",
        AUTO,
        f"Retry budget shared by this process's users: none, tokens, quota, ratio, adaptive, concurrency, "
        f"aws-rate-limiter; {AUTO}: a preset's own, else none.",
        _budget,
    ),
    _Option(
        "--think-time",
        "exponential:10s",
        "Wait before each logical request: exponential:MEAN (or just MEAN), constant:T, between:MIN,MAX.",
        parse_think_time,
    ),
    _Option(
        "--attempt-timeout",
        "2s",
        f"Give up an attempt after this long (connect and response), at most {_DAY}; the server keeps working on it.",
        lambda text: _positive_duration(text, "duration"),
    ),
    _Option(
        "--max-attempts",
        AUTO,
        (
            f"Attempts per logical request, the first included, at most {MAX_ATTEMPTS}; none (or inf, forever): "
            f"forever; {AUTO}: a preset's own, else none."
        ),
        _max_attempts,
    ),
    _Option(
        "--request-deadline",
        "none",
        f"Give up a logical request after this long, at most {_DAY}; none (or inf, forever): never.",
        _deadline,
    ),
    _Option(
        "--arrival",
        "closed",
        "closed: wait for each request; open: start requests on schedule.",
        _arrival,
        tuple(Arrival),
    ),
    _Option("--request-path", "/api", "Path of each request (GET) when no --request is given.", _path),
    _Option(
        "--request",
        "",
        f"What a logical request sends, repeatable (at most {MAX_REQUESTS}, drawn by weight): "
        "'METHOD PATH [weight=N] [name=NAME] [header=NAME:VALUE]... [body=TEXT]'; in this form, "
        "separate several with ' ;; '. Default: GET --request-path.",
        _requests,
    ),
    _Option(
        "--retry-on",
        AUTO,
        "Failures retried, comma-separated: timeout, connection, 4xx, 5xx, a status NNN, NNN/retry-after; any "
        f"other gives up at once. {AUTO}: the strategy's own, else timeout,connection,5xx,429.",
        _retry_on,
    ),
    _Option(
        "--load-spikes",
        NO_SPIKES,
        "Load spikes during the test: AT+FOR:xFACTOR, comma-separated, like 60s+10s:x2 (from 60 s after the start, "
        "for 10 s, twice the users; spikes add up; open loop: the arrival rate); none: no spike.",
        parse_load_spikes,
    ),
    _Option("--random-seed", "none", "Seed for think times and jitter; none: a fresh seed per process.", _seed),
)
_BY_DEST = {option.dest: option for option in OPTIONS}

#: Boolean flags: ``(flag, help)``; all default to off.
FLAGS = (
    ("--keep-backoff", "Keep the retry counter after a success instead of resetting it."),
    ("--ignore-retry-after", "Ignore the server's Retry-After header."),
)
FLAG_DESTS = tuple(flag.removeprefix("--").replace("-", "_") for flag, _ in FLAGS)


def load_options(values: Mapping[str, Any]) -> LoadOptions:
    """Build :class:`LoadOptions` from parsed option values (strings and booleans).

    ``values`` is ``vars(environment.parsed_options)`` or the same overlaid with a web
    form; missing keys take their defaults. Raises :class:`UserError` naming the flag.
    A preset (``--retry-strategy envoy`` or ``--retry-preset envoy``) brings its own
    attempt cap and budget unless ``--max-attempts`` or ``--retry-budget`` is given.
    """
    read = {dest: option.read(str(values.get(dest, option.default))) for dest, option in _BY_DEST.items()}
    flags = {dest: bool(values.get(dest, False)) for dest in FLAG_DESTS}
    strategy = read["retry_strategy"]
    if read["retry_preset"] is not None:
        written = str(values.get("retry_strategy", DEFAULT_STRATEGY)).strip()
        if written != DEFAULT_STRATEGY:
            raise UserError(
                f"--retry-preset {read['retry_preset']} and --retry-strategy {written}: give one of them "
                f"(--retry-preset {CUSTOM} to use --retry-strategy)"
            )
        strategy = parse_strategy(read["retry_preset"])
    try:
        policy, budget = resolve(
            strategy,
            max_attempts=read["max_attempts"],
            budget=read["retry_budget"],
            deadline_s=read["request_deadline"],
            reset_after_success=not flags["keep_backoff"],
            honour_retry_after=not flags["ignore_retry_after"],
            retry_on=read["retry_on"],
        )
    except SpecError as error:
        raise UserError(str(error)) from None
    return LoadOptions(
        policy=policy,
        budget=budget,
        think=read["think_time"],
        attempt_timeout_s=read["attempt_timeout"],
        arrival=read["arrival"],
        request_path=read["request_path"],
        seed=read["random_seed"],
        requests=_all_requests(read["request"], str(values.get("requests_file") or "")),
        spikes=read["load_spikes"],
    )


def _all_requests(from_flags: tuple[RequestSpec, ...], file_text: str) -> tuple[RequestSpec, ...]:
    """``--request``'s requests, then ``--requests-file``'s; together at most :data:`MAX_REQUESTS`."""
    if not file_text:
        return from_flags
    try:
        return parse_request_lines([*(spec.to_json() for spec in from_flags), *file_text.splitlines()])
    except SpecError as error:
        raise UserError(f"--request and --requests-file: {error}") from None


def overlay_form(values: Mapping[str, Any], form: Mapping[str, str]) -> dict[str, Any]:
    """``values`` with this module's fields replaced by a web form's (as Locust reads it)."""
    merged = dict(values)
    for key, text in form.items():
        if key in _BY_DEST:
            merged[key] = text
        elif key in FLAG_DESTS:
            merged[key] = text == "true"
    return merged
