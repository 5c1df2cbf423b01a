"""Rendered manifests as YAML: one multi-document stream, or a folder of files with a ``kustomization.yaml``.

The YAML is deterministic (objects and keys in the order they were built, no line folding) and multi-line strings
(the dashboards' JSON) are written as literal blocks, so a diff of two renders reads as a diff of what changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

KUSTOMIZATION = "kustomization.yaml"


class _Dumper(yaml.SafeDumper):
    """Safe YAML with multi-line strings as ``|`` blocks."""


def _string(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_Dumper.add_representer(str, _string)


def dump(objects: Sequence[Mapping[str, Any]]) -> str:
    """``objects`` as YAML documents separated by ``---``."""
    return yaml.dump_all(objects, Dumper=_Dumper, sort_keys=False, width=1_000_000, explicit_start=True)


def stream(files: Mapping[str, Sequence[Mapping[str, Any]]]) -> str:
    """Every file's objects as one YAML stream, for ``kubectl apply -f -``."""
    return dump([item for objects in files.values() for item in objects])


def kustomization(names: Sequence[str]) -> dict[str, Any]:
    """A kustomization that lists the rendered files."""
    return {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": list(names)}


def write_folder(files: Mapping[str, Sequence[Mapping[str, Any]]], folder: Path) -> list[Path]:
    """Write each file and a ``kustomization.yaml`` listing them into ``folder`` (made if missing); the paths."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, objects in files.items():
        path = folder / name
        path.write_text(dump(objects), encoding="utf-8")
        written.append(path)
    path = folder / KUSTOMIZATION
    path.write_text(dump([kustomization(list(files))]), encoding="utf-8")
    return [*written, path]
