"""Grafana dashboards generated from code, their provisioning, and Prometheus' configuration.

* :mod:`retrystorm.dashboards.promql` -- the experiment's PromQL expressions (pure strings).
* :mod:`retrystorm.dashboards.experiment` -- the experiment's dashboard, built with Grafana's
  foundation SDK.
* :mod:`retrystorm.dashboards.files` -- the generated JSON and where it is committed
  (``dashboards/grafana/dashboards/``); ``retrystorm dashboards build`` rewrites it.
* :mod:`retrystorm.dashboards.shipped` -- the committed JSON as installed with the package, read
  without the SDK.
* :mod:`retrystorm.dashboards.queries` -- every panel's PromQL with the template variables
  substituted, to run the dashboard's queries against a real Prometheus.
* :mod:`retrystorm.grafana` and :mod:`retrystorm.dashboards.push` -- upload the shipped dashboards
  to an existing Grafana over its HTTP API (``retrystorm dashboards push``).

The files Grafana and Prometheus read live beside the code: ``grafana/provisioning/``
(datasource uid ``prometheus``, a file provider for ``/var/lib/grafana/dashboards``)
and ``prometheus/`` (compose DNS names, and the loopback ports of the test stack).
"""
