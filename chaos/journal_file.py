"""The journal's file: private to its owner, never reached through a link, never anything but a regular file.

The journal is written and acted on by root (``sudo -E retrystorm ...`` keeps a user's ``$HOME``), so it is
opened as a file an attacker could have planted would be:

- its folder is opened with ``O_NOFOLLOW`` and must belong to this process's user and be writable by no one else
  (unless sticky, as ``/tmp`` is: there nobody can remove or rename what is ours); a missing folder is made
  ``0700`` (and its missing parents too), whatever the umask;
- the file is opened relative to that folder with ``O_NOFOLLOW`` and ``O_NONBLOCK`` (a FIFO never hangs it), must
  be a regular file of this user writable by no one else, and is made ``0600`` when created, whatever the umask;
- before a fault, the file system must have room (:data:`MIN_FREE_BYTES`) and take writes: a full or read-only
  journal is refused before anything is frozen (:func:`check_writable`).

Every refusal is a :class:`JournalRefusedError`, one line naming the file and the fix (exit 2); a write that fails
during a run is a :class:`JournalError` (exit 3).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from retrystorm.chaos.backends.base import BackendError
from retrystorm.errors import UserError

#: A fault is refused when the journal's file system has less room than this (a few hundred records).
MIN_FREE_BYTES = 64 * 1024
FIX = "choose another with --journal or RETRYSTORM_CHAOS_JOURNAL"


class JournalError(BackendError):
    """A journal write failed during a run (the file system filled up): one line, exit 3."""


class JournalRefusedError(UserError):
    """The journal cannot be used safely (one line: which file, why, how to fix it): exit 2, before any fault."""


def open_private(path: Path, *, create: bool) -> int | None:
    """A descriptor of the journal at ``path``, read-write; ``None`` when it does not exist and ``create`` is
    False. Raises :class:`JournalRefusedError` for anything but a private regular file (module docstring)."""
    name = path.name
    if not name or name in (".", "..") or len(os.fsencode(str(path))) > 4000:
        raise JournalRefusedError(f"journal {str(path)[:200]!r}: expected a file name; {FIX}")
    folder = _open_folder(path.parent, create=create)
    if folder is None:
        return None
    try:
        return _open_file(path, folder, create=create)
    finally:
        os.close(folder)


def open_private_folder(folder: Path) -> int:
    """A descriptor of ``folder`` (made ``0700`` if missing), refused as the journal's folder is (module docstring)."""
    descriptor = _open_folder(folder, create=True)
    if descriptor is None:  # pragma: no cover - _open_folder raises instead when create
        raise JournalRefusedError(f"folder {folder}: cannot be made; {FIX}")
    return descriptor


def open_in(folder: int, name: str, flags: int) -> int:
    """``name`` in the private ``folder`` (a descriptor), never through a link, ``0600`` when created."""
    descriptor = os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=folder)
    found = os.fstat(descriptor)
    if problem := _foreign(found, "file"):
        os.close(descriptor)
        raise JournalRefusedError(f"{name}: {problem}; {FIX}")
    if stat.S_IMODE(found.st_mode) != 0o600:
        os.fchmod(descriptor, 0o600)
    return descriptor


def _open_folder(folder: Path, *, create: bool) -> int | None:
    if create:
        _make_private(folder)
    try:
        descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        if create:
            raise JournalRefusedError(f"journal folder {folder}: it vanished while being made; {FIX}") from None
        return None
    except OSError as error:
        raise JournalRefusedError(f"journal folder {folder}: {_why(error)}; {FIX}") from None
    owner = os.fstat(descriptor)
    problem = _foreign(owner, "folder")
    if problem and not owner.st_mode & stat.S_ISVTX:
        os.close(descriptor)
        raise JournalRefusedError(f"journal folder {folder}: {problem}; {FIX}")
    return descriptor


def _make_private(folder: Path) -> None:
    """Make ``folder`` and its missing parents, each ``0700`` whatever the umask."""
    missing = []
    for candidate in [folder, *folder.parents]:
        if os.path.lexists(candidate):
            break
        missing.append(candidate)
    for directory in reversed(missing):
        try:
            directory.mkdir(0o700)
            directory.chmod(0o700, follow_symlinks=False)
        except FileExistsError:
            continue
        except OSError as error:
            raise JournalRefusedError(f"journal folder {directory}: {_why(error)}; {FIX}") from None


def _open_file(path: Path, folder: int, *, create: bool) -> int | None:
    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY
    created = False
    try:
        descriptor = os.open(path.name, flags | (os.O_CREAT | os.O_EXCL if create else 0), 0o600, dir_fd=folder)
        created = create
    except FileExistsError:
        descriptor = _open_existing(path, folder, flags)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise JournalRefusedError(f"journal {path}: {_why(error)}; {FIX}") from None
    if created:
        os.fchmod(descriptor, 0o600)
    problem = _foreign(os.fstat(descriptor), "file")
    if problem:
        os.close(descriptor)
        raise JournalRefusedError(f"journal {path}: {problem}; {FIX}")
    return descriptor


def _open_existing(path: Path, folder: int, flags: int) -> int:
    try:
        return os.open(path.name, flags, dir_fd=folder)
    except OSError as error:
        raise JournalRefusedError(f"journal {path}: {_why(error)}; {FIX}") from None


def _foreign(found: os.stat_result, what: str) -> str | None:
    """Why ``found`` is not this user's private file or folder, or ``None``."""
    kind = stat.S_ISDIR if what == "folder" else stat.S_ISREG
    if not kind(found.st_mode):
        return f"not a {'folder' if what == 'folder' else 'regular file'} (a FIFO, a device or a link?)"
    if found.st_uid != os.geteuid():
        return f"it belongs to uid {found.st_uid}, not to this process's uid {os.geteuid()}"
    if found.st_mode & 0o022:
        return f"others may write it (mode {stat.S_IMODE(found.st_mode):o}): chmod go-w it"
    if what == "file" and found.st_nlink != 1:
        return f"it has {found.st_nlink} names (a hard link to another file?)"
    return None


def _why(error: OSError) -> str:
    """One line for an ``OSError`` of an open: a link, a FIFO without a reader, a name too long..."""
    if error.errno == errno.ELOOP:
        return "a symbolic link, which the journal never follows"
    if error.errno == errno.ENXIO:
        return "not a regular file (a FIFO?)"
    return error.strerror or str(error)


def check_writable(descriptor: int, path: Path) -> None:
    """Refuse (:class:`JournalRefusedError`) a journal on a full or read-only file system, before any fault."""
    try:
        room = os.fstatvfs(descriptor)
    except OSError as error:
        raise JournalRefusedError(f"journal {path}: {_why(error)}; {FIX}") from None
    if room.f_flag & os.ST_RDONLY:
        raise JournalRefusedError(f"journal {path}: its file system is read-only, so no fault could be recorded; {FIX}")
    free = room.f_bavail * room.f_frsize
    if free < MIN_FREE_BYTES:
        raise JournalRefusedError(
            f"journal {path}: its file system has {free} bytes free, less than the {MIN_FREE_BYTES} a fault's "
            f"records need; free some space or {FIX}"
        )
