"""What every command of the command line shares: its parser, its output, its parameters, its signals."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
from typing import Any, Callable

from trainlab.api.errors import StopRequested, UsageError


class ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 too, but we keep --json honest
        # main() prints "trainlab: error: ..." itself: name the subcommand (``train: ...``), never "trainlab" again
        command = self.prog.split(" ", 1)[1] if " " in self.prog else ""
        raise UsageError(f"{command}: {message}" if command else message)


class OutputClosed(StopRequested):
    """The reader of the command's output went away: the command stops as on Ctrl-C, quietly."""


class Output:
    """Human text to stderr; with --json, one JSON object on the real stdout.

    While a --json command runs, ``sys.stdout`` points at stderr so that a
    stray print from a library cannot corrupt the JSON.
    """

    def __init__(self, as_json: bool):
        self.as_json = as_json
        self.stdout = sys.stdout

    def say(self, text: str = "") -> None:
        if not self.as_json:
            self._print(text, self.stdout)
        elif sys.stderr is not None:
            self._print(text, sys.stderr)

    def note(self, text: str) -> None:
        if sys.stderr is not None:
            self._print(text, sys.stderr)

    def _print(self, text: str, stream: Any) -> None:
        """``print``; a reader that went away (``trainlab train ... | head``) stops the
        command as Ctrl-C does (a run keeps its checkpoint and resumes), rather than
        a BrokenPipeError failing the run in whatever plugin call was logging."""
        try:
            print(text, file=stream)
            stream.flush()
        except BrokenPipeError:
            devnull = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - for the rest of the process
            if stream is self.stdout:
                self.stdout = devnull
            if stream is sys.stdout:
                sys.stdout = devnull
            if stream is sys.stderr:
                sys.stderr = devnull
            raise OutputClosed("the output was closed") from None

    def result(self, data: dict[str, Any]) -> None:
        if self.as_json:
            self.stdout.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")
            self.stdout.flush()

    @contextlib.contextmanager
    def guarded(self):
        if not self.as_json or sys.stderr is None:
            yield
            return
        saved = sys.stdout
        sys.stdout = sys.stderr
        try:
            yield
        finally:
            sys.stdout = saved


def params_from(args: argparse.Namespace) -> dict[str, str]:
    from trainlab.api.params import parse_assignments

    params = parse_assignments(getattr(args, "sets", []) or [])
    for name in ("model", "epochs", "batch_size", "lr", "device", "precision", "seed"):
        value = getattr(args, name, None)
        if value is not None:
            params[name] = value
    return params


@contextlib.contextmanager
def stop_on_signals(stop: Callable[[], None]):
    """First Ctrl-C / SIGTERM asks the run to stop (checkpoint kept); a second one aborts."""
    if threading_main() is False:
        yield
        return
    hits = {"n": 0}

    def handler(signum, frame):
        hits["n"] += 1
        if hits["n"] > 1:
            raise KeyboardInterrupt
        print("\ntrainlab: stopping after this step (Ctrl-C again to abort)", file=sys.stderr)
        stop()

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def threading_main() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()
