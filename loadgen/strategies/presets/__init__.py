"""Presets: the retry behaviour of real client libraries, each read from the library's source.

Importing this package registers them as strategies: ``grpc-retry``, ``envoy``,
``aws-standard``, ``aws-adaptive``, ``polly``, ``resilience4j``, ``urllib3``,
``finagle``. ``grpc-service-config:PATH`` (read by ``loadgen.service_config``) makes a
``grpc-retry`` from a gRPC service config. :func:`resolve` expands a preset into the
retry controls; see :mod:`.base` for the precedence.
"""

from loadgen.strategies.presets import aws, envoy, finagle, grpc, polly, resilience4j, urllib3  # noqa: F401 - registers
from loadgen.strategies.presets.aws import AwsAdaptive, AwsStandard
from loadgen.strategies.presets.base import NONE, Preset, resolve
from loadgen.strategies.presets.envoy import EnvoyRetry
from loadgen.strategies.presets.finagle import FinagleRetry
from loadgen.strategies.presets.grpc import GrpcRetry
from loadgen.strategies.presets.grpc_config import ServiceConfigError, preset_from_service_config
from loadgen.strategies.presets.polly import PollyRetry
from loadgen.strategies.presets.resilience4j import Resilience4jRetry
from loadgen.strategies.presets.urllib3 import Urllib3Retry

__all__ = [
    "NONE",
    "AwsAdaptive",
    "AwsStandard",
    "EnvoyRetry",
    "FinagleRetry",
    "GrpcRetry",
    "PollyRetry",
    "Preset",
    "Resilience4jRetry",
    "ServiceConfigError",
    "Urllib3Retry",
    "preset_from_service_config",
    "resolve",
]
