"""Where a scenario's parts run when they are on several hosts: the ``hosts:`` section.

::

    hosts:
      master: 10.0.0.1:5557     # the Locust master the runner starts listens here for workers
      workers: 2                # workers that must have joined it before each strategy starts
      agents:                   # the chaos agent (retrystorm chaos serve) of each host with something to fault
        app: http://10.0.0.4:8071
        db: {url: http://10.0.0.5:8071, token_env: DB_CHAOS_TOKEN}
        # app: {url: http://10.0.0.4:8071, proxy: web}   # the load through its fault proxy web, for delays
    target:
      url: http://10.0.0.4:8070
      host: app                 # the target's faults go through agent app
      model_server: true        # it is `retrystorm target`: each strategy sets model: and resets it

Load stays on Locust's own distributed mode: the runner starts the master, and workers on any host join it
(``retrystorm worker --master 10.0.0.1:5557``); each strategy waits until ``workers`` have joined. Faults go
through the agent of the host where their target lives: a fault names a target as its agent registered it,
``pause: target`` on ``target.host``'s agent, ``pause: cache@db`` on agent ``db``. Faults in the network go
through agents too: ``delay``, ``loss``, ``hang`` and ``reset`` through the fault proxy the target host's agent
names in ``proxy`` (the load is sent to it), and ``partition: target`` (or ``NAME@HOST``) cuts that host off from
the peers its agent registered. A gRPC load (``grpc:``) does not run across hosts yet: it is refused before
anything starts.

Tokens never appear in a scenario: an agent's bearer token comes from the environment variable ``token_env``
(default ``RETRYSTORM_CHAOS_TOKEN``), and an agent beyond loopback without one is refused before anything
starts (:func:`check_tokens` reads them).
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Iterator, Mapping
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from retrystorm.addresses import host_port, http_address, is_loopback_host
from retrystorm.errors import UserError, did_you_mean, shown

#: The environment variable an agent's token comes from unless ``token_env`` names another.
DEFAULT_TOKEN_ENV = "RETRYSTORM_CHAOS_TOKEN"  # noqa: S105 - the name of a variable, not a token
#: At most this many agents and this many workers.
MAX_AGENTS = 100
MAX_WORKERS = 1000
_HOST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def _host_name(value: object) -> str:
    if not isinstance(value, str) or not _HOST_NAME.fullmatch(value):
        raise ValueError(f"got {shown(value)}; expected a host name of letters, digits and _.- (at most 63)")
    return value


def _url(value: object) -> str:
    try:
        return http_address(str(value)) if isinstance(value, str) else _raise(value)
    except ValueError:
        raise ValueError(f"got {shown(value)}; expected the agent's address, like http://10.0.0.4:8071") from None


def _raise(value: object) -> str:
    raise ValueError(shown(value))


def _host_port(value: object) -> str:
    try:
        host_port(value if isinstance(value, str) else "", "master")
    except UserError:
        expected = "expected HOST:PORT the workers reach the master at, e.g. 10.0.0.1:5557"
        raise ValueError(f"got {shown(value)}; {expected}") from None
    return str(value)


def _env_name(value: object) -> str:
    if not isinstance(value, str) or not _ENV_NAME.fullmatch(value):
        raise ValueError(f"got {shown(value)}; expected the name of an environment variable, like DB_CHAOS_TOKEN")
    return value


HostName = Annotated[str, BeforeValidator(_host_name)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class Agent(_Strict):
    """One host's chaos agent: where it answers, and which environment variable holds its token."""

    url: Annotated[str, BeforeValidator(_url)]
    """Where the host's ``retrystorm chaos serve`` answers, e.g. ``http://10.0.0.4:8071``."""
    token_env: Annotated[str, BeforeValidator(_env_name)] = DEFAULT_TOKEN_ENV
    """The environment variable that holds its bearer token (never the token itself)."""
    proxy: Annotated[str, BeforeValidator(_host_name)] | None = None
    """On the target's host: the fault proxy this agent registered (``chaos serve --proxy NAME=LISTEN,UPSTREAM``)
    that the load is sent through, for ``delay``, ``loss``, ``hang`` and ``reset``; the runner's own reads still go to
    ``target.url``."""


def _agent(value: object) -> Any:
    return {"url": value} if isinstance(value, str) else value


class Hosts(_Strict):
    """The ``hosts:`` section (see the module docstring)."""

    master: Annotated[str, BeforeValidator(_host_port)]
    """``HOST:PORT`` the Locust master the runner starts listens on for workers (an address of the runner's host)."""
    workers: int = Field(ge=1, le=MAX_WORKERS)
    """How many workers must have joined before each strategy starts (1 to 1,000)."""
    agents: dict[HostName, Annotated[Agent, BeforeValidator(_agent)]] = Field(default={}, max_length=MAX_AGENTS)
    """Each host's chaos agent, by host name: its address, or ``{url, token_env}`` (at most 100)."""

    def master_address(self) -> tuple[str, int]:
        """``(host, port)`` the master binds."""
        return host_port(self.master, "hosts.master")

    def locate(self, name: str, target_host: str | None) -> tuple[str, str]:
        """``(host, name on its agent)`` of a fault's target: ``NAME@HOST``, else ``NAME`` on ``target_host``
        (or on the only agent); a :class:`UserError` when no known host holds it."""
        base, at, host = name.rpartition("@")
        if at:
            if host not in self.agents:
                known = ", ".join(self.agents) or "none"
                raise UserError(
                    f"{name!r}: no agent for host {host!r}{did_you_mean(host, self.agents)}; hosts: {known}"
                )
            return host, base
        if target_host is not None:
            return target_host, name
        if len(self.agents) == 1:
            return next(iter(self.agents)), name
        raise UserError(
            f"{name!r}: on which host? write {name}@HOST (hosts: {', '.join(self.agents) or 'none'}) or give "
            "target.host"
        )


def hosts_problems(
    hosts: Hosts | None, target_host: str | None, fault_targets: Mapping[int, tuple[str, str]]
) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """Rules across ``hosts:``, ``target.host`` and the faults: every host named has an agent, every fault
    target lives on a known host (``fault_targets``: the index of each fault -> its kind and target)."""
    if hosts is None:
        if target_host is not None:
            yield ("target", "host"), "needs a hosts: section with an agent for that host"
        for index, (kind, name) in fault_targets.items():
            if "@" in name:
                yield ("faults", index, kind), f"{name!r} names a host: give hosts: with its agent"
        return
    if target_host is not None and target_host not in hosts.agents:
        hint = did_you_mean(target_host, hosts.agents)
        yield ("target", "host"), f"got {target_host!r}{hint}; hosts with an agent: {', '.join(hosts.agents) or 'none'}"
        return
    for index, (kind, name) in fault_targets.items():
        if kind == "spike":
            continue
        try:
            hosts.locate(name, target_host)
        except UserError as error:
            yield ("faults", index, kind), str(error)


def check_tokens(hosts: Hosts, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Each agent's token, read from its environment variable; a :class:`UserError` (exit 2) for an agent beyond
    loopback without one, naming the variable to set."""
    environ = os.environ if environ is None else environ
    tokens: dict[str, str] = {}
    for host, agent in hosts.agents.items():
        token = environ.get(agent.token_env, "")
        hostname = urllib.parse.urlsplit(agent.url).hostname or ""
        if not token and not is_loopback_host(hostname):
            raise UserError(
                f"hosts.agents.{host}: {agent.url} is beyond loopback and needs a token: set {agent.token_env} to "
                "the token its `retrystorm chaos serve --token` uses"
            )
        tokens[host] = token
    return tokens
