"""Which scenario files root may run: none that another user can change.

A scenario names a command to start (``target.command``) and targets to pause, and ``retrystorm run``
often runs as root. A file another user can write, or can replace (it sits in a folder that user can
write, without the sticky bit that stops them renaming others' files, or in a folder they own), is that
user's code running as root. So, when the process runs as root (effective uid 0), every step of the
file's path, as given and as resolved through symbolic links, must be:

- owned by root, by the effective user, or by the user who ran ``sudo`` (``SUDO_UID``: their own file);
- for the file itself: not writable by its group or others;
- for each folder on the way: not writable by its group or others, unless its sticky bit is set (``/tmp``).

A shipped scenario is part of the installed package and is not checked here. The idea is OpenSSH's
``StrictModes`` for ``authorized_keys``: the file and the folders above it owned by root or the user, and
writable by no one else.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from retrystorm.experiment.scenario.errors import ScenarioError

_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


def trusted_uids() -> set[int]:
    """The users whose files root runs: root, the effective user, and the user who ran ``sudo``."""
    uids = {0, os.geteuid()}
    sudo_uid = os.environ.get("SUDO_UID", "")
    if sudo_uid.isdigit():
        uids.add(int(sudo_uid))
    return uids


def refuse_untrusted(path: Path) -> None:
    """Raise a one-line :class:`ScenarioError` if root runs ``path`` and another user can change it.

    Does nothing when the process does not run as root, or when ``path`` cannot be examined (reading it
    then fails with the reader's own error).
    """
    if os.geteuid() != 0:
        return
    uids = trusted_uids()
    for candidate in _paths_of(path):
        problem = _first_problem(candidate, uids)
        if problem:
            raise ScenarioError(
                f"{path}: refused: running as root, and {problem}, so another user can change what runs; "
                "keep the scenario in a folder only root (or you) can write, or run it without root"
            )


def _paths_of(path: Path) -> list[Path]:
    """``path`` made absolute as given (symbolic links kept) and as resolved: both are checked."""
    given = Path(os.path.abspath(path))  # noqa: PTH100 (resolve() would follow the links, abspath keeps them)
    resolved = Path(os.path.realpath(path))
    return [given] if given == resolved else [given, resolved]


def _first_problem(path: Path, uids: set[int]) -> str:
    """What lets another user change ``path`` (the file, or a folder above it); empty if nothing does."""
    steps = [path, *path.parents]
    for step in steps:
        try:
            found = os.lstat(step)
        except OSError:
            return ""
        what = "the file" if step == path else f"the folder {step}"
        if found.st_uid not in uids:
            return f"{what} belongs to user {found.st_uid}"
        if stat.S_ISLNK(found.st_mode):
            continue  # a link's own mode bits mean nothing; its owner and its folder are what count
        writable = found.st_mode & _OTHERS_WRITE
        if step == path and writable:
            return f"the file is writable by others (mode {stat.filemode(found.st_mode)})"
        if step != path and writable and not found.st_mode & stat.S_ISVTX:
            return f"{what} is writable by others without the sticky bit (mode {stat.filemode(found.st_mode)})"
    return ""
