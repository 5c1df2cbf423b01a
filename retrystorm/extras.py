"""The optional extras: what each installs, whether it is installed, and the one line that says which is missing.

A core install (``pip install retrystorm``) runs the simulator, the map, the strategies, the scenario tools and the
chaos controller. The rest comes with an extra (``pip install 'retrystorm[live]'``), declared in ``pyproject.toml``:
:data:`EXTRAS` names the packages each one brings, by their import names. A command that needs an extra calls
:func:`require_extra` before it does anything, so a missing one is one line and exit 2 (:class:`MissingExtraError`, a
user error) instead of a traceback in the middle of a run; ``retrystorm``'s entry point turns any import of a missing
package that belongs to an extra into the same line (:func:`missing_extra_of`). Nothing here imports those packages:
whether one is installed is asked of the import system (``importlib.util.find_spec``).
"""

from __future__ import annotations

import dataclasses
import importlib.util

from retrystorm.errors import UserError


@dataclasses.dataclass(frozen=True, slots=True)
class Extra:
    """An optional extra: its name in ``pyproject.toml``, what it brings, and the modules that show it is there."""

    name: str
    brings: str
    modules: tuple[str, ...]

    @property
    def install(self) -> str:
        """The command that installs it."""
        return f"pip install 'retrystorm[{self.name}]'"


#: Every extra a command can need, by name (``docs`` and ``test`` are for working on retrystorm itself).
EXTRAS: dict[str, Extra] = {
    extra.name: extra
    for extra in (
        Extra(
            "live",
            "Locust and the target's HTTP server",
            ("locust", "gevent", "geventhttpclient", "flask", "httptools"),
        ),
        Extra("report", "matplotlib and Jinja, for plots and report.html", ("matplotlib", "jinja2", "markupsafe")),
        Extra("docker", "the Docker SDK for Python (the 'docker' package)", ("docker",)),
        Extra("grafana", "Grafana's foundation SDK (grafana-foundation-sdk)", ("grafana_foundation_sdk",)),
        Extra("grpc", "grpcio", ("grpc", "grpc_reflection", "grpc_channelz", "google.protobuf")),
        Extra(
            "otel",
            "the OpenTelemetry SDK",
            ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.grpc", "opentelemetry.exporter.otlp.proto.http"),
        ),
        Extra("chaostoolkit", "the Chaos Toolkit (chaostoolkit-lib)", ("chaoslib",)),
    )
}


class MissingExtraError(UserError):
    """A command needs an extra that is not installed (exit 2, one line naming what to install)."""

    def __init__(self, what: str, extra: Extra, module: str) -> None:
        self.extra = extra
        super().__init__(f"{what} needs the {extra.name} extra ({extra.brings}; {module} is missing): {extra.install}")


def module_installed(name: str) -> bool:
    """Whether ``import name`` would find a module (nothing is imported but ``name``'s parent packages)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent missing, or a module set to None in sys.modules: as good as missing
        return False


def missing_module(extra: str) -> str | None:
    """The first module of ``extra`` that is not installed, or ``None`` when it is all there."""
    return next((module for module in EXTRAS[extra].modules if not module_installed(module)), None)


def installed(extra: str) -> bool:
    """Whether every package of ``extra`` is installed."""
    return missing_module(extra) is None


def require_extra(extra: str, what: str) -> None:
    """Raise :class:`MissingExtraError` for ``what`` (``retrystorm target``) unless ``extra`` is installed."""
    module = missing_module(extra)
    if module is not None:
        raise MissingExtraError(what, EXTRAS[extra], module)


def missing_extra_of(error: ModuleNotFoundError, what: str) -> MissingExtraError | None:
    """The :class:`MissingExtraError` an import failure amounts to, when the missing module belongs to an extra."""
    name = error.name or ""
    for extra in EXTRAS.values():
        for module in extra.modules:
            if name == module or name.startswith(module + ".") or module.startswith(name + "."):
                return MissingExtraError(what, extra, name)
    return None
