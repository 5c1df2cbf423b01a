"""The target:, requests: and retry_on: sections: what loads, and one line naming file, line and field otherwise."""

from __future__ import annotations

import textwrap

import pytest

from retrystorm.experiment.scenario import RunSpec, ScenarioError, parse_scenario
from retrystorm.loadgen.strategies.retry_on import RetryOn

BASE = textwrap.dedent(
    """\
    name: own
    target:
      url: http://127.0.0.1:8000
      command: gunicorn -w 2 -b 127.0.0.1:8000 app:app
      ready: /healthz
    requests:
      - {method: POST, path: /orders, body: '{"qty": 1}', headers: {Content-Type: application/json}, weight: 3}
      - {method: get, path: /orders/1, weight: 7}
    retry_on: [timeout, 5xx, 429]
    load: {users: 60, think_time: exponential:3s, attempt_timeout: 1s, duration: 60s}
    strategies: [fixed:100ms]
    faults: [{at: 20s, for: 10s}]
    """
)


def error_of(text: str) -> str:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, source="own.yaml")
    return str(caught.value)


def test_a_service_of_ones_own_loads_without_a_model_and_reaches_the_run_spec():
    scenario = parse_scenario(BASE)
    assert scenario.model is None
    assert scenario.target is not None and scenario.target.pause_kind == "command"
    assert scenario.target.argv() == ["gunicorn", "-w", "2", "-b", "127.0.0.1:8000", "app:app"]
    spec = RunSpec.of(scenario, scenario.strategies[0])
    assert [(r.method, r.path, r.weight) for r in spec.requests] == [("POST", "/orders", 3), ("GET", "/orders/1", 7)]
    assert spec.requests[0].headers == {"Content-Type": "application/json"}
    # 429 as YAML reads it, a number, is accepted; the scenario's conditions become the policy's
    assert spec.policy.retry_on == RetryOn(timeout=True, classes=frozenset({5}), statuses=frozenset({429}))


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("method: get", "method: FETCH"), "own.yaml:8: requests[1].method: got 'FETCH', expected one of GET, POST"),
        (
            ("weight: 7}", "wieght: 7}"),
            "own.yaml:8: requests[1].wieght: unknown field (did you mean 'weight'?); accepted: method, path, name",
        ),
        (("weight: 7}", "weight: 0}"), "own.yaml:8: requests[1].weight: got 0, expected a whole number from 1"),
        (("path: /orders/1", "path: orders"), "own.yaml:8: requests[1].path: got 'orders', expected a path"),
        (("ready: /healthz", "readiness: /healthz"), "own.yaml:5: target.readiness: unknown field; accepted: url"),
        (("url: http://127.0.0.1:8000", "url: ftp://x"), "own.yaml:3: target.url: got 'ftp://x'; expected an http"),
        (("ready: /healthz", "pid: 1"), "own.yaml:5: target.pid: got 1; expected greater than or equal to 2"),
        (("ready: /healthz", "tree: 1"), "own.yaml:5: target.tree: got 1; expected greater than or equal to 2"),
        (
            ("ready: /healthz", "cgroup: system.slice"),
            "own.yaml:5: target.cgroup: got 'system.slice'; expected a cgroup path like /system.slice/postgresql",
        ),
        (
            ("ready: /healthz", "cgroup: /system.slice/../.."),
            "own.yaml:5: target.cgroup: got '/system.slice/../..'; expected a cgroup path",
        ),
        (
            ("ready: /healthz", "unit: 'postgresql; rm'"),
            "own.yaml:5: target.unit: got 'postgresql; rm'; expected a systemd unit name like postgresql@15-main",
        ),
        (("[timeout, 5xx, 429]", "[timeout, sometimes]"), "own.yaml:9: retry_on: got 'sometimes', expected a list"),
        (
            ("ready: /healthz", "metrics: {url: http://127.0.0.1:8001/metrics, in_flight: a, latency: b}"),
            "own.yaml:5: target.metrics.latency: unknown field; accepted: url, prometheus, in_flight",
        ),
        (
            ("Content-Type: application", "Host: application"),
            "own.yaml:7: requests[0].headers: Host is set by the load generator",
        ),
    ],
)
def test_a_bad_field_is_one_line_naming_file_line_and_field(change, expected):
    assert error_of(BASE.replace(*change)).startswith(expected)


@pytest.mark.parametrize(
    ("line", "kind", "said"),
    [
        ("tree: 4242", "tree", "process 4242 and every descendant"),
        ("cgroup: /system.slice/postgresql.service", "cgroup", "cgroup /system.slice/postgresql.service whole"),
        ("unit: postgresql@15-main.service", "unit", "systemd unit postgresql@15-main.service's cgroup whole"),
    ],
)
def test_a_tree_a_cgroup_or_a_unit_is_what_a_pause_freezes_before_the_command(line, kind, said):
    scenario = parse_scenario(BASE.replace("ready: /healthz", line))
    assert scenario.target is not None and scenario.target.pause_kind == kind
    assert scenario.target.pause_describe().startswith(said)


def test_rules_across_fields():
    no_pause = BASE.replace("  command: gunicorn -w 2 -b 127.0.0.1:8000 app:app\n", "")
    assert error_of(no_pause) == (
        "own.yaml:11: faults[0]: target: names nothing to pause; add command (everything it starts is paused), "
        "pid, tree, cgroup, unit, container or service"
    )
    two = BASE.replace("ready: /healthz", "pid: 1234\n  container: web")
    assert error_of(two).startswith(
        "own.yaml:6: target.container: give one of pid, tree, cgroup, unit, container, service"
    )
    same_name = BASE.replace("path: /orders, body", "path: /orders/1, name: GET /orders/1, body")
    assert "a second request named 'GET /orders/1'" in error_of(same_name)
    neither = BASE.replace("target:\n  url: http://127.0.0.1:8000\n", "x:\n  url: u\n")
    assert "x: unknown field" in error_of(neither)


def test_ceilings_on_requests_headers_and_bodies():
    many = "requests:\n" + "".join(f"  - {{path: /r{i}}}\n" for i in range(21))
    text = BASE.split("requests:")[0] + many + "load:" + BASE.split("load:")[1]
    assert "requests: " in error_of(text) and "at most 20" in error_of(text)
    headers = "{" + ", ".join(f"H{i}: v" for i in range(33)) + "}"
    assert "33 headers, expected at most 32" in error_of(BASE.replace("{Content-Type: application/json}", headers))
    body = "x" * (64 * 1024 + 1)
    assert "expected at most 65,536" in error_of(BASE.replace("'{\"qty\": 1}'", body))


def test_a_model_beside_the_target_is_kept_and_neither_is_refused():
    assert parse_scenario(BASE.replace("name: own\n", "name: own\nmodel: queue:workers=2\n")).model is not None
    no_target = BASE.split("target:")[0] + "load:" + BASE.split("load:")[1]
    assert error_of(no_target).startswith("own.yaml:1: model: missing; give model: (the built-in model server) or")
