"""What a run does behind the engine's back: files written and network sockets opened.

One audit hook (PEP 578) for the process, installed the first time a check
watches a run and idle otherwise (an audit hook cannot be removed).  It sees
this process only: a run checked by the kit keeps its data loaders in the
process (``num_workers=0``) for that reason.  Writes made by C libraries
without Python's ``open`` (SQLite's own files) are not seen; the only such
writer in a run is TrainLab's run index, which is allowed anyway.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_NETWORK_FAMILIES = {socket.AF_INET, socket.AF_INET6}
_lock = threading.Lock()
_watchers: list["RunWatch"] = []
_installed = False


class RunWatch:
    """Paths written and network sockets made while it is active."""

    def __init__(self) -> None:
        self.written: set[str] = set()
        self.sockets: list[str] = []

    def _event(self, name: str, args: tuple) -> None:
        if name == "open":
            path, mode, flags = (args + (None, None, None))[:3]
            if isinstance(path, int) or path is None:
                return
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & _WRITE_FLAGS
            )
            if writing:
                self.written.add(os.fsdecode(path))
        elif name in ("os.rename", "os.replace", "shutil.copyfile", "shutil.move"):
            self.written.add(os.fsdecode(args[1]))
        elif name in ("os.mkdir", "os.remove", "os.rmdir", "os.truncate"):
            self.written.add(os.fsdecode(args[0]) if not isinstance(args[0], int) else "")
        elif name == "socket.__new__":
            family = args[1] if len(args) > 1 else None
            if family in _NETWORK_FAMILIES:
                self.sockets.append(f"{socket.AddressFamily(family).name} socket")
        elif name in ("socket.connect", "socket.bind", "socket.getaddrinfo"):
            target = args[1] if len(args) > 1 else args
            if name != "socket.getaddrinfo" and isinstance(target, (str, bytes)):
                return  # an AF_UNIX path: no network
            self.sockets.append(f"{name} {target!r}")

    def outside(self, allowed: list[Path]) -> list[str]:
        """Written paths under none of ``allowed`` (folders), sorted."""
        roots = [os.path.realpath(p) for p in allowed]
        stray = []
        for path in self.written:
            if not path or path.startswith("/dev/"):
                continue
            real = os.path.realpath(path)
            if any(real == root or real.startswith(root + os.sep) for root in roots):
                continue
            if any(root.startswith(real + os.sep) for root in roots):
                continue  # a folder on the way to an allowed one (the run folder's parent, made for it)
            stray.append(path)
        return sorted(stray)


def _hook(name: str, args: tuple) -> None:
    if not _watchers:
        return
    if name == "open" or name.startswith(("os.", "shutil.", "socket.")):
        for watcher in list(_watchers):
            watcher._event(name, args)


@contextmanager
def watching() -> Iterator[RunWatch]:
    global _installed
    with _lock:
        if not _installed:
            sys.addaudithook(_hook)
            _installed = True
    watch = RunWatch()
    _watchers.append(watch)
    try:
        yield watch
    finally:
        _watchers.remove(watch)
