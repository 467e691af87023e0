"""The GUI script's output: a log file when there is no console, and crash reports.

``trainlab-gui`` calls :func:`configure_stdio` before anything else; a
desktop-launched app has no terminal to show a warning or a native crash in.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import time
from pathlib import Path
from typing import IO

from trainlab.shortcuts.identity import GUI_SCRIPT
from trainlab.system.paths import log_dir
from trainlab.system.release import TRAINLAB_VERSION as __version__

GUI_LOG_NAME = "trainlab-gui.log"
CRASH_LOG_NAME = "crash.log"
_GUI_LOG_ROLLOVER_BYTES = 5 * 1024 * 1024
_CRASH_LOGS_KEPT = 5


def gui_log_path() -> Path:
    """Where ``trainlab-gui`` writes its output when it has no console."""
    return log_dir() / GUI_LOG_NAME


def crash_log_path() -> Path:
    """Where ``faulthandler`` writes the traceback of a hard crash (this start's)."""
    return log_dir() / CRASH_LOG_NAME


_stdio_streams: list[IO[str]] = []  # kept open (and referenced) for the process's life


def configure_stdio() -> None:
    """Prepare the GUI process's output before anything can print.

    A GUI script on Windows (pythonw) starts with ``sys.stdout`` and
    ``sys.stderr`` set to None; the first library that writes a progress bar
    or warning there would raise. Those that are None are redirected to
    ``trainlab-gui.log`` in the user log dir. In every case ``faulthandler``
    writes hard crashes (segfaults in native code, aborts) to ``crash.log``
    there, since a desktop-launched app has nowhere else to show them; a
    non-empty ``crash.log`` from an earlier start is kept as
    ``crash-<time>.log``. Calling it again does nothing.
    """
    if _stdio_streams:
        return
    folder = log_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        folder = None
    if sys.stdout is None or sys.stderr is None:
        stream = _open_gui_log(folder)
        if sys.stdout is None:
            sys.stdout = stream
        if sys.stderr is None:
            sys.stderr = stream
        _stdio_streams.append(stream)
    crash = _open_crash_log(folder)
    if crash is not None:
        faulthandler.enable(file=crash, all_threads=True)
        _stdio_streams.append(crash)
    if not _stdio_streams:  # nothing to keep open: remember that we ran anyway
        _stdio_streams.append(open(os.devnull, "w", encoding="utf-8"))


def _open_gui_log(folder: Path | None) -> IO[str]:
    if folder is None:
        return open(os.devnull, "w", encoding="utf-8")
    path = folder / GUI_LOG_NAME
    try:
        if path.stat().st_size > _GUI_LOG_ROLLOVER_BYTES:
            os.replace(path, path.with_name(GUI_LOG_NAME + ".1"))
    except OSError:
        pass
    try:
        # Line-buffered so the log is current when the app is killed.
        stream = open(path, "a", encoding="utf-8", errors="backslashreplace", buffering=1)
    except OSError:
        return open(os.devnull, "w", encoding="utf-8")
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    stream.write(f"=== {GUI_SCRIPT} {__version__} started {stamp}, pid {os.getpid()} ===\n")
    return stream


def _open_crash_log(folder: Path | None) -> IO[str] | None:
    if folder is None:
        return None
    path = folder / CRASH_LOG_NAME
    try:
        info = path.stat()
    except OSError:
        info = None
    if info is not None and info.st_size > 0:
        # The previous start crashed: keep its traceback under its own name.
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(info.st_mtime))
        try:
            os.replace(path, path.with_name(f"crash-{stamp}.log"))
        except OSError:
            pass
        for old in sorted(folder.glob("crash-*.log"))[:-_CRASH_LOGS_KEPT]:
            old.unlink(missing_ok=True)
    try:
        return open(path, "w", encoding="utf-8")
    except OSError:
        return None
