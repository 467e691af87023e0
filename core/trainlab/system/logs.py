"""Logging to the user log dir, and native crashes (faulthandler) to a file."""

from __future__ import annotations

import faulthandler
import logging
import logging.handlers
import sys

from trainlab.system import paths

_crash_file = None


def setup_logging(verbose: bool = False, console: bool = True) -> logging.Logger:
    """``trainlab.log`` (rotating) in the log dir; crashes to ``crash.log``."""
    global _crash_file
    logger = logging.getLogger("trainlab")
    if getattr(logger, "_trainlab_configured", False):
        return logger
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    try:
        folder = paths.log_dir()
        folder.mkdir(parents=True, exist_ok=True)
        handler = logging.handlers.RotatingFileHandler(folder / "trainlab.log", maxBytes=5_000_000, backupCount=3, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"))
        handler.setLevel(logging.DEBUG)
        logger.addHandler(handler)
        if _crash_file is None:
            _crash_file = open(folder / "crash.log", "a", encoding="utf-8")  # kept open for faulthandler
            faulthandler.enable(file=_crash_file, all_threads=True)
    except OSError as exc:
        print(f"trainlab: cannot write logs to {paths.log_dir()}: {exc}", file=sys.stderr)
    if console and sys.stderr is not None:
        stream = logging.StreamHandler(sys.stderr)
        stream.setLevel(logging.DEBUG if verbose else logging.WARNING)
        stream.setFormatter(logging.Formatter("trainlab: %(message)s"))
        logger.addHandler(stream)
    logger._trainlab_configured = True  # type: ignore[attr-defined]
    return logger
