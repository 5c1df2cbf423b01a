"""Kubernetes: the manifests that run a scenario's load, target, chaos agents and dashboards in a cluster.

:mod:`.render` builds them from a scenario (``retrystorm k8s render``), :mod:`.objects` holds the object shapes,
:mod:`.output` writes them as YAML. ``docs/guides/kubernetes.md`` walks through rendering and applying them.
"""
