"""Presets: the retry behaviour of real client libraries, each read from the library's source.

Importing this package registers them as strategies: ``grpc-retry``, ``envoy``,
``aws-standard``, ``aws-adaptive``, ``aws-standard-2025``, ``aws-legacy``, ``polly``, ``resilience4j``, ``urllib3``,
``finagle``. ``grpc-service-config:PATH`` (read by ``retrystorm.loadgen.service_config``) makes a
``grpc-retry`` from a gRPC service config. :func:`resolve` expands a preset into the
retry controls; see :mod:`.base` for the precedence.
"""

from retrystorm.loadgen.strategies.presets import (  # noqa: F401 - registers
    aws,
    dotnet,
    envoy,
    finagle,
    grpc,
    polly,
    resilience4j,
    urllib3,
)
from retrystorm.loadgen.strategies.presets.aws import AwsAdaptive, AwsLegacy, AwsStandard, AwsStandard2025
from retrystorm.loadgen.strategies.presets.base import NONE, Preset, channel_of, resolve
from retrystorm.loadgen.strategies.presets.dotnet import DotnetStandard
from retrystorm.loadgen.strategies.presets.envoy import EnvoyRetry
from retrystorm.loadgen.strategies.presets.finagle import FinagleRetry
from retrystorm.loadgen.strategies.presets.grpc import GrpcRetry
from retrystorm.loadgen.strategies.presets.grpc_config import ServiceConfigError, preset_from_service_config
from retrystorm.loadgen.strategies.presets.polly import PollyRetry
from retrystorm.loadgen.strategies.presets.resilience4j import Resilience4jRetry
from retrystorm.loadgen.strategies.presets.urllib3 import Urllib3Retry

__all__ = [
    "NONE",
    "AwsAdaptive",
    "AwsLegacy",
    "AwsStandard",
    "AwsStandard2025",
    "DotnetStandard",
    "EnvoyRetry",
    "FinagleRetry",
    "GrpcRetry",
    "PollyRetry",
    "Preset",
    "Resilience4jRetry",
    "ServiceConfigError",
    "Urllib3Retry",
    "channel_of",
    "preset_from_service_config",
    "resolve",
]
