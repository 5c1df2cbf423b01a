"""Files and folders a user names on the command line or in a scenario: read without hanging, written without
following a link, an output folder made ready before the work.

``open()`` of a FIFO blocks until a writer opens it, and reading a character device (``/dev/zero``) or a
folder never ends or fails late; a user who names one by mistake gets a command that hangs forever.
:func:`read_user_file` opens without blocking (``O_NONBLOCK``), checks with ``fstat`` on the open descriptor
(so no one can swap the file between a check and the read) that it is a regular file, and reads at most
``max_bytes + 1`` bytes, so the caller can tell a file that is too large. Each caller words its own error
from :class:`UserFileError`'s one-line reason.

:func:`write_user_file` never writes through a symbolic link (``O_NOFOLLOW``; a new file with ``O_EXCL``, which
refuses even a dangling link): a link another user planted at the path cannot turn the write onto a file of theirs
choosing. :func:`prepare_out_folder` checks an ``--out`` folder before anything runs, so a long run never ends in
an error about where its results go, and never overwrites earlier results without ``--force``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from retrystorm.errors import UserError

__all__ = ["UserFileError", "prepare_out_folder", "read_user_file", "write_user_file"]


class UserFileError(Exception):
    """Why a file cannot be read, in a few words (``not a regular file (a FIFO)``, ``No such file or directory``)."""


_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFDIR: "a folder",
    stat.S_IFSOCK: "a socket",
}


@contextlib.contextmanager
def _regular_file(path: str | os.PathLike[str], flags: int) -> Iterator[int]:
    """A blocking descriptor of ``path`` opened with ``flags`` (never blocking on the open), once ``fstat`` on it
    shows a regular file; every failure a :class:`UserFileError`."""
    try:
        descriptor = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY, 0o644)
    except OSError as error:
        if error.errno == errno.ELOOP and flags & os.O_NOFOLLOW:
            raise UserFileError("a symbolic link; it is never written through: remove it or name another") from None
        raise UserFileError(error.strerror or str(error)) from None
    try:
        kind = stat.S_IFMT(os.fstat(descriptor).st_mode)
        if kind != stat.S_IFREG:
            raise UserFileError(f"not a regular file ({_KINDS.get(kind, 'a special file')}); name a file")
        os.set_blocking(descriptor, True)
        yield descriptor
    except OSError as error:
        raise UserFileError(error.strerror or str(error)) from None
    finally:
        os.close(descriptor)


def read_user_file(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """At most ``max_bytes + 1`` bytes of the regular file ``path``; :class:`UserFileError` for anything else."""
    with _regular_file(path, os.O_RDONLY) as descriptor, os.fdopen(os.dup(descriptor), "rb") as handle:
        return handle.read(max_bytes + 1)


def write_user_file(path: str | os.PathLike[str], text: str, *, replace: bool = False) -> None:
    """Write ``text`` (UTF-8) to the regular file ``path``, never through a symbolic link; :class:`UserFileError`.

    Without ``replace`` the file must not exist (``O_EXCL``: a link, even a dangling one, counts as existing);
    with it an existing regular file is truncated, and a link or anything but a regular file is refused.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_TRUNC if replace else os.O_EXCL)
    with _regular_file(path, flags) as descriptor, os.fdopen(os.dup(descriptor), "w", encoding="utf-8") as handle:
        handle.write(text)


#: What makes a folder hold results: ``--out`` into one needs ``--force``.
RESULT_FILES = ("results.json", "report.html", "map.json")


def prepare_out_folder(folder: Path, *, force: bool = False, results: Sequence[str] = RESULT_FILES) -> None:
    """Make ``folder`` ready to take outputs, before any work: a folder (made if missing) that can be written and
    holds none of ``results`` unless ``force``. Each refusal is a one-line :class:`~retrystorm.errors.UserError`.
    """
    try:
        if folder.exists() and not folder.is_dir():
            raise UserError(f"--out: {folder} exists and is not a folder; name a folder for the results")
        found = [name for name in results if os.path.lexists(folder / name)]
        if found and not force:
            raise UserError(
                f"--out: {folder} already holds results ({', '.join(found)}); pass --force to overwrite them, "
                "or name another folder"
            )
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):  # a folder that cannot be written fails now, not after the work
            pass
    except OSError as error:
        raise UserError(f"--out: cannot write into {folder}: {error.strerror or error}") from None
