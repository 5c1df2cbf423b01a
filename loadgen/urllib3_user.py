"""The urllib3 Locust user: the seed's client whose retries are urllib3's own ``Retry``, as ``requests`` users run it.

Each logical request is one ``PoolManager.request`` with a ``Retry`` built from the ``urllib3`` preset the
user gives (:mod:`retrystorm.loadgen.urllib3_settings`): which failures are retried, how long urllib3 sleeps
between attempts, ``Retry-After`` and the attempt cap are urllib3's, not the strategies'. The attempt timeout
is ``urllib3.Timeout(total=..., connect=...)``. What is counted where, as the emulating user
(:class:`~retrystorm.loadgen.user.RetryingUser`) counts it:

* an attempt starts when urllib3 sends it: the request's first, then each one after ``Retry.sleep``;
* an attempt ends where urllib3 judges it: in ``Retry.increment`` (a failure urllib3 retries, or whose
  retries are spent) or with the answer urllib3 returns; its outcome from urllib3's error (a timeout,
  another connection error) or the status;
* a backoff is the time urllib3's ``Retry.sleep`` slept (``retrystorm_client_backoff_delay_seconds``).

The hooks subclass ``Retry`` and call urllib3's own methods: the decisions stay urllib3's. urllib3 sends a
retry with the same headers as the first attempt, so no ``Retrystorm-Attempt`` header tells the server it is
a retry (the built-in target's ``first_attempts`` fault rule cannot pick attempts of this user).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator, Mapping
from typing import Any

import urllib3
from urllib3.exceptions import HTTPError, MaxRetryError
from urllib3.exceptions import TimeoutError as Urllib3Timeout
from urllib3.util.retry import Retry

from retrystorm.errors import UserError
from retrystorm.loadgen.outcomes import AttemptOutcome, outcome_of_status
from retrystorm.loadgen.strategies import GiveUp
from retrystorm.loadgen.strategies.presets import Urllib3Retry
from retrystorm.loadgen.urllib3_settings import real_preset, retry_arguments
from retrystorm.loadgen.user import AttemptEnd, LogicalRequest, RetryingUser

logger = logging.getLogger(__name__)
#: How long a user whose settings were refused waits between its (empty) tasks, while the run quits.
REFUSED_WAIT_S = 3600.0
#: Connections a user's pool keeps (open arrival has several requests of one user in flight).
POOL_SIZE = 10


class _Attempts:
    """The attempts of one logical request, as urllib3 makes them."""

    def __init__(self, user: Urllib3User, request: LogicalRequest) -> None:
        self.user = user
        self.request = request
        self.started = 0.0
        self.started_epoch = 0.0
        self.open = False

    def begin(self) -> None:
        """An attempt is sent."""
        self.request.attempts += 1
        self.request.kind.metrics.attempts_started.inc()
        self.started, self.started_epoch, self.open = time.perf_counter(), time.time(), True

    def end(self, response: Any = None, error: BaseException | None = None) -> None:
        """The attempt in flight ended with ``response`` (urllib3's) or ``error``."""
        if not self.open:
            return
        self.open = False
        status, length = 0, 0
        if response is not None:
            status = int(response.status)
            length = len(response.data or b"")
            self.request.kind.metrics.response(status)
            outcome = outcome_of_status(status)
        elif isinstance(error, Urllib3Timeout | TimeoutError):
            outcome = AttemptOutcome.TIMEOUT
        else:
            outcome = AttemptOutcome.CONNECTION_ERROR
        latency_s = time.perf_counter() - self.started
        ended = AttemptEnd(self.request.attempts, outcome, status, latency_s, self.started_epoch, length, None, error)
        self.user.record_attempt(self.request, ended)

    @contextlib.contextmanager
    def backoff(self) -> Iterator[None]:
        """urllib3 sleeps before its next attempt: counted in ``users_in_backoff``, observed as a backoff."""
        metrics = self.user.metrics
        metrics.users_in_backoff.inc()
        slept = time.monotonic()
        try:
            yield
        finally:
            metrics.users_in_backoff.dec()
            metrics.retry(time.monotonic() - slept)


class ObservedRetry(Retry):
    """urllib3's ``Retry``, telling :class:`_Attempts` where an attempt ends and the next begins."""

    observer: _Attempts | None = None

    def new(self, **kw: Any) -> ObservedRetry:
        retry = super().new(**kw)
        retry.observer = self.observer
        return retry

    def increment(self, *args: Any, **kwargs: Any) -> ObservedRetry:
        """A failed attempt urllib3 judges (``response=`` or ``error=``): counted, then urllib3 decides."""
        if self.observer is not None:
            self.observer.end(kwargs.get("response"), kwargs.get("error"))
        return super().increment(*args, **kwargs)

    def sleep(self, response: Any = None) -> None:
        """urllib3's wait before its next attempt, which begins when it returns."""
        if self.observer is None:
            super().sleep(response)
            return
        with self.observer.backoff():
            super().sleep(response)
        self.observer.begin()


class Urllib3User(RetryingUser):
    """A seed client retried by urllib3 (see the module docstring); subclass it with ``abstract = False``."""

    abstract = True

    @classmethod
    def retried_by(cls, values: Mapping[str, Any]) -> str:  # noqa: ARG003 - the gRPC user reads its mode
        """What retries this user's requests, in words (the Retry storm tab says it of each run)."""
        return "urllib3's own Retry"

    def __init__(self, environment: Any) -> None:
        super().__init__(environment)
        self.preset: Urllib3Retry | None = None
        try:
            self.preset = real_preset(self.options.policy.strategy, vars(environment.parsed_options or {}))
        except UserError:  # said in one line at the test's start (http_clients, loadgen/locustfile.py): it quits
            logger.debug("a user that urllib3 cannot run is not started")
        timeout = urllib3.Timeout(total=self.attempt_limit_s, connect=self.options.connect_timeout_s)
        self.pool = urllib3.PoolManager(num_pools=1, maxsize=POOL_SIZE, timeout=timeout)

    def on_start(self) -> None:
        """Refused settings (:func:`~retrystorm.loadgen.urllib3_settings.real_preset`): the user sends nothing."""
        if self.preset is not None:
            super().on_start()

    def wait_time(self) -> float:
        return super().wait_time() if self.preset is not None else REFUSED_WAIT_S

    def on_stop(self) -> None:
        if self.preset is None:
            return
        super().on_stop()
        self.pool.clear()

    def run_request(self, slept_s: float) -> None:
        """One ``PoolManager.request`` with urllib3's ``Retry``; fires the logical event."""
        if self.preset is None:  # the run is quitting (http_clients, for loadgen/locustfile.py)
            return
        request = LogicalRequest(slept_s, self.kinds[self.mix.choose(self.rng).name])
        token = self.metrics.begin_request(request.started)
        try:
            reason = self.call(request)
        finally:
            self.metrics.end_request(token)
        self.finish(request, reason)

    def call(self, request: LogicalRequest) -> str | None:
        """urllib3's attempts and sleeps for ``request``; ``None``, or why it gave up."""
        if self.preset is None:
            raise UserError("urllib3 user: no urllib3 preset to retry with")
        kind = request.kind
        kind.metrics.requests_started.inc()
        attempts = _Attempts(self, request)
        retry = ObservedRetry(**retry_arguments(self.preset))
        retry.observer = attempts
        headers = dict(kind.spec.headers) or None
        attempts.begin()
        try:
            response = self.pool.request(
                kind.spec.method, kind.url, body=kind.body or None, headers=headers, retries=retry
            )
        except MaxRetryError:
            return str(GiveUp.MAX_ATTEMPTS)
        except HTTPError as error:  # a failure urllib3 does not retry (a method not in allowed_methods)
            attempts.end(error=error)
            return str(GiveUp.NOT_RETRYABLE)
        attempts.end(response)
        return None if outcome_of_status(response.status) is AttemptOutcome.OK else str(GiveUp.NOT_RETRYABLE)
