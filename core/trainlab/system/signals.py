"""Holding Ctrl-C and SIGTERM while something must not be cut in half.

``signals_deferred()`` puts holders in place of the SIGINT and SIGTERM
handlers for the length of a ``with`` block (the end of a run written to
run.json, a checkpoint written) and hands what arrived meanwhile to the
handlers that were there before, once the block is done.

A handler, not a signal mask: a signal the C level took just before would
still run its Python handler in here, and a signal that lands while the
holders are being put in place is held too.  ``abort_after`` bounds the
wait: that many signals held, and the block is cut short at once
(KeyboardInterrupt), as an impatient user asks.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from typing import Any, Iterator


@contextlib.contextmanager
def signals_deferred(*, abort_after: int | None = None, note: str = "") -> Iterator[None]:
    """Hold SIGINT and SIGTERM for the block; ``note`` is said on stderr when one is held."""
    if threading.current_thread() is not threading.main_thread():
        yield  # Python runs signal handlers on the main thread only
        return
    held: list[int] = []
    previous: dict[int, Any] = {}

    def hold(number: int, _frame: Any) -> None:
        held.append(number)
        if abort_after is not None and len(held) >= abort_after:
            held.clear()  # this one is acted on here, not again after
            raise KeyboardInterrupt
        if note:
            print(f"\ntrainlab: {note}", file=sys.stderr, flush=True)

    for signum in (signal.SIGINT, signal.SIGTERM):
        while signum not in previous:
            try:
                previous[signum] = signal.signal(signum, hold)
            except KeyboardInterrupt:  # a Ctrl-C a moment before this
                held.append(signal.SIGINT)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in held:
            handler = previous.get(signum)
            if callable(handler):
                handler(signum, None)  # the CLI's: a stop, or the abort it asked for
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), signum)
