"""Putting one file on an SSH host: over SFTP, or over an exec channel where the host has no SFTP.

Both ways end the same: the file lands in 0700 folders under a temporary name
and is renamed into place only when complete, so a half-written file is never
seen under its final name.

Hardened images often drop sshd's ``Subsystem sftp``; opening SFTP then fails
with paramiko's "Channel closed".  The fallback streams the bytes on the stdin
of a command run by the host's own Python (every argument quoted by
remote_exec), which writes them to the temporary file, computes their sha256
and renames the file into place only if that hash is the one computed here.
"""
from __future__ import annotations

import hashlib
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

import paramiko

from app.core.errors import DeployError
from app.services.remote_exec import run_command

VIA_SFTP = "SFTP"
VIA_EXEC = "an SSH exec channel (the host has no SFTP subsystem)"

EXIT_HASH_MISMATCH = 3
EXIT_NOT_A_FOLDER = 4

# Python 3.8+ on the host; argv: folder, file name, expected sha256; the file's bytes on stdin.
_RECEIVE_PY = """\
import hashlib, os, sys
folder, name, want = sys.argv[1:4]
path = ""
for part in [p for p in folder.split("/") if p]:
    path += "/" + part
    if not os.path.isdir(path):
        if os.path.lexists(path):
            sys.stdout.write("nb-not-folder=%s\\n" % path)
            sys.exit(4)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
tmp = "%s/.%s.%d.tmp" % (folder, name, os.getpid())
digest, size = hashlib.sha256(), 0
fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
with os.fdopen(fd, "wb") as out:
    while True:
        chunk = sys.stdin.buffer.read(1 << 16)
        if not chunk:
            break
        digest.update(chunk)
        out.write(chunk)
        size += len(chunk)
got = digest.hexdigest()
sys.stdout.write("nb-sha256=%s\\nnb-bytes=%d\\n" % (got, size))
if got != want:
    os.unlink(tmp)
    sys.exit(3)
os.replace(tmp, os.path.join(folder, name))
"""


@dataclass(frozen=True)
class Uploaded:
    path: str  # where the file now is on the host
    via: str  # VIA_SFTP or VIA_EXEC, for the progress line


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def upload_file(transport: paramiko.Transport, local: Path, remote_dir: str, name: str, python: str,
                what: str, host: str, sha256: str | None = None, timeout: float = 300.0) -> Uploaded:
    """Copy ``local`` to ``remote_dir/name`` on the host (folders created 0700), whole or not at all.

    ``python`` is the host's Python, used only when SFTP is not there; ``what``
    ("the agent", "the timm wheel") and ``host`` name the file and host in errors.
    ``sha256`` is the local file's hash when already known (the agent's bundle).
    """
    try:
        sftp = transport.open_sftp_client()
    except (paramiko.SSHException, EOFError) as exc:
        if not transport.is_active():
            raise DeployError(f"could not upload {what} to {host}: the connection broke ({exc})") from None
        return Uploaded(_upload_over_exec(transport, local, remote_dir, name, python, what, host,
                                          sha256 or sha256_of(local), timeout), VIA_EXEC)
    try:
        with sftp:
            return Uploaded(upload_over_sftp(sftp, local, remote_dir, name), VIA_SFTP)
    except (OSError, paramiko.SSHException) as exc:
        raise DeployError(f"could not upload {what} to {host}:{remote_dir}: {exc}") from None


def _makedirs(sftp: paramiko.SFTPClient, path: str) -> None:
    """Create the missing folders of an absolute path, each 0700 (an existing one is left as it is)."""
    current = ""
    for part in [p for p in path.split("/") if p]:
        current += "/" + part
        try:
            if not stat.S_ISDIR(sftp.stat(current).st_mode or 0):
                raise DeployError(f"cannot upload to {path}: {current} exists on the host and is not a folder")
        except FileNotFoundError:
            sftp.mkdir(current, 0o700)


def upload_over_sftp(sftp: paramiko.SFTPClient, local: Path, remote_dir: str, name: str) -> str:
    """Copy ``local`` to ``remote_dir/name`` over SFTP (folders created 0700), whole or not at all."""
    _makedirs(sftp, remote_dir)
    final = f"{remote_dir}/{name}"
    tmp = f"{remote_dir}/.{name}.{secrets.token_hex(4)}.tmp"
    sftp.put(str(local), tmp, confirm=True)
    sftp.chmod(tmp, 0o600)
    try:
        sftp.posix_rename(tmp, final)  # atomic, and replaces a file a concurrent upload put there
    except OSError:
        sftp.remove(tmp)
        sftp.stat(final)  # no posix-rename extension: fine only if someone else finished the same upload
    return final


def _upload_over_exec(transport: paramiko.Transport, local: Path, remote_dir: str, name: str, python: str,
                      what: str, host: str, sha256: str, timeout: float) -> str:
    result = run_command(transport, [python, "-c", _RECEIVE_PY, remote_dir, name, sha256],
                         stdin=local.read_bytes(), timeout=timeout)
    found = dict(line[3:].split("=", 1) for line in result.text().splitlines()
                 if line.startswith("nb-") and "=" in line)
    if result.code == EXIT_HASH_MISMATCH or (result.code == 0 and found.get("sha256") != sha256):
        raise DeployError(f"{what} sent to {host} over an SSH exec channel arrived damaged (sha256 "
                          f"{found.get('sha256', '?')[:16]}… on the host, {sha256[:16]}… here, "
                          f"{found.get('bytes', '?')} of {local.stat().st_size} bytes) and was not installed; "
                          f"try again, and check what on the host alters a command's input if it persists")
    if result.code == EXIT_NOT_A_FOLDER:
        raise DeployError(f"cannot upload {what} to {host}: {found.get('not-folder')} exists there and is not "
                          f"a folder")
    if result.code != 0:
        raise DeployError(f"could not upload {what} to {host}:{remote_dir} over an SSH exec channel (the host "
                          f"has no SFTP subsystem): {result.stderr_line()}",
                          detail=result.stderr.decode("utf-8", "replace"))
    return f"{remote_dir}/{name}"
