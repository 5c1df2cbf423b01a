"""What one logical request is: a weighted mix of HTTP requests, and which outcomes are retried.

Pure (no I/O, no clock, no global random): the Locust user draws from a :class:`RequestMix`
with its own seeded ``random.Random``; the scenario format (``requests:``)
and the load generator's flags (``--request``, ``--requests-file``, ``--retry-on``) read
the same rules from here.

A request is ``METHOD PATH`` with optional ``name``, ``headers``, ``body`` and ``weight``.
Its ``name`` (default ``METHOD PATH``) is what Locust's statistics and the ``request``
label of the client metrics show, so a mix holds at most :data:`MAX_REQUESTS` requests
with distinct names: the label's cardinality is bounded by that.

The one-line form (``--request``, one line of a ``--requests-file``)::

    METHOD PATH [weight=N] [name=NAME] [header=NAME:VALUE]... [body=TEXT]

``body=`` comes last and takes the rest of the line, spaces included; ``name`` has no
spaces. Examples: ``GET /orders/1 weight=7``,
``POST /orders weight=3 header=Content-Type:application/json body={"qty": 1}``. A line
that starts with ``{`` is the same request as a JSON object (``{"method": "POST", "path":
"/orders", "name": "create order", ...}``): what the scenario runner passes, lossless.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import json
import random
import re
from collections.abc import Iterable, Mapping, Sequence

from retrystorm.errors import SpecError, shown

#: The most requests in a mix, and so the most distinct ``request`` label values.
MAX_REQUESTS = 20
#: The largest weight of one request (weights are whole numbers).
MAX_WEIGHT = 1_000_000
#: The most headers of one request, and the longest header value and body, in characters.
MAX_HEADERS = 32
MAX_HEADER_CHARS = 1024
MAX_BODY_CHARS = 64 * 1024
MAX_PATH_CHARS = 2048
MAX_NAME_CHARS = 100
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
#: Header names as RFC 9110 section 5.1 allows them (a token).
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}", re.ASCII)
#: Headers the HTTP client sets itself; a scenario may not override them.
RESERVED_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection", "retrystorm-attempt"})


def check_method(value: object) -> str:
    """An HTTP method of :data:`METHODS` (any case in, upper case out)."""
    if not isinstance(value, str) or value.strip().upper() not in METHODS:
        raise SpecError(f"method: got {shown(value)}, expected one of {', '.join(METHODS)}")
    return value.strip().upper()


def check_path(value: object) -> str:
    """A path starting with ``/``, without spaces or control characters, at most :data:`MAX_PATH_CHARS`."""
    if (
        not isinstance(value, str)
        or not value.startswith("/")
        or len(value) > MAX_PATH_CHARS
        or not value.isascii()
        or any(c.isspace() or ord(c) < 32 or c == "\x7f" for c in value)
    ):
        raise SpecError(
            f"path: got {shown(value)}, expected a path starting with / in ASCII without spaces "
            f"(percent-encode the rest), at most {MAX_PATH_CHARS} characters, like /orders/1"
        )
    return value


def check_headers(value: object) -> dict[str, str]:
    """At most :data:`MAX_HEADERS` headers: names are tokens, values printable ASCII (:data:`MAX_HEADER_CHARS`)."""
    if not isinstance(value, Mapping):
        raise SpecError(f"headers: got {shown(value)}, expected a mapping of header names to values")
    if len(value) > MAX_HEADERS:
        raise SpecError(f"headers: {len(value)} headers, expected at most {MAX_HEADERS}")
    headers: dict[str, str] = {}
    for name, given in value.items():
        if not isinstance(name, str) or not _TOKEN.fullmatch(name):
            raise SpecError(f"headers: name {shown(name)} is not a header name (letters, digits and -)")
        if name.lower() in RESERVED_HEADERS:
            raise SpecError(f"headers: {name} is set by the load generator itself; remove it")
        if isinstance(given, bool) or not isinstance(given, str | int | float):
            raise SpecError(f"headers: {name}: got {shown(given)}, expected a text value")
        text = str(given)
        if len(text) > MAX_HEADER_CHARS or not text.isascii() or not (text.isprintable() or not text):
            raise SpecError(f"headers: {name}: expected printable ASCII of at most {MAX_HEADER_CHARS} characters")
        headers[name] = text
    return headers


def check_body(value: object) -> str | None:
    """A text body of at most :data:`MAX_BODY_CHARS` characters, or ``None``."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise SpecError(f"body: got {shown(value)}, expected text (quote JSON in YAML: body: '{{\"qty\": 1}}')")
    if len(value) > MAX_BODY_CHARS:
        raise SpecError(f"body: {len(value):,} characters, expected at most {MAX_BODY_CHARS:,}")
    return value


def check_weight(value: object) -> int:
    """A whole number from 1 to :data:`MAX_WEIGHT`."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_WEIGHT:
        raise SpecError(f"weight: got {shown(value)}, expected a whole number from 1 to {MAX_WEIGHT:,}")
    return value


def check_name(value: object) -> str:
    """A request's name: one line of 1 to :data:`MAX_NAME_CHARS` printable characters."""
    if not isinstance(value, str) or not 0 < len(value.strip()) <= MAX_NAME_CHARS or not value.isprintable():
        raise SpecError(f"name: got {shown(value)}, expected 1 to {MAX_NAME_CHARS} printable characters")
    return value.strip()


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RequestSpec:
    """One kind of request: ``method path``, its headers and body, and its weight in the mix."""

    method: str = "GET"
    path: str = "/api"
    name: str = ""
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    body: str | None = None
    weight: int = 1

    def __post_init__(self) -> None:
        set_ = object.__setattr__  # frozen: normalise once, here
        set_(self, "method", check_method(self.method))
        set_(self, "path", check_path(self.path))
        set_(self, "name", check_name(self.name) if self.name else f"{self.method} {self.path}")
        set_(self, "headers", check_headers(self.headers))
        set_(self, "body", check_body(self.body))
        set_(self, "weight", check_weight(self.weight))

    def to_json(self) -> str:
        """This request as one line of JSON, which :func:`parse_request_line` reads back exactly."""
        fields = {"method": self.method, "path": self.path, "name": self.name, "weight": self.weight}
        if self.headers:
            fields["headers"] = dict(self.headers)
        if self.body is not None:
            fields["body"] = self.body
        return json.dumps(fields, separators=(",", ":"))


DEFAULT_REQUEST = RequestSpec()


def parse_request_line(text: str) -> RequestSpec:
    """A :class:`RequestSpec` from ``METHOD PATH [weight=N] [name=NAME] [header=K:V]... [body=TEXT]``."""
    if "\n" in text or "\r" in text:
        raise SpecError("expected one request per line")
    if len(text) > MAX_LINE_CHARS:
        raise SpecError(f"a line of {len(text):,} characters, expected at most {MAX_LINE_CHARS:,}")
    if text.lstrip().startswith("{"):
        return _from_json(text)
    head, sep, body = text.strip().partition(" body=")
    if not sep and head.startswith("body="):
        raise SpecError(f"got {shown(text)}, expected METHOD PATH before body=")
    words = head.split()
    if len(words) < 2:
        raise SpecError(f"got {shown(text)}, expected METHOD PATH [weight=N] [name=NAME] [header=K:V]... [body=TEXT]")
    fields: dict[str, object] = {"method": words[0], "path": words[1]}
    headers: dict[str, str] = {}
    for word in words[2:]:
        _read_option(word, fields, headers)
    fields["headers"] = headers
    if sep:
        fields["body"] = body
    return RequestSpec(**fields)  # type: ignore[arg-type]


def _read_option(word: str, fields: dict[str, object], headers: dict[str, str]) -> None:
    """One ``weight=N``, ``name=NAME`` or ``header=NAME:VALUE`` of a request line, into ``fields``/``headers``."""
    key, eq, value = word.partition("=")
    if not eq or key not in ("weight", "name", "header"):
        raise SpecError(f"{shown(word)}: expected weight=N, name=NAME, header=NAME:VALUE or body=TEXT (last)")
    if key == "weight":
        if not (value.isascii() and value.isdigit()):
            raise SpecError(f"weight: got {shown(value)}, expected a whole number from 1 to {MAX_WEIGHT:,}")
        fields["weight"] = int(value[:10])
    elif key == "name":
        fields["name"] = value
    else:
        name, colon, header_value = value.partition(":")
        if not colon:
            raise SpecError(f"header: got {shown(value)}, expected NAME:VALUE like Content-Type:application/json")
        headers[name] = header_value


_JSON_FIELDS = frozenset({"method", "path", "name", "headers", "body", "weight"})


#: The longest request line: a body at its ceiling, escaped, and the rest.
MAX_LINE_CHARS = 2 * MAX_BODY_CHARS + MAX_HEADERS * MAX_HEADER_CHARS + 8 * 1024


def _from_json(text: str) -> RequestSpec:
    try:
        fields = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise SpecError(f"not a JSON object: {str(error)[:100]}") from None
    if not isinstance(fields, dict) or not set(fields) <= _JSON_FIELDS:
        unknown = sorted(set(fields) - _JSON_FIELDS) if isinstance(fields, dict) else fields
        raise SpecError(f"got {shown(unknown)}, expected the fields {', '.join(sorted(_JSON_FIELDS))}")
    return RequestSpec(**fields)


def split_requests(text: str) -> list[str]:
    """The request lines of an option's text: separated by new lines, or by `` ;; `` (the web UI's one-line field).

    A JSON line is never split (its body may hold anything).
    """
    return [
        part for line in text.splitlines() for part in ([line] if line.lstrip().startswith("{") else line.split(" ;; "))
    ]


def parse_request_lines(lines: Iterable[str]) -> tuple[RequestSpec, ...]:
    """Requests from lines of the one-line form; blank lines and ``#`` comments are skipped."""
    found = []
    for number, line in enumerate(lines, start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            found.append(parse_request_line(line))
        except SpecError as error:
            raise SpecError(f"request {number}: {error}") from None
    return check_mix(found)


def check_mix(requests: Sequence[RequestSpec]) -> tuple[RequestSpec, ...]:
    """1 to :data:`MAX_REQUESTS` requests with distinct names (each name is a metric label value)."""
    if not requests:
        raise SpecError("expected at least one request")
    if len(requests) > MAX_REQUESTS:
        raise SpecError(f"{len(requests)} requests, expected at most {MAX_REQUESTS} (each is a metric label value)")
    seen: set[str] = set()
    for request in requests:
        if request.name in seen:
            raise SpecError(f"two requests named {request.name!r}; give one a name= of its own")
        seen.add(request.name)
    return tuple(requests)


class RequestMix:
    """Draws one request per logical request, each with probability weight / total weight.

    The draw uses the caller's ``random.Random`` (one ``random()`` per draw, none when the
    mix holds a single request, so a one-request mix draws exactly as before).
    """

    __slots__ = ("_cumulative", "_total", "requests")

    def __init__(self, requests: Sequence[RequestSpec]) -> None:
        self.requests = check_mix(requests)
        self._cumulative = list(itertools.accumulate(request.weight for request in self.requests))
        self._total = self._cumulative[-1]

    def choose(self, rng: random.Random) -> RequestSpec:
        """One request, by weight."""
        if len(self.requests) == 1:
            return self.requests[0]
        return self.requests[bisect.bisect_right(self._cumulative, rng.random() * self._total)]
