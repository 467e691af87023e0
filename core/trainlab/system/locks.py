"""Exclusive, non-blocking file locks that a dead process releases.

POSIX: ``flock`` on the file (a lock belongs to the open file, so two locks
in one process on two opens of the same file exclude each other, unlike
``fcntl``'s per-process record locks); Windows: ``msvcrt.locking`` on one byte
far past the holder's note, so the note stays readable while locked.  The
kernel drops the lock when the process ends however it ends (SIGKILL, a
crash, a power-off of the session), which is the point: no stale lease or
scheduler lock outlives its owner.

The holder writes a one-line JSON note (pid, host, user, what it is for)
into the file once it holds the lock, so that whoever finds the lock taken
can say who has it.  Lock files are never deleted: deleting one while
another process waits on it would let two processes "hold" it.
"""

from __future__ import annotations

import getpass
import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_WINDOWS = os.name == "nt"
_LOCK_OFFSET = 1 << 20  # Windows: the locked byte, past any note


@dataclass(frozen=True)
class Holder:
    """Who holds a lock, from its note (fields empty when the note is unreadable)."""

    pid: int = 0
    host: str = ""
    user: str = ""
    purpose: str = ""
    since: float = 0.0

    def describe(self) -> str:
        who = f"process {self.pid}" if self.pid else "another process"
        if self.user:
            who += f" of {self.user}"
        return f"{who} ({self.purpose})" if self.purpose else who

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


class FileLock:
    """One lock file.  ``try_acquire`` never blocks; ``release`` is idempotent."""

    def __init__(self, path: str | os.PathLike[str], *, shared_folder: bool = False):
        self.path = Path(path)
        self.shared_folder = shared_folder  # a machine-wide folder: every user may lock its files
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def try_acquire(self, purpose: str = "") -> bool:
        if self._fd is not None:
            return True
        fd = self._open()
        if fd is None:
            return False
        if not _lock(fd):
            os.close(fd)
            return False
        self._fd = fd
        self._write_note(purpose)
        return True

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            _unlock(fd)
        finally:
            os.close(fd)

    def holder(self) -> Holder | None:
        """Who holds the lock now; None when nobody does (probed by locking it a moment)."""
        if self._fd is not None:
            return _own_holder("")
        fd = self._open()
        if fd is None:
            return None
        try:
            if _lock(fd):
                _unlock(fd)
                return None
            return read_note(self.path) or Holder()
        finally:
            os.close(fd)

    # -- internals ---------------------------------------------------------------
    def _open(self) -> int | None:
        folder = self.path.parent
        if not folder.exists():
            folder.mkdir(parents=True, exist_ok=True)
            if self.shared_folder and not _WINDOWS:
                os.chmod(folder, 0o1777)  # like /tmp: everyone creates, nobody deletes another's
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0)
        try:
            fd = os.open(self.path, flags, 0o666)
        except PermissionError:
            # another user's file that we may not write: a read-only open still locks (flock)
            try:
                fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
            except OSError:
                return None
        if self.shared_folder and not _WINDOWS:
            try:
                os.fchmod(fd, 0o666)  # past the umask, so the next user can write the note too
            except OSError:
                pass
        return fd

    def _write_note(self, purpose: str) -> None:
        assert self._fd is not None
        note = json.dumps(_own_holder(purpose).to_json()) + "\n"
        try:
            os.lseek(self._fd, 0, os.SEEK_SET)
            os.ftruncate(self._fd, 0)
            os.write(self._fd, note.encode())
        except OSError:
            pass  # the lock is what counts; the note only names the holder


def read_note(path: Path) -> Holder | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").split("\n", 1)[0]
        data = json.loads(text)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    return Holder(
        pid=int(data.get("pid") or 0),
        host=str(data.get("host") or ""),
        user=str(data.get("user") or ""),
        purpose=str(data.get("purpose") or ""),
        since=float(data.get("since") or 0.0),
    )


def _own_holder(purpose: str) -> Holder:
    try:
        user = getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name in this environment
        user = ""
    return Holder(pid=os.getpid(), host=socket.gethostname(), user=user, purpose=purpose, since=time.time())


if _WINDOWS:  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _lock(fd: int) -> bool:
        os.lseek(fd, _LOCK_OFFSET, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False

    def _unlock(fd: int) -> None:
        os.lseek(fd, _LOCK_OFFSET, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        except OSError:
            pass

else:
    import fcntl

    def _lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError:
            return False

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
