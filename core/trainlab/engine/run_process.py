"""A run in another process: one child process, or a group of them through torchrun.

``RunProcess`` is how the window, the queue, the sweep and ``trainlab train
--isolated`` run training outside their own process, so that a crash there (a
native one included) cannot take them down.  Two shapes, one interface
(``start``, ``events``, ``pause``/``resume``/``stop``, ``wait``,
``result``, or ``run`` for all of it):

* one process: ``python -m trainlab.engine.child_main``, the ``RunRequest``
  as one JSON line on its stdin; its events come back as JSON lines on its
  stdout, and ``pause``, ``resume`` and ``stop`` are words written to its
  stdin.  End of stdin (the parent died) stops the run.
* a group (``launch_args`` such as ``--gpus 0,2`` or ``--nproc-per-node 2
  --device cpu``): ``python -m trainlab train TASK --data PATH --set k=v ...
  --out RUN_DIR LAUNCH_ARGS --json``, an argument list, never a shell, its
  values written by the one ``--set`` formatter (``trainlab.api.assignments``).
  The CLI's launcher starts torchrun, which starts the ranks.  Rank 0 alone
  writes the run folder, so the events are read where every follower reads
  them, ``metrics.jsonl`` through ``MetricsTail``; the launcher's one JSON
  object on stdout is the outcome (rank 0's, naming the rank that failed
  first when one did).  ``pause``, ``resume`` and ``stop`` are words written
  into the run folder's ``control`` file (``distributed_control``), which rank
  0 watches once it has started; the ranks agree to act after the same step.

Stop is a request the run reads, on every platform (on Windows a signal would
be ``TerminateProcess``, which reaches no rank): the run stops after its
current step, keeps its last checkpoint and ends ``cancelled``.  Only a group
that has not started yet (rank 0 does not watch its file) gets SIGTERM, which
the launcher passes on to torchrun and every rank (on Windows: its processes
are ended).  A run that has not ended ``grace`` seconds later is killed,
process tree and all: the last resort.

No Qt here: the window's ``TrainingWorker`` runs this in its thread.
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
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from trainlab.api.assignments import set_arguments
from trainlab.api.callbacks import RunControl
from trainlab.api.events import Event, Finished, Started, SystemSample
from trainlab.engine.distributed_control import request as write_control_word
from trainlab.engine.outcome import EXIT_INTERRUPTED, EXIT_USAGE, RunOutcome
from trainlab.engine.plugin_calls import FAILURE_PREFIX
from trainlab.runfolder.index import RunDir, new_run_id
from trainlab.runfolder.status import RunStatus
from trainlab.runfolder.tail import MetricsTail, parse_event_line
from trainlab.system import paths

log = logging.getLogger("trainlab.run_process")

POLL_SECONDS = 0.2  # how often a group's metrics.jsonl is read (the plots' own refresh is 20 Hz), and a control relayed
CHILD_STOP_GRACE_SECONDS = 60.0
# The launcher gives torchrun's ranks 60 s (trainlab.engine.torchrun.SHUTDOWN_SECONDS) to honour SIGTERM; past that
# and a little more, what is left of a group is killed rather than left behind.
GROUP_STOP_GRACE_SECONDS = 90.0
STDERR_LINES = 200


def run_command(request: Any, launch_args: Sequence[str], run_dir: str, python: str | None = None) -> list[str]:
    """``trainlab train ... LAUNCH_ARGS --json`` for ``request`` (a ``RunRequest``), writing into ``run_dir``.

    The window's remembered values and the explicit ones both go in as
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
    return [*cmd, *set_arguments(values, skip=("device",)), *launch_args, "--json"]


class RunProcess:
    """One run in another process; ``pause``, ``resume`` and ``stop`` from any thread.

    ``launch_args`` empty: one child process; else a group launched with
    them.  ``shown_gpus``: the GPUs (NVML numbers) a group's telemetry keeps
    (rank 0 samples every GPU of the machine).  ``echo_stderr``: the child's
    stderr also goes to this process's (the queue's log file).
    """

    def __init__(
        self,
        request: Any,
        *,
        launch_args: Sequence[str] = (),
        shown_gpus: Iterable[int] = (),
        python: str | None = None,
        env: dict[str, str] | None = None,
        grace: float | None = None,
        echo_stderr: bool = False,
    ):
        self.request = request
        self.launch_args = list(launch_args)
        self.group = bool(self.launch_args)
        self.env = env
        self.echo_stderr = echo_stderr
        self.grace = grace if grace is not None else (GROUP_STOP_GRACE_SECONDS if self.group else CHILD_STOP_GRACE_SECONDS)
        python = python or sys.executable
        if self.group:  # known before the start: the command names it
            self.run_dir = str(request.resume or request.out or paths.runs_dir() / new_run_id(request.task))
            self.command = run_command(request, self.launch_args, self.run_dir, python)
        else:  # the child says, in its Started event
            self.run_dir = ""
            self.command = [python, "-m", "trainlab.engine.child_main"]
        self.proc: subprocess.Popen[str] | None = None
        self.started: Started | None = None
        self.finished: Finished | None = None
        self._shown = set(shown_gpus)
        self._stdout: list[str] = []  # a group's: the launcher's outcome
        self._stderr: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self._readers: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._held = ""  # a pause asked for before the run can hear it
        self._stopping = False

    # -- start ----------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    @property
    def task(self) -> str:
        return self.started.task if self.started is not None else str(self.request.task or "")

    def start(self) -> None:
        """Start the process; nothing when a stop was asked for before (the run then ends ``cancelled``, never begun)."""
        env = dict(os.environ if self.env is None else self.env)
        env.setdefault("PYTHONUNBUFFERED", "1")
        if self.group:
            log.info("starting a group: %s", " ".join(self.command[1:]))
        with self._lock:
            if self._stopping or self.proc is not None:
                return
            self.proc = subprocess.Popen(
                self.command,
                stdin=subprocess.DEVNULL if self.group else subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                encoding="utf-8",
                errors="replace",
                bufsize=1,
                env=env,
            )
            if not self.group:  # the request first, then a pause asked for meanwhile: nothing can come between
                self._write(json.dumps(self.request.to_json(), default=str))
                if self._held:
                    self._write(self._held)
        streams = [("stderr", self.proc.stderr, self._said)]
        if self.group:
            streams.append(("stdout", self.proc.stdout, self._stdout.append))
        for name, stream, sink in streams:
            reader = threading.Thread(target=_read_lines, args=(stream, sink), name=f"trainlab-run-{name}", daemon=True)
            reader.start()
            self._readers.append(reader)

    def _said(self, line: str) -> None:
        self._stderr.append(line)
        log.info("child: %s", line)
        if self.echo_stderr:
            print(line, file=sys.stderr, flush=True)

    # -- events ---------------------------------------------------------------------
    def events(self) -> Iterator[Event]:
        """The run's events as they happen, until the process ends."""
        if self.proc is None:  # stopped before it started
            return
        source = self._group_events() if self.group else self._child_events()
        for event in source:
            yield self.view(event)

    def _child_events(self) -> Iterator[Event]:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = parse_event_line(line)
            except ValueError:
                log.warning("the child printed a line that is not an event: %r", line[:200])
                continue
            if event is not None:
                yield event

    def _group_events(self) -> Iterator[Event]:
        assert self.proc is not None
        tail = MetricsTail(RunDir(self.run_dir).metrics_jsonl)
        if self.request.resume:  # what the run wrote before is history already
            try:
                tail.offset = tail.path.stat().st_size
            except OSError:
                pass
        while True:
            ended = self.proc.poll() is not None
            yield from tail.read_all()
            if ended:
                return
            try:
                self.proc.wait(POLL_SECONDS)
            except subprocess.TimeoutExpired:
                pass

    def view(self, event: Event) -> Event:
        """``event`` as a follower shows it: a group's telemetry keeps the run's own GPUs.
        Notes the run's ``Started`` and ``Finished`` on the way (``result`` falls back on them)."""
        if isinstance(event, Started):
            self.started = event
            self.run_dir = self.run_dir or event.run_dir
            if self.group and self._held:  # rank 0 watches its control file now
                self._tell(self._held)
        elif isinstance(event, Finished):
            self.finished = event
        elif isinstance(event, SystemSample) and self._shown and event.gpus:
            event = dataclasses.replace(event, gpus=tuple(g for g in event.gpus if g.get("index") in self._shown))
        return event

    # -- control ----------------------------------------------------------------------
    def pause(self) -> None:
        """The run holds after its current step (a group's ranks after the same one); ``resume`` goes on."""
        self._word("pause")

    def resume(self) -> None:
        self._word("resume")

    def _word(self, word: str) -> None:
        was, self._held = self._held, ("pause" if word == "pause" else "")
        if not self._hears():
            return  # a pause is said once the run can hear it; a resume then has nothing to undo
        if word == "pause" or was == "pause" or not self.group:
            self._tell(word)

    def _hears(self) -> bool:
        if self.proc is None:
            return False
        return self.started is not None if self.group else True

    def _tell(self, word: str) -> None:
        if not self.group:
            self._send(word)
            return
        try:
            write_control_word(self.run_dir, word)
        except OSError as exc:  # the run folder went away (the run ended meanwhile)
            log.warning("could not %s the group: %s", word, exc)

    def _send(self, line: str) -> None:
        with self._lock:
            self._write(line)

    def _write(self, line: str) -> None:
        if self.proc is None or self.proc.stdin is None:
            return
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass

    @property
    def stopping(self) -> bool:
        return self._stopping

    def stop(self, grace: float | None = None) -> None:
        """Ask the run to stop after its current step, keeping its checkpoint; killed ``grace`` s later if it has not ended."""
        with self._lock:
            proc = self.proc
            if self._stopping or (proc is not None and proc.poll() is not None):
                return
            self._stopping = True
        if proc is None:
            return  # not started: the caller starts nothing more
        grace = self.grace if grace is None else grace
        family = descendants(proc.pid) if self.group else []  # as they are now: what must end with the launcher
        if self._hears():
            self._tell("stop")  # read by the run itself: stdin, or rank 0's control file
        elif sys.platform == "win32":
            log.warning("the group has not started; ending its processes")
            kill_tree(proc.pid)
            return
        else:
            try:
                proc.send_signal(signal.SIGTERM)  # the launcher forwards it to torchrun, which tells every rank
            except ProcessLookupError:
                return
        threading.Thread(target=self._enforce, args=(proc, grace, family), name="trainlab-run-stop", daemon=True).start()

    def _enforce(self, proc: subprocess.Popen[str], grace: float, family: list[Any]) -> None:
        deadline = time.monotonic() + grace
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            log.warning("the run did not stop within %.0f s; killing its processes", grace)
            kill_tree(proc.pid)
        # a launcher that ended early can leave torchrun or a rank behind
        for process in wait_for_processes(family, max(1.0, deadline - time.monotonic())):
            log.warning("killing process %s, left behind by the stopped run", process.pid)
            _kill(process)

    def kill(self) -> None:
        """End the run now, process tree and all (no checkpoint is written)."""
        if self.proc is not None and self.proc.poll() is None:
            kill_tree(self.proc.pid)

    # -- the end ------------------------------------------------------------------------
    def wait(self, timeout: float | None = None) -> int:
        if self.proc is None:  # stopped before it started
            return EXIT_INTERRUPTED
        code = self.proc.wait(timeout)
        for reader in self._readers:
            reader.join(5)
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        return code

    @property
    def returncode(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def run(self, on_event: Callable[[Event], None] | None = None, control: RunControl | None = None) -> RunOutcome:
        """Start, follow, wait: the outcome.  ``control`` is relayed: its stop and pause reach the run."""
        if self.proc is None:
            self.start()
        done = threading.Event()
        if control is not None:
            threading.Thread(target=self._relay, args=(control, done), name="trainlab-run-relay", daemon=True).start()
        try:
            for event in self.events():
                if on_event is not None:
                    on_event(event)
            return self.result(self.wait())
        finally:
            done.set()

    def _relay(self, control: RunControl, done: threading.Event) -> None:
        paused = False
        while not done.wait(POLL_SECONDS):
            if control.stop_requested:
                self.stop()
                return
            if control.paused != paused:
                paused = control.paused
                self.pause() if paused else self.resume()

    def result(self, code: int) -> RunOutcome:
        """The run's outcome: the one the run reported or, without one, how its process ended."""
        said = self._outcome_json() if self.group else None
        if said is not None:
            said.setdefault("run_dir", self.run_dir if Path(self.run_dir).exists() else "")
            said.setdefault("task", self.task)
            said.setdefault("usage_error", code == EXIT_USAGE)
            if said.get("status") == RunStatus.FAILED and not said.get("traceback"):
                said["traceback"] = self.stderr_tail()
            return RunOutcome.from_json(said)
        if self.finished is not None:
            return RunOutcome.from_finished(self.finished)
        if self.proc is None:
            return RunOutcome.not_started(task=self.task, status=RunStatus.CANCELLED, error="stopped before the run started")
        reason = self.error_message()
        error = f"the training process ended with exit code {code} before finishing"
        if reason:
            error = reason if code in (EXIT_USAGE, EXIT_INTERRUPTED) and not self.group else f"{error}: {reason}"
        return RunOutcome.not_started(
            task=self.task,
            run_dir=self.run_dir if self.run_dir and Path(self.run_dir).exists() else "",
            status=RunStatus.CANCELLED if code == EXIT_INTERRUPTED else RunStatus.FAILED,
            error=error,
            usage_error=code == EXIT_USAGE,
            traceback=self.stderr_tail(),
            failure=self.failure(),
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


def _read_lines(stream: Any, sink: Callable[[str], None]) -> None:
    for line in stream:
        sink(line.rstrip("\n"))


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
    """Kill ``pid`` and everything it started (torchrun and the ranks, a child's data workers)."""
    for process in descendants(pid):
        _kill(process)
    try:
        os.kill(pid, signal.SIGKILL if hasattr(signal, "SIGKILL") else signal.SIGTERM)
    except OSError:
        pass
