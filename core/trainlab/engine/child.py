"""Run a training run in a child process and follow its events.

The child runs the same engine (``trainlab.engine.child_main``); its events come
back as JSON lines and are turned into the same frozen dataclasses.  A crash
in the child (a native one included) cannot take the parent down.
"""

from __future__ import annotations

import collections
import json
import logging
import os
import subprocess
import sys
import threading
from typing import Iterator

from trainlab.api.events import Event, Finished, Started, event_from_json
from trainlab.engine.outcome import EXIT_INTERRUPTED, EXIT_USAGE, RunOutcome
from trainlab.engine.plan import RunRequest
from trainlab.engine.plugin_calls import FAILURE_PREFIX

log = logging.getLogger("trainlab.child")


class ChildRun:
    def __init__(self, request: RunRequest, *, python: str | None = None, env: dict[str, str] | None = None):
        self.request = request
        self.python = python or sys.executable
        self.env = env
        self.proc: subprocess.Popen[str] | None = None
        self.run_dir: str | None = None
        self.task: str | None = None
        self.finished: Finished | None = None
        self._stderr: collections.deque[str] = collections.deque(maxlen=200)
        self._lock = threading.Lock()
        self._stderr_thread: threading.Thread | None = None

    def start(self) -> None:
        env = dict(os.environ if self.env is None else self.env)
        env.setdefault("PYTHONUNBUFFERED", "1")
        self.proc = subprocess.Popen(
            [self.python, "-m", "trainlab.engine.child_main"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            bufsize=1,
            env=env,
        )
        self._send(json.dumps(self.request.to_json(), default=str))
        self._stderr_thread = threading.Thread(target=self._drain_stderr, name="trainlab-child-stderr", daemon=True)
        self._stderr_thread.start()

    def _drain_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for line in self.proc.stderr:
            line = line.rstrip("\n")
            self._stderr.append(line)
            log.info("child: %s", line)

    def _send(self, line: str) -> None:
        if self.proc is None or self.proc.stdin is None:
            return
        with self._lock:
            try:
                self.proc.stdin.write(line + "\n")
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                pass

    def events(self) -> Iterator[Event]:
        """Events as the child emits them, until it exits."""
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            if not line.strip():
                continue
            try:
                event = event_from_json(line)
            except (ValueError, TypeError):
                log.warning("child printed a line that is not an event: %r", line[:200])
                continue
            if isinstance(event, Started):
                self.run_dir, self.task = event.run_dir, event.task
            elif isinstance(event, Finished):
                self.finished = event
            yield event

    def pause(self) -> None:
        self._send("pause")

    def resume(self) -> None:
        self._send("resume")

    def stop(self, timeout: float = 60.0) -> None:
        """Ask the child to stop after its current step; force it if it does not."""
        self._send("stop")
        proc = self.proc

        def enforce() -> None:
            if proc is None:
                return
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                log.warning("child did not stop within %.0f s; terminating it", timeout)
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()

        threading.Thread(target=enforce, name="trainlab-child-stop", daemon=True).start()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()

    def wait(self, timeout: float | None = None) -> int:
        assert self.proc is not None
        code = self.proc.wait(timeout)
        if self._stderr_thread is not None:
            self._stderr_thread.join(5)
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        return code

    def result(self, code: int) -> RunOutcome:
        """The run's outcome: the one the child returned (from its Finished event) or, without one, how the child ended."""
        if self.finished is not None:
            return RunOutcome.from_finished(self.finished)
        reason = self.error_message()
        error = f"the training process ended with exit code {code} before finishing"
        if reason:
            error = reason if code in (EXIT_USAGE, EXIT_INTERRUPTED) else f"{error}: {reason}"
        return RunOutcome.not_started(
            task=self.task or self.request.task,
            run_dir=self.run_dir or "",
            status="cancelled" if code == EXIT_INTERRUPTED else "failed",
            error=error,
            usage_error=code == EXIT_USAGE,
            traceback=self.stderr_tail(),
            failure=self.failure(),
        )

    @property
    def returncode(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def stderr_tail(self) -> str:
        return "\n".join(self._stderr)

    def failure(self) -> dict:
        """The plugin failure the child reported before its run began (empty if none)."""
        for line in reversed(self._stderr):
            if line.startswith(FAILURE_PREFIX):
                try:
                    return dict(json.loads(line[len(FAILURE_PREFIX) :]))
                except (ValueError, TypeError):
                    return {}
        return {}

    def error_message(self) -> str:
        for line in reversed(self._stderr):
            if line.startswith("trainlab: error: "):
                return line[len("trainlab: error: ") :]
        for line in reversed(self._stderr):
            if line.strip():
                return line.strip()
        return ""
