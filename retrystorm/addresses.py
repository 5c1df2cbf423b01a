"""A service address given by a user (``--chaos-url``, ``--target-url``...): ``http(s)://HOST[:PORT][/PATH]``."""

from __future__ import annotations

import urllib.parse


class BadPortError(ValueError):
    """The address's port is not a number from 1 to 65535."""


def http_address(text: str) -> str:
    """``text`` without surrounding blanks and a trailing ``/``, if it is an address to call.

    Accepted: scheme ``http`` or ``https``, a host, an optional port from 1 to 65535,
    an optional path prefix; no query, no fragment. Otherwise ``ValueError`` (a
    :class:`BadPortError` when only the port is wrong), for the caller to word for its option.
    """
    value = text.strip().rstrip("/")
    parts = urllib.parse.urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ValueError(f"not an http:// or https:// address with a host: {text!r}")
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0:
        raise BadPortError(f"the port of {text!r} is not a number from 1 to 65535")
    return value
