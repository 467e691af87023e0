"""Pause, resume and stop a run over several processes through a file in its folder.

A child run in one process takes ``pause``/``resume``/``stop`` on its stdin
(``trainlab.engine.child_main``); a group started by torchrun has no such pipe
(torchrun forwards SIGTERM and SIGINT only, and the ranks may be on several
machines).  So rank 0 watches ``RUN_DIR/control``: writing the word
``pause``, ``resume`` or ``stop`` into it (``echo pause > RUN_DIR/control``;
the window's run controller can do the same) asks rank 0's ``RunControl``,
and the ranks' agreement (``RankGroup.agree_if_due``, started about every
0.1 s of training and acted on one interval later) makes every rank pause,
resume or stop after the same step.

A word is acted on when the file changes; what the file held when the run
began is set aside (removed), so a ``pause`` left from an earlier session
does not pause a resumed run.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

CONTROL_FILE = "control"
POLL_SECONDS = 0.2
WORDS = ("pause", "resume", "stop")


def control_path(run_dir: str | os.PathLike[str]) -> Path:
    return Path(run_dir) / CONTROL_FILE


def request(run_dir: str | os.PathLike[str], word: str) -> None:
    """Ask the run in ``run_dir`` to ``pause``, ``resume`` or ``stop`` (what a caller writes)."""
    if word not in WORDS:
        raise ValueError(f"control word {word!r}: expected one of {', '.join(WORDS)}")
    path = control_path(run_dir)
    tmp = path.with_name(f".{CONTROL_FILE}.{os.getpid()}.tmp")
    tmp.write_text(word + "\n", encoding="utf-8")
    os.replace(tmp, path)  # the watcher never reads half a word


class ControlFileWatcher:
    """Applies the words written into ``RUN_DIR/control`` to ``control`` (a ``RunControl``)."""

    def __init__(self, run_dir: str | os.PathLike[str], control: Any, *, poll: float = POLL_SECONDS):
        self.path = control_path(run_dir)
        self.control = control
        self.poll = poll
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._seen: tuple[int, int, int] | None = None

    def start(self) -> "ControlFileWatcher":
        self.path.unlink(missing_ok=True)
        self._thread = threading.Thread(target=self._run, name="trainlab-control-file", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.poll + 1.0)
        self._thread = None
        self.path.unlink(missing_ok=True)

    def _run(self) -> None:
        while not self._stop.wait(self.poll):
            self.check()

    def check(self) -> str:
        """Act on the file if it changed since last seen; the word acted on ('' for none)."""
        try:
            stat = self.path.stat()
        except OSError:
            self._seen = None
            return ""
        seen = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        if seen == self._seen:
            return ""
        self._seen = seen
        try:
            word = self.path.read_text(encoding="utf-8").strip().lower()
        except OSError:
            return ""
        if word == "pause":
            self.control.pause()
        elif word == "resume":
            self.control.resume()
        elif word == "stop":
            self.control.request_stop("stopped by the user")
        else:
            return ""
        return word
