"""A run over several processes started by the window: the CLI's launcher as a child, followed through the run folder.

The window runs ``python -m trainlab train TASK --data PATH --set k=v ...
--out RUN_DIR --gpus 0,2 --json`` (an argument list, never a shell): the
launcher the command line uses (``trainlab.engine.torchrun``), which starts torchrun,
which starts the ranks.  Rank 0 alone writes the run folder, so the window
reads the run's events where every follower reads them, ``metrics.jsonl``
through ``MetricsTail``, as rank 0 appends them (the same frozen events
``ChildRun`` delivers); the launcher's one JSON object on stdout is the
outcome (rank 0's, naming the rank that failed first when one did).

Stop: SIGTERM to the launcher, which passes it to torchrun, which passes it
to every rank (on Windows, where SIGTERM would end the launcher alone: the
word ``stop`` in the control file); the ranks agree to stop after the same
step, rank 0 writes the last checkpoint, and the run is ``cancelled``.  A group that has not
ended ``STOP_GRACE_SECONDS`` later is killed, process tree and all.

Pause and resume: the words ``pause`` and ``resume`` written into the run
folder's ``control`` file (``trainlab.engine.distributed_control``), which
rank 0 watches; the ranks' agreement makes every rank hold after the same
step.  (Signals cannot carry them: the launcher forwards SIGINT and SIGTERM,
torchrun nothing else.)  Rank 0 sets aside what the file held when it
started watching, before its ``Started`` event; so a pause asked for before
that event is written once it arrives.

No Qt here: ``TrainingWorker`` runs this in its thread.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

from trainlab.api.events import Event, Finished, Started, SystemSample
from trainlab.engine.distributed_control import request
from trainlab.engine.outcome import EXIT_INTERRUPTED, EXIT_USAGE, RunOutcome
from trainlab.runfolder.index import RunDir, new_run_id
from trainlab.runfolder.status import RunStatus
from trainlab.runfolder.tail import MetricsTail
from trainlab.system import paths

log = logging.getLogger("trainlab.desktop")

POLL_SECONDS = 0.2  # how often metrics.jsonl is read while the group runs (the plots' own refresh is 20 Hz)
# The launcher gives torchrun's ranks 60 s (trainlab.engine.torchrun.SHUTDOWN_SECONDS) to honour SIGTERM; past that
# and a little more, the window kills what is left rather than leave processes behind.
STOP_GRACE_SECONDS = 90.0


def setting_text(value: Any) -> str:
    """A parameter's value as ``--set`` reads it back (floats exactly: repr, not a rounded %g)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def group_command(request: Any, launch: Any, run_dir: str, python: str | None = None) -> list[str]:
    """The launcher's argument list for ``request`` (a ``RunRequest``) on ``launch`` (a ``LaunchChoice``).

    The window's remembered values and the user's edits both go in as
    ``--set`` (the remembered level sits above the presets anyway, so they
    resolve the same); ``device`` stays out: the launch options choose the
    devices (``--gpus`` with ``--device cuda:N`` is refused).
    """
    cmd = [python or sys.executable, "-m", "trainlab", "train"]
    if request.resume:
        cmd += ["--resume", str(request.resume)]
        if request.more_epochs:
            cmd += ["--more-epochs", str(int(request.more_epochs))]
    else:
        cmd += [str(request.task), "--data", str(request.data), "--out", str(run_dir)]
    values = {**dict(request.remembered or {}), **dict(request.params or {})}
    for name, value in values.items():
        if name == "device" or value is None:
            continue
        cmd += ["--set", f"{name}={setting_text(value)}"]
    return [*cmd, *launch.launch_args(), "--json"]


class GroupRun:
    """One launched group: ``start``, iterate ``events()``, ``wait``, ``result``; ``stop`` from any thread."""

    def __init__(self, request: Any, launch: Any, *, python: str | None = None, env: dict[str, str] | None = None):
        self.request = request
        self.launch = launch
        self.run_dir = str(request.resume or request.out or paths.runs_dir() / new_run_id(request.task))
        self.command = group_command(request, launch, self.run_dir, python)
        self.env = env
        self.proc: subprocess.Popen[str] | None = None
        self.finished: Finished | None = None
        self.started: Started | None = None
        self._stdout: list[str] = []
        self._stderr: collections.deque[str] = collections.deque(maxlen=200)
        self._readers: list[threading.Thread] = []
        self._shown = set(launch.telemetry_indices)
        self._stopping = False
        self._word = ""  # the last pause/resume asked for; written into the control file once the run has started

    def start(self) -> None:
        env = dict(os.environ if self.env is None else self.env)
        env.setdefault("PYTHONUNBUFFERED", "1")
        log.info("starting a group of %d process(es): %s", self.launch.world_size, " ".join(self.command[1:]))
        self.proc = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, encoding="utf-8", errors="replace", env=env)  # fmt: skip
        for name, stream, sink in (("stdout", self.proc.stdout, self._stdout.append), ("stderr", self.proc.stderr, self._said)):
            reader = threading.Thread(target=self._read, args=(stream, sink), name=f"trainlab-group-{name}", daemon=True)
            reader.start()
            self._readers.append(reader)

    @staticmethod
    def _read(stream: Any, sink: Any) -> None:
        for line in stream:
            sink(line.rstrip("\n"))

    def _said(self, line: str) -> None:
        self._stderr.append(line)
        log.info("group: %s", line)

    # -- events ------------------------------------------------------------------
    def events(self) -> Iterator[Event]:
        """The run's events as rank 0 appends them to metrics.jsonl, until the launcher exits."""
        assert self.proc is not None
        tail = MetricsTail(RunDir(self.run_dir).metrics_jsonl)
        if self.request.resume:  # what the run wrote before is the session's history already
            try:
                tail.offset = tail.path.stat().st_size
            except OSError:
                pass
        while True:
            ended = self.proc.poll() is not None
            for event in tail.read_all():
                yield self.view(event)
            if ended:
                return
            try:
                self.proc.wait(POLL_SECONDS)
            except subprocess.TimeoutExpired:
                pass

    def view(self, event: Event) -> Event:
        """``event`` as the window shows it: a telemetry sample keeps the run's own GPUs (NVML numbers).
        Notes the run's ``Started`` and ``Finished`` on the way (``result`` falls back on them)."""
        if isinstance(event, Started):
            self.started = event
            if self._word == "pause":
                self._tell("pause")
        elif isinstance(event, Finished):
            self.finished = event
        elif isinstance(event, SystemSample) and self._shown and event.gpus:
            # rank 0 samples every GPU of the machine; the panel draws the run's own
            event = dataclasses.replace(event, gpus=tuple(g for g in event.gpus if g.get("index") in self._shown))
        return event

    # -- control -------------------------------------------------------------------
    def pause(self) -> None:
        """Every rank holds after the same step (rank 0 keeps writing telemetry); ``resume`` goes on."""
        self._word = "pause"
        if self.started is not None:
            self._tell("pause")

    def resume(self) -> None:
        was, self._word = self._word, "resume"
        if self.started is not None and was == "pause":
            self._tell("resume")

    def _tell(self, word: str) -> None:
        try:
            request(self.run_dir, word)
        except OSError as exc:  # the run folder went away (the run ended meanwhile): nothing to pause
            log.warning("could not %s the group: %s", word, exc)

    def stop(self, grace: float = STOP_GRACE_SECONDS) -> None:
        """Every rank stops after the same step and rank 0 keeps the last checkpoint; forced after ``grace``."""
        proc = self.proc
        if proc is None or proc.poll() is not None or self._stopping:
            return
        self._stopping = True
        family = descendants(proc.pid)  # as they are now: what must end with the launcher
        if sys.platform == "win32":
            # SIGTERM is TerminateProcess there, which would reach no rank: the
            # control file asks rank 0, and the ranks' agreement every rank.
            if self.started is None:  # rank 0 does not watch the file yet
                log.warning("Windows: the group has not started; ending its processes")
                kill_tree(proc.pid)
                return
            self._tell("stop")
        else:
            try:
                proc.send_signal(signal.SIGTERM)  # the launcher forwards it to torchrun, which tells every rank
            except ProcessLookupError:
                return

        def enforce() -> None:
            deadline = time.monotonic() + grace
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                log.warning("the group did not stop within %.0f s; killing its processes", grace)
                kill_tree(proc.pid)
            # a launcher that ended early (stopped before it passed the signal on) can leave torchrun behind
            left = wait_for_processes(family, max(1.0, deadline - time.monotonic()))
            for process in left:
                log.warning("killing process %s, left behind by the stopped group", process.pid)
                _kill(process)

        threading.Thread(target=enforce, name="trainlab-group-stop", daemon=True).start()

    def wait(self, timeout: float | None = None) -> int:
        assert self.proc is not None
        code = self.proc.wait(timeout)
        for reader in self._readers:
            reader.join(5)
        return code

    # -- the end -------------------------------------------------------------------
    def result(self, code: int) -> Any:
        """The launcher's outcome (rank 0's, with the failed rank named); else what metrics.jsonl and the exit code say."""
        said = self._outcome_json()
        if said is not None:
            said.setdefault("run_dir", self.run_dir if Path(self.run_dir).exists() else "")
            said.setdefault("task", self.request.task or (self.started.task if self.started else ""))
            said.setdefault("usage_error", code == EXIT_USAGE)
            if said.get("status") == RunStatus.FAILED and not said.get("traceback"):
                said["traceback"] = self.stderr_tail()
            return RunOutcome.from_json(said)
        if self.finished is not None:
            return RunOutcome.from_finished(self.finished)
        last = next((line for line in reversed(self._stderr) if line.strip()), "")
        return RunOutcome.not_started(
            task=self.request.task or "",
            run_dir=self.run_dir if Path(self.run_dir).exists() else "",
            status="cancelled" if code == EXIT_INTERRUPTED else "failed",
            error=f"the launcher ended with exit code {code}" + (f": {last}" if last else ""),
            usage_error=code == EXIT_USAGE,
            traceback=self.stderr_tail(),
        )

    def _outcome_json(self) -> dict[str, Any] | None:
        for line in reversed(self._stdout):
            if line.strip().startswith("{"):
                try:
                    data = json.loads(line)
                except ValueError:
                    continue
                if isinstance(data, dict):
                    return data
        return None

    def stderr_tail(self) -> str:
        return "\n".join(self._stderr)


def descendants(pid: int) -> list[Any]:
    """The processes ``pid`` started, and theirs (psutil's; empty without psutil)."""
    try:
        import psutil

        return psutil.Process(pid).children(recursive=True)
    except Exception:  # noqa: BLE001 - psutil missing, or the process is gone
        return []


def wait_for_processes(processes: list[Any], timeout: float) -> list[Any]:
    """Those of ``processes`` still alive after ``timeout`` seconds."""
    if not processes:
        return []
    import psutil

    return psutil.wait_procs(processes, timeout=timeout)[1]


def _kill(process: Any) -> None:
    try:
        process.kill()
    except Exception:  # noqa: BLE001 - already gone
        pass


def kill_tree(pid: int) -> None:
    """Kill ``pid`` and everything it started (torchrun and the ranks)."""
    family = descendants(pid)
    for process in family:
        _kill(process)
    try:
        os.kill(pid, signal.SIGKILL if hasattr(signal, "SIGKILL") else signal.SIGTERM)
    except OSError:
        pass
