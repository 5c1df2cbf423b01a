"""Panel-query extraction: what each panel would send to Prometheus."""

import pytest

from retrystorm.dashboards import experiment, promql
from retrystorm.dashboards.queries import (
    PanelQuery,
    UnknownVariableError,
    annotation_queries,
    panel_queries,
    substitute,
    variable_values,
)


def board(*panels, variables=(), annotations=()):
    return {"panels": list(panels), "templating": {"list": list(variables)}, "annotations": {"list": list(annotations)}}


def panel(title, *exprs, **extra):
    targets = [{"refId": chr(ord("A") + index), "expr": expr} for index, expr in enumerate(exprs)]
    return {"type": "timeseries", "title": title, "targets": targets, **extra}


STRATEGY_ALL = {"name": "strategy", "multi": True, "includeAll": True, "allValue": ".*"}


def test_generated_dashboard_queries_have_no_variable_left():
    queries = panel_queries(experiment.dashboard_json())
    assert queries and all(isinstance(query, PanelQuery) for query in queries)
    for title, ref_id, expr in queries:
        assert "$" not in expr and "[[" not in expr, (title, ref_id, expr)
    goodput = next(query for query in queries if query.panel == "Clients: goodput")
    assert goodput.expr == (
        'sum by (strategy) (rate(retrystorm_client_requests_total{strategy=~".*", outcome="ok"}[15s]))'
    )


def test_every_variable_syntax_is_substituted():
    found = panel_queries(
        board(
            panel(
                "p", 'a{s=~"$strategy"}[$__rate_interval]', 'b{s=~"${strategy:regex}"}+c{s=~"[[strategy]]"}[$__range]'
            ),
            variables=[STRATEGY_ALL],
        ),
        rate_interval="30s",
        range_window="2m",
    )
    assert found == [
        PanelQuery("p", "A", 'a{s=~".*"}[30s]'),
        PanelQuery("p", "B", 'b{s=~".*"}+c{s=~".*"}[2m]'),
    ]


def test_given_values_win_and_single_values_use_current():
    variables = [
        STRATEGY_ALL,
        {"name": "job", "current": {"value": "target"}},
        {"name": "m", "current": {"value": ["a", "b"]}},
    ]
    dashboard = board(panel("p", 'x{strategy=~"$strategy", job="$job", m=~"$m"}'), variables=variables)
    (query,) = panel_queries(dashboard, variables={"strategy": "fixed"})
    assert query.expr == 'x{strategy=~"fixed", job="target", m=~"a|b"}'
    assert variable_values(dashboard)["strategy"] == ".*"


def test_an_unknown_variable_names_the_panel():
    with pytest.raises(UnknownVariableError, match=r"panel 'Goodput' A: unknown variable \$nope"):
        panel_queries(board(panel("Goodput", "rate(x[$nope])")))
    with pytest.raises(UnknownVariableError):
        substitute("$a + $b", {"a": "1"})


def test_rows_hidden_and_non_promql_targets():
    collapsed = {"type": "row", "title": "r", "collapsed": True, "panels": [panel("inner", "up")]}
    hidden = panel("h", "shown", "hidden")
    hidden["targets"][1]["hide"] = True
    text = {"type": "text", "title": "notes", "targets": [{"refId": "A", "query": "not promql"}]}
    queries = panel_queries(board({"type": "row", "title": "open", "panels": []}, collapsed, hidden, text))
    assert queries == [PanelQuery("inner", "A", "up"), PanelQuery("h", "A", "shown")]


def test_annotation_queries_read_expr_or_target_expr_of_enabled_ones():
    annotations = [
        {"name": "old", "enable": True, "expr": "max(x[$__rate_interval])"},
        {"name": "new", "enable": True, "target": {"expr": 'y{s=~"$strategy"}', "refId": "Anno"}},
        {"name": "off", "enable": False, "expr": "z"},
        {"name": "tags", "enable": True, "target": {"type": "tags", "tags": ["retrystorm"]}},
    ]
    found = annotation_queries(board(variables=[STRATEGY_ALL], annotations=annotations))
    assert found == [PanelQuery("old", "Anno", "max(x[15s])"), PanelQuery("new", "Anno", 'y{s=~".*"}')]


def test_generated_annotation_queries_are_the_trigger_gauges():
    queries = annotation_queries(experiment.dashboard_json())
    assert queries == [
        PanelQuery("Outages (chaos metric)", "Anno", "max by (target) (retrystorm_chaos_outage_active)"),
        PanelQuery("Slow (target and chaos metrics)", "Anno", promql.slow_active()),
        PanelQuery("Spike (client metric)", "Anno", promql.spike_active().replace("$strategy", ".*")),
        PanelQuery("Errors (target metric)", "Anno", promql.errors_active()),
    ]
