"""The run folder's records as a run writes them: run.json, the index, metrics.jsonl.

``RunRecorder`` is the one owner of a run's record (what ``run.json`` holds):
the executor tells it what happened, it updates the record from the run state
at each evaluation and at the end, and writes run.json and the run index.
No callback, the executor included, mutates the record dict directly.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import os
import platform
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any, Mapping

from trainlab.api.callbacks import Callback, RunState
from trainlab.api.events import Event, Finished, Phase, Progress
from trainlab.api.params import engine_params
from trainlab.pluginhost.host import registry
from trainlab.runfolder.index import MetricsWriter, RunDir, RunStore, remember_run_folder
from trainlab.system.fileio import disk_full_message, is_disk_full
from trainlab.system.release import TRAINLAB_VERSION as __version__


def data_fingerprint(path: str) -> dict[str, Any]:
    """Cheap identity of the data: names, sizes and mtimes (not contents)."""
    target = Path(path)
    digest = hashlib.sha256()
    files = 0
    size = 0
    if target.is_file():
        stat = target.stat()
        digest.update(f"{target.name}|{stat.st_size}|{int(stat.st_mtime)}".encode())
        files, size = 1, stat.st_size
    elif target.is_dir():
        for root, dirs, names in os.walk(target):
            dirs.sort()
            for name in sorted(names):
                full = Path(root, name)
                try:
                    stat = full.stat()
                except OSError:
                    continue
                rel = full.relative_to(target).as_posix()
                digest.update(f"{rel}|{stat.st_size}|{int(stat.st_mtime)}\n".encode())
                files += 1
                size += stat.st_size
    return {"sha256": digest.hexdigest(), "files": files, "bytes": size}


def environment() -> dict[str, Any]:
    import torch

    gpus = []
    if torch.cuda.is_available():
        gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "hostname": socket.gethostname(),
        "trainlab": __version__,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": cudnn,
        "gpus": gpus,
        # the count this thread trains with: CPU results depend on it (device.set_training_threads)
        "torch_threads": torch.get_num_threads(),
    }


def open_store() -> RunStore | None:
    try:
        return RunStore()
    except Exception as exc:  # noqa: BLE001 - the index is a cache; the run folder is the record
        print(f"trainlab: run index unavailable ({exc}); the run folder is still written", file=sys.stderr)
        return None


class MetricsFileCallback(Callback):
    """Writes every event to metrics.jsonl; progress at most every few seconds.

    A write that fails (a full disk) fails the run, once, when it happens on
    the thread that runs the loop; on the telemetry sampler's thread, and
    for the run's last event, it is only remembered: the run's end must
    still be told.
    """

    PROGRESS_EVERY = 5.0

    def __init__(self, run_dir: RunDir):
        self.folder = run_dir.path
        self.writer = MetricsWriter(run_dir.metrics_jsonl)
        self._last_progress = 0.0
        self._loop_thread = threading.get_ident()
        self.failure: OSError | None = None

    def on_event(self, event: Event) -> None:
        if isinstance(event, Progress) and event.phase == Phase.TRAIN:
            if event.time - self._last_progress < self.PROGRESS_EVERY:
                return
            self._last_progress = event.time
        try:
            self.writer.write(event)
        except OSError as exc:
            first = self.failure is None
            self.failure = exc
            if first and threading.get_ident() == self._loop_thread and not isinstance(event, Finished):
                raise

    def on_run_end(self, state: RunState) -> None:
        self.writer.close()


def best_of(state: RunState) -> dict[str, Any]:
    """The record's ``best`` entry from the run state; empty before any evaluation."""
    if state.best_metric is None:
        return {}
    return {"metric": engine_params(state.params).monitor, "value": state.best_metric, "step": state.best_step}


def metric_declarations(task_id: str) -> dict[str, Any]:
    """What run.json says about the task's metrics, so that a run reads right
    without its plugin: ``family`` and ``declared_metrics`` (each metric's
    name, title, direction and display, as ``trainlab.Metric.to_json``)."""
    entry = registry().tasks.get(task_id)
    if entry is None:
        return {}
    return {"family": entry.spec.family, "declared_metrics": [m.to_json() for m in entry.spec.metric_specs()]}


class RunRecorder(Callback):
    """Owns the run record: updates it at each evaluation and at the end, writes run.json and the index.

    While the run runs, a small file of reserved space (``RESERVE``) sits in
    its folder; the end deletes it before writing run.json, so that a disk
    that filled meanwhile still takes the run's last word (run.json says
    ``failed``, not ``running``) and its last event.  A removal that fails
    (an I/O error) is tried again once run.json is written; a reserve that
    still cannot go is named on stderr rather than left unsaid.
    """

    RESERVE = ".trainlab-reserved-space"
    RESERVE_BYTES = 1 << 20

    def __init__(self, run_dir: RunDir, record: Mapping[str, Any], store: RunStore | None):
        self.run_dir = run_dir
        self.store = store
        self._record: dict[str, Any] = copy.deepcopy(dict(record))
        for key, value in metric_declarations(str(self._record.get("task", ""))).items():
            self._record.setdefault(key, value)  # a resumed run keeps what it was trained with

    @property
    def record(self) -> dict[str, Any]:
        """A copy of the record as last written."""
        return copy.deepcopy(self._record)

    # -- what the executor reports ----------------------------------------------
    def begin(self, *, resumed: bool) -> None:
        """The run starts (or resumes) in this process: status running, timings, environment."""
        record = self._record
        record.update(status="running", error="", pid=os.getpid(), environment=environment())
        record.setdefault("timings", {})["resumed" if resumed else "started"] = time.time()
        self.save()
        self._reserve_space()

    def _reserve_space(self) -> None:
        path = self.run_dir.path / self.RESERVE
        try:
            with open(path, "wb") as handle:
                handle.write(os.urandom(self.RESERVE_BYTES))  # not zeros: a compressing file system would store nothing
        except OSError:
            path.unlink(missing_ok=True)  # already full: the run's first checkpoint will say so

    def release_space(self) -> OSError | None:
        """Delete the reserve; the error that kept it, if one did."""
        try:
            (self.run_dir.path / self.RESERVE).unlink(missing_ok=True)
        except OSError as exc:
            return exc
        return None

    def add_train_seconds(self, seconds: float) -> None:
        timings = self._record.setdefault("timings", {})
        timings["train_seconds"] = timings.get("train_seconds", 0.0) + seconds

    def finish(
        self,
        state: RunState,
        *,
        status: str,
        error: str,
        traceback: str,
        epochs: int,
        steps: int,
        samples_per_second: float,
        skipped: Mapping[str, Any] | None = None,
        failure: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The run's end; returns its ``best`` entry (empty when it never evaluated).

        ``failure`` (plugin, task, method, exception) says whose code failed
        when a plugin's did; a resumed run that ends otherwise drops it."""
        record = self._record
        now = time.time()
        timings = record.setdefault("timings", {})
        timings["finished"] = now
        timings["duration"] = now - timings.get("started", now)
        record.update(status=status, error=error, traceback=traceback, metrics=copy.deepcopy(state.metrics), pid=None)
        if failure:
            record["failure"] = dict(failure)
        else:
            record.pop("failure", None)
        record["progress"] = {"epochs_completed": epochs, "steps": steps}
        best = best_of(state)
        if best:
            record["best"] = best
        if skipped:
            record["skipped_during_training"] = dict(skipped)
        record["samples_per_second"] = samples_per_second
        kept = self.release_space()
        try:
            self.run_dir.write(record)
        except OSError as exc:
            # run.json keeps what it said before ("running"): say so where
            # people look, and keep the index and the outcome honest.
            reason = disk_full_message(self.run_dir.path) if is_disk_full(exc) else (exc.strerror or str(exc))
            note = f"{self.run_dir.run_json} could not be written ({reason})"
            record["error"] = f"{error}; {note}" if error else note
            print(f"trainlab: {note}; the run ended {status}" + (f": {error}" if error else ""), file=sys.stderr)
        self._index()
        if kept is not None and (kept := self.release_space()) is not None:
            reserve, reason = self.run_dir.path / self.RESERVE, kept.strerror or str(kept)
            print(f"trainlab: {reserve} could not be removed ({reason}); it kept space free while the run ran, "
                  "and can be deleted", file=sys.stderr)  # fmt: skip
        return copy.deepcopy(record.get("best", {}))

    @property
    def error(self) -> str:
        """The record's error as last set (with a note when run.json could not be written)."""
        return str(self._record.get("error") or "")

    # -- the callback -------------------------------------------------------------
    def on_eval_end(self, state: RunState, result) -> None:
        self._record["progress"] = {"epochs_completed": result.epoch, "steps": state.step}
        best = best_of(state)
        if best:
            self._record["best"] = best
        self.save()

    def save(self) -> None:
        self.run_dir.write(self._record)
        self._index()

    def _index(self) -> None:
        if self.store is None:
            # It could not be opened when the run began (a full disk, an I/O error): try again, and
            # meanwhile note the folder where the next listing looks, so the run is listed all the same.
            remember_run_folder(self.run_dir.path)
            with contextlib.suppress(Exception):
                self.store = RunStore()
        if self.store is not None:
            try:
                self.store.record(self._record, self.run_dir.path)
            except Exception as exc:  # noqa: BLE001 - the index is a cache; never fail a run over it
                print(f"trainlab: could not update the run index: {exc}", file=sys.stderr)
