"""A :class:`~retrystorm.experiment.scenario.RunSpec` in the load generator's terms: the options both backends start
Locust with.

:func:`locust_options` is the one translation: the local backend writes its result as
command-line flags (:mod:`retrystorm.runner.local.locust`), the compose backend posts it as a
running master's ``POST /swarm`` form (:mod:`retrystorm.runner.locust_master`). Where the
scenario's terms and the load generator's differ:

* **open arrivals**: the scenario gives ``rate`` (logical requests/s); the Locust user
  starts one request per think time per user, so the think time becomes
  ``exponential:(users / rate)`` (Poisson arrivals at ``rate`` in all);
* **no attempt timeout** (``attempt_timeout: null``): the load generator needs a
  finite one, so it gets ``2 * duration + 60 s``, longer than the run: it never fires;
* **no spawn rate**: every user starts in the first second (``spawn_rate = users``);
* **requests**: the scenario's ``requests:`` as ``request``, one JSON object per line
  (the lossless form of ``--request``; the local backend passes one ``--request`` per
  line), empty for the default ``GET /api``; ``retry_on`` as the policy's conditions
  (``[timeout,connection,5xx,429]``), or ``auto`` when it has none;
* **run time**: the run's duration plus :data:`LOCUST_RUN_MARGIN_S`, rounded up to a
  whole second, so the load stops by itself even if the runner is gone;
* **spikes**: the run's ``spike`` windows as ``load_spikes`` (``AT+FOR:xFACTOR``, from the
  start of the load; :mod:`retrystorm.loadgen.spikes`), played by the single Locust process or the
  master (:mod:`retrystorm.loadgen.spike_player`); ``none`` without any;
* **gRPC**: a gRPC load (``spec.grpc``) adds the gRPC user's ``grpc_mode``, ``grpc_method`` and
  ``grpc_request`` (its bytes as ``b64:``); in ``real`` mode grpcio runs the strategy written as a service
  config (:func:`retrystorm.loadgen.grpc_settings.real_service_config`), checked here as Locust will read it.
"""

from __future__ import annotations

import base64
import math
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path

import retrystorm.loadgen
from retrystorm.durations import format_duration
from retrystorm.errors import UserError
from retrystorm.experiment.scenario import RunSpec, SpikeWindow, TriggerWindow
from retrystorm.loadgen.grpc_settings import GrpcMode, GrpcSettings, real_service_config
from retrystorm.loadgen.options import AUTO, FLAG_DESTS, OPTIONS, load_options, overlay_form
from retrystorm.loadgen.spikes import LoadSpike, format_load_spikes
from retrystorm.loadgen.think import ExponentialThink, ThinkTime
from retrystorm.loadgen.urllib3_settings import real_preset

#: A load generator's own time limit is the run's duration plus this: a bound if the runner is gone.
LOCUST_RUN_MARGIN_S = 30.0
#: The locustfile every backend starts Locust with (the retrystorm user and its options).
LOCUSTFILE = Path(retrystorm.loadgen.__file__).with_name("locustfile.py")
GRPC_LOCUSTFILE = LOCUSTFILE.with_name("grpc_locustfile.py")
#: The longest argument Locust's command line may take here (Linux: 128 KiB per argument), with margin.
MAX_ARGUMENT_CHARS = 100_000


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` now (for Locust, which cannot report the one it took)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def locustfile(spec: RunSpec) -> Path:
    """The locustfile of ``spec``'s load: the gRPC user's for a gRPC load, else the HTTP users' (whose
    ``--http-client`` chooses urllib3's own ``Retry`` for ``http_client: urllib3``)."""
    return GRPC_LOCUSTFILE if spec.grpc is not None else LOCUSTFILE


def think_time(spec: RunSpec) -> ThinkTime:
    """The Locust user's think time: ``spec.think``, or ``Exp(users / rate)`` for open arrivals."""
    if spec.arrival == "open" and spec.rate:
        return ExponentialThink(average_s=spec.users / spec.rate)
    return spec.think


def attempt_timeout_s(spec: RunSpec) -> float:
    """The Locust user's attempt timeout: ``spec.attempt_timeout_s``, or ``2 * duration + 60`` when it has none."""
    return spec.attempt_timeout_s if spec.attempt_timeout_s is not None else 2 * spec.duration_s + 60


def spawn_rate(spec: RunSpec) -> float:
    """Users started per second: ``spec.spawn_rate``, or every user in the first second."""
    return spec.spawn_rate if spec.spawn_rate is not None else float(spec.users)


def load_spikes(windows: Sequence[TriggerWindow]) -> str:
    """The ``--load-spikes`` text of the ``spike`` windows among ``windows`` (``none`` without any)."""
    spikes = [LoadSpike(w.start_s, w.end_s, w.factor) for w in windows if isinstance(w, SpikeWindow)]
    return format_load_spikes(spikes)


def locust_options(
    spec: RunSpec, *, run_margin_s: float = LOCUST_RUN_MARGIN_S, spikes: Sequence[TriggerWindow] = ()
) -> dict[str, str]:
    """Every Locust option of ``spec``, keyed by its flag without dashes (``retry_strategy``), as text.

    ``users``, ``spawn_rate`` and ``run_time``, then every option of :mod:`retrystorm.loadgen.options`
    and every flag (``"true"``/``"false"``), the ones ``spec`` does not set at their
    defaults: a running master keeps form values from its previous swarm, so each
    is given explicitly. See the module docstring for the translations.
    """
    policy, budget, deadline_s = spec.policy, spec.budget, spec.policy.deadline_s
    options = {
        "users": str(spec.users),
        "spawn_rate": f"{spawn_rate(spec):g}",
        "run_time": f"{math.ceil(spec.duration_s + run_margin_s)}s",
    }
    options.update({option.dest: option.default for option in OPTIONS})
    options.update(
        retry_strategy=policy.strategy.spec(),
        retry_budget=budget.spec() if budget is not None else "none",
        think_time=think_time(spec).spec(),
        attempt_timeout=format_duration(attempt_timeout_s(spec)),
        max_attempts=str(policy.max_attempts) if policy.max_attempts is not None else "none",
        request_deadline=format_duration(deadline_s) if deadline_s else "none",
        arrival=spec.arrival,
        random_seed=str(spec.seed),
        request="\n".join(request.to_json() for request in spec.requests),
        retry_on=policy.retry_on.text() if policy.retry_on is not None else "auto",
        load_spikes=load_spikes(spikes),
    )
    options.update(dict.fromkeys(FLAG_DESTS, "false"))
    options["keep_backoff"] = "false" if policy.reset_after_success else "true"
    options["ignore_retry_after"] = "false" if policy.honour_retry_after else "true"
    if spec.grpc is not None:
        options.update(grpc_options(spec.grpc))
    if spec.http_client == "urllib3":  # urllib3's Retry takes them from the preset: the flags stay at their defaults
        options.update(max_attempts=AUTO, retry_budget=AUTO, retry_on=AUTO, request_deadline="none")
        options["http_client"] = "urllib3"
    return options


def locust_flags(options: Mapping[str, str]) -> list[str]:
    """:func:`locust_options` as Locust's command line: ``--name=value``, on/off flags bare when on, one
    ``--request`` per request line (none for the default); :class:`~retrystorm.errors.UserError` for a value
    longer than :data:`MAX_ARGUMENT_CHARS`."""
    argv = []
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if name == "request":  # repeatable: one flag per request, none for the default
            argv += [f"{flag}={line}" for line in value.splitlines()]
        elif name not in FLAG_DESTS:
            if len(value) > MAX_ARGUMENT_CHARS:
                raise UserError(
                    f"{name}: {len(value):,} characters; Locust's command line takes at most "
                    f"{MAX_ARGUMENT_CHARS:,} per option here"
                )
            argv.append(f"{flag}={value}")
        elif value == "true":
            argv.append(flag)
    return argv


def grpc_options(settings: GrpcSettings) -> dict[str, str]:
    """The gRPC user's options (:data:`retrystorm.loadgen.grpc_settings.GRPC_OPTIONS`) for ``settings``."""
    request = "b64:" + base64.b64encode(settings.request).decode() if settings.request else ""
    return {"grpc_mode": settings.mode.value, "grpc_method": settings.method, "grpc_request": request}


def check_options(spec: RunSpec) -> None:
    """The load generator's own check of ``spec``'s options, as a master and every worker run it.

    Raises :class:`~retrystorm.errors.UserError` naming the flag.
    """
    values = overlay_form({}, locust_options(spec))
    options = load_options(values)
    if spec.grpc is not None and spec.grpc.mode is GrpcMode.REAL:
        real_service_config(spec.policy.strategy.spec(), options.policy.strategy)
    if spec.http_client == "urllib3":
        real_preset(options.policy.strategy, values)


def describe_load(spec: RunSpec) -> str:
    """``300 users (spawn 300/s), think exponential:3s, closed loop, timeout 2s, strategy fixed:100ms``."""
    policy = spec.policy
    extra = [f"budget {spec.budget.spec()}"] if spec.budget is not None else []
    if policy.max_attempts is not None:
        extra.append(f"at most {policy.max_attempts} attempts")
    if policy.deadline_s is not None:
        extra.append(f"deadline {format_duration(policy.deadline_s)}")
    if not policy.reset_after_success:
        extra.append("backoff kept after success")
    if policy.retry_on is not None:
        extra.append(f"retry on {policy.retry_on.text()}")
    if spec.requests:
        extra.append("requests " + ", ".join(f"{request.name} x{request.weight}" for request in spec.requests))
    if spec.grpc is not None:
        who = "grpcio retries (real)" if spec.grpc.mode is GrpcMode.REAL else "the strategy retries (emulated)"
        extra.append(f"gRPC calls of {spec.grpc.method}, {who}")
    if spec.http_client == "urllib3":
        extra.append("urllib3's own Retry retries")
    return ", ".join(
        [
            f"{spec.users} users (spawn {spawn_rate(spec):g}/s)",
            f"think {think_time(spec).spec()}",
            f"{spec.arrival} loop",
            f"timeout {format_duration(attempt_timeout_s(spec))}",
            f"strategy {policy.strategy.spec()}",
            *extra,
        ]
    )
