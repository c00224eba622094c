"""Whether a private key file can be one: said before paramiko is asked to read it.

``/dev/zero`` would be read for ever, a FIFO would block the connect until someone writes to it, and a
folder is no key either; each gets its own sentence instead of "no such file".
"""
from __future__ import annotations

import os
import stat

MAX_KEY_BYTES = 1 << 20  # an OpenSSH or PEM private key is a few KiB; anything this large is something else


def key_file_problem(path: str) -> str | None:
    """What stops ``path`` (``~`` expanded) from being a private key file, or None when it may be one."""
    try:
        info = os.stat(os.path.expanduser(path))
    except FileNotFoundError:
        return "no such file"
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    if stat.S_ISDIR(info.st_mode):
        return "is a folder, not a private key file"
    if not stat.S_ISREG(info.st_mode):
        kind = "a FIFO" if stat.S_ISFIFO(info.st_mode) else "a socket" if stat.S_ISSOCK(info.st_mode) else "a device"
        return f"is {kind}, not a private key file"
    if info.st_size > MAX_KEY_BYTES:
        return f"is {info.st_size:,} bytes, too large to be a private key file"
    if not os.access(os.path.expanduser(path), os.R_OK):
        return "cannot be read: permission denied"
    return None
