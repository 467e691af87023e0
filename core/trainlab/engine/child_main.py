"""``python -m trainlab.engine.child_main``: one run in a child process.

The child side of ``RunProcess`` (``trainlab.engine.run_process``) for one
process.  Protocol: the parent writes the RunRequest as one JSON line on stdin, then
control lines (``pause``, ``resume``, ``stop``).  The child writes events as
JSON lines on stdout (the original fd 1; anything else that prints goes to
stderr).  End of stdin means the parent is gone: the run stops and keeps its
checkpoint.  Exit codes are the CLI's (``RunOutcome.exit_code``): 0, 1, 2, 130;
the last event, ``Finished``, carries the whole outcome.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading

from trainlab.api.callbacks import Callback, RunControl
from trainlab.api.errors import RunFailed, StopRequested, UsageError
from trainlab.engine.outcome import EXIT_INTERRUPTED
from trainlab.engine.plan import RunRequest
from trainlab.engine.plugin_calls import FAILURE_PREFIX, failure_of
from trainlab.engine.run_here import run_here
from trainlab.system.logs import setup_logging


def main() -> int:
    # Keep the real stdout for events; send stray prints to stderr.
    events_out = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    setup_logging(console=False)
    line = sys.stdin.readline()
    try:
        request = RunRequest(**json.loads(line))
    except (ValueError, TypeError) as exc:
        print(f"trainlab: error: bad run request from the parent: {exc}", file=sys.stderr)
        return 2
    control = RunControl()
    lock = threading.Lock()

    class Forward(Callback):
        def on_event(self, event) -> None:
            text = event.to_json() + "\n"
            with lock:
                try:
                    events_out.write(text)
                except (BrokenPipeError, ValueError, OSError):
                    control.request_stop("the parent process went away")

    def read_commands() -> None:
        for command in sys.stdin:
            command = command.strip()
            if command == "pause":
                control.pause()
            elif command == "resume":
                control.resume()
            elif command == "stop":
                control.request_stop("stopped by the user")
        control.request_stop("the parent process went away")

    threading.Thread(target=read_commands, name="trainlab-commands", daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: control.request_stop("terminated"))
    if hasattr(signal, "SIGINT"):
        signal.signal(signal.SIGINT, lambda *_: control.request_stop("interrupted"))
    forward = Forward()
    try:
        outcome = run_here(request, control=control, callbacks=[forward], mp_context="spawn")
    except StopRequested as exc:  # stopped while preparing: no run began
        print(f"trainlab: error: {exc}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (UsageError, RunFailed) as exc:
        print(f"trainlab: error: {exc}", file=sys.stderr)
        failure = failure_of(exc)  # a plugin's code failed before the run began: the parent's outcome names it
        if failure is not None:
            print(f"{FAILURE_PREFIX}{json.dumps(failure.to_json())}", file=sys.stderr)
        return 2 if isinstance(exc, UsageError) else 1
    finally:
        with lock:
            try:
                events_out.flush()
            except OSError:
                pass
    return outcome.exit_code


if __name__ == "__main__":
    sys.exit(main())
