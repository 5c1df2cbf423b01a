"""The shipped scenarios: YAML files installed with the package, found by name from anywhere.

They live in ``experiment/scenario/shipped/NAME.yaml`` and are read through
:mod:`importlib.resources`, so a name resolves the same in a checkout, an installed
wheel or a container. What a user types as a scenario is a path or a name
(:func:`find_scenario`): a bare word (no directory, no ``.yaml``) is always a shipped
scenario's name, never a file of that name in the current folder (a file another user
planted there must not run in place of a shipped scenario); a file is named as a path
(``./x``, ``x.yaml``, ``dir/x``). An unknown name is a :class:`ScenarioError` that lists
the shipped names and suggests the closest, or, if a file of that name is there, says how
to name it as a path.
"""

from __future__ import annotations

import difflib
import importlib.resources
import os
from importlib.resources.abc import Traversable
from pathlib import Path

from retrystorm.experiment.scenario.errors import ScenarioError
from retrystorm.experiment.scenario.trust import refuse_untrusted

SUFFIX = ".yaml"
YAML_SUFFIXES = (".yaml", ".yml")


def shipped_folder() -> Traversable:
    """The folder of the shipped scenario files, inside the installed package."""
    return importlib.resources.files("retrystorm.experiment.scenario") / "shipped"


def shipped_names() -> list[str]:
    """The shipped scenarios' names (file names without ``.yaml``), sorted."""
    entries = shipped_folder().iterdir()
    return sorted(entry.name.removesuffix(SUFFIX) for entry in entries if entry.name.endswith(SUFFIX))


def shipped_scenario(name: str) -> Traversable:
    """The shipped scenario file called ``name``; a :class:`ScenarioError` naming the shipped ones if none is."""
    names = shipped_names()
    if name not in names:
        raise ScenarioError(f"scenario {name!r}: no such file, and no shipped scenario; {_choices(name, names)}")
    return shipped_folder() / f"{name}{SUFFIX}"


def is_bare_name(text: str) -> bool:
    """True for ``smira-laptop``; false for ``smira-laptop.yaml``, ``./smira-laptop`` or ``dir/x``."""
    separators = {"/", os.sep} | ({os.altsep} if os.altsep else set())
    return bool(text) and not any(sep in text for sep in separators) and not text.lower().endswith(YAML_SUFFIXES)


def find_scenario(given: str | os.PathLike[str] | Traversable) -> Traversable:
    """The scenario file a user means by ``given``: a shipped scenario for a bare name, else the path given.

    A path comes back as it is, once checked that no other user can change it when root runs it
    (:func:`~retrystorm.experiment.scenario.trust.refuse_untrusted`), so that reading it fails with the
    reader's own error (:func:`missing_hint` adds what it may have meant).
    """
    if not isinstance(given, str | os.PathLike):
        return given  # a resource already (a shipped file inside an archive)
    if not is_bare_name(str(given)):
        path = Path(given)
        if not _is_shipped(path):
            refuse_untrusted(path)
        return path
    name = str(given)
    if name not in shipped_names() and os.path.exists(name):  # noqa: PTH110 - False, not an error, for a name too long
        raise ScenarioError(
            f"scenario {name!r}: no shipped scenario of that name; to run the file {name!r} in this folder, "
            f"name it as a path: ./{name}"
        )
    return shipped_scenario(name)


def _is_shipped(path: Path) -> bool:
    """True for a shipped scenario's file (a checkout's or an installed package's: trusted as its code is)."""
    return path.resolve().parent == Path(str(shipped_folder())).resolve()


def missing_hint(path: Path) -> str:
    """For a scenario path that cannot be read: the shipped scenario it may mean, and how to name it."""
    names = shipped_names()
    stem = path.name.removesuffix(path.suffix) if path.suffix.lower() in YAML_SUFFIXES else path.name
    if stem in names:
        return f"; did you mean the shipped scenario {stem!r}? (a shipped scenario is named without a folder or .yaml)"
    return f"; {_choices(stem, names)}" if names else ""


def _choices(name: str, names: list[str]) -> str:
    close = difflib.get_close_matches(name, names, n=1) or [each for each in names if name and each.startswith(name)]
    guess = f"did you mean {close[0]!r}? " if close else ""
    return f"{guess}shipped scenarios: {', '.join(names) or 'none'} (retrystorm scenarios lists them)"
