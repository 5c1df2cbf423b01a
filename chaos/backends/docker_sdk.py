"""Whether the Docker SDK (the optional extra ``docker``) is installed, asked without importing it.

The docker fault backend needs the Docker SDK for Python, which ``pip install
'retrystorm[docker]'`` brings. Whoever is about to use that backend calls
:func:`require_docker_sdk` first, so a missing SDK is one line and exit 2, not a
traceback in the middle of a run.
"""

from __future__ import annotations

import importlib.util

from retrystorm.errors import UserError

#: What installs the Docker SDK alongside retrystorm.
DOCKER_EXTRA = "pip install 'retrystorm[docker]'"


class DockerSdkMissingError(UserError):
    """The docker backend was asked for, and the Docker SDK is not installed."""

    def __init__(self, what: str = "the docker backend") -> None:
        super().__init__(f"{what} needs the Docker SDK for Python (the 'docker' package): {DOCKER_EXTRA}")


def docker_sdk_installed() -> bool:
    """True when ``import docker`` would find the Docker SDK (nothing is imported)."""
    try:
        return importlib.util.find_spec("docker") is not None
    except (ImportError, ValueError):  # a broken or half-imported package: as good as missing
        return False


def require_docker_sdk(what: str = "the docker backend") -> None:
    """Raise :class:`DockerSdkMissingError` (a user error: one line, exit 2) unless the SDK is installed."""
    if not docker_sdk_installed():
        raise DockerSdkMissingError(what)
