"""Reading a file a user names on the command line or in a scenario, without ever hanging.

``open()`` of a FIFO blocks until a writer opens it, and reading a character device (``/dev/zero``) or a
folder never ends or fails late; a user who names one by mistake gets a command that hangs forever.
:func:`read_user_file` opens without blocking (``O_NONBLOCK``), checks with ``fstat`` on the open descriptor
(so no one can swap the file between a check and the read) that it is a regular file, and reads at most
``max_bytes + 1`` bytes, so the caller can tell a file that is too large. Each caller words its own error
from :class:`UserFileError`'s one-line reason.
"""

from __future__ import annotations

import os
import stat

__all__ = ["UserFileError", "read_user_file"]


class UserFileError(Exception):
    """Why a file cannot be read, in a few words (``not a regular file (a FIFO)``, ``No such file or directory``)."""


_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFDIR: "a folder",
    stat.S_IFSOCK: "a socket",
}


def read_user_file(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """At most ``max_bytes + 1`` bytes of the regular file ``path``; :class:`UserFileError` for anything else."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as error:
        raise UserFileError(error.strerror or str(error)) from None
    try:
        kind = stat.S_IFMT(os.fstat(descriptor).st_mode)
        if kind != stat.S_IFREG:
            raise UserFileError(f"not a regular file ({_KINDS.get(kind, 'a special file')}); name a file")
        os.set_blocking(descriptor, True)
        with os.fdopen(os.dup(descriptor), "rb") as handle:
            return handle.read(max_bytes + 1)
    except OSError as error:
        raise UserFileError(error.strerror or str(error)) from None
    finally:
        os.close(descriptor)
