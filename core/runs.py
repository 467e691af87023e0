"""Run folders and the run index.

A run folder is readable without TrainLab (CONTRACT.md "Run directory").  The
index is a SQLite database under the user data dir; it is a cache of what the
folders say, so a run placed anywhere with ``--out`` is still listed.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import sqlite3
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator, Mapping

from trainlab import paths
from trainlab.api import UsageError
from trainlab.events import Event
from trainlab.fileio import atomic_write_json
from trainlab.records import RUN_SCHEMA_VERSION, EvalRecord, RunFileError, RunRecord, read_json_object, run_title
from trainlab.status import FAILED, INTERRUPTED_ERROR, RUNNING
from trainlab.tail import MetricsTail

__all__ = ["RUN_SCHEMA_VERSION", "MetricsWriter", "RunDir", "RunFileError", "RunStore", "new_run_id"]
NETWORK_FILESYSTEMS = {"nfs", "nfs4", "cifs", "smbfs", "smb3", "sshfs", "fuse.sshfs", "9p", "afs", "ceph", "glusterfs", "lustre"}


def new_run_id(task: str) -> str:
    return f"{datetime.now().strftime('%Y%m%d-%H%M%S')}-{task}-{secrets.token_hex(2)}"


class RunDir:
    """Paths and files of one run folder: the one reader (and writer) of it.

    ``read_record()`` and ``read_eval()`` give typed records
    (``trainlab.records``), ``events()`` and ``tail()`` read ``metrics.jsonl``
    through the one tolerant tail (``trainlab.tail``), ``title()`` is what the
    run is called.  A file that is there but unusable raises ``RunFileError``
    (a ``UsageError``) naming it.
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path).expanduser().resolve()

    run_json = property(lambda self: self.path / "run.json")
    metrics_jsonl = property(lambda self: self.path / "metrics.jsonl")
    checkpoints = property(lambda self: self.path / "checkpoints")
    model_dir = property(lambda self: self.path / "model")
    eval_json = property(lambda self: self.path / "eval.json")
    last_checkpoint = property(lambda self: self.checkpoints / "last.safetensors")
    best_checkpoint = property(lambda self: self.checkpoints / "best.safetensors")

    def exists(self) -> bool:
        return self.run_json.is_file()

    # -- run.json ---------------------------------------------------------------
    def read(self) -> dict[str, Any]:
        """``run.json`` as a plain dict (scripts, and the engine until it writes records)."""
        try:
            return read_json_object(self.run_json)
        except FileNotFoundError:
            raise RunFileError(
                self.run_json, "not found", f"{self.path} is not a TrainLab run folder (no run.json)"
            ) from None

    def read_record(self) -> RunRecord:
        return RunRecord.from_json(self.read(), self.run_json)

    def write(self, record: RunRecord | Mapping[str, Any]) -> None:
        data = record.to_json() if isinstance(record, RunRecord) else dict(record)
        atomic_write_json(self.run_json, data)

    def update(self, **changes: Any) -> dict[str, Any]:
        data = self.read()
        data.update(changes)
        self.write(data)
        return data

    def title(self) -> str:
        """The run's name, else its id, else its folder's name (also when run.json is unreadable)."""
        try:
            record = self.read_record()
        except UsageError:
            return self.path.name
        return run_title(record.name, record.id, self.path)

    # -- evaluations --------------------------------------------------------------
    def eval_files(self) -> list[Path]:
        """``eval.json`` (the run's own), then the ``eval-<time>.json`` of ``trainlab eval``, oldest first."""
        own = [self.eval_json] if self.eval_json.is_file() else []
        return own + sorted(p for p in self.path.glob("eval-*.json") if p.is_file())

    def read_eval(self, file: str | os.PathLike[str] | None = None) -> EvalRecord | None:
        """``eval.json`` (or ``file``, a name in this folder or a path); None when it is not there."""
        path = self.eval_json if file is None else self.path / file
        try:
            return EvalRecord.from_json(read_json_object(path), path)
        except FileNotFoundError:
            return None

    # -- metrics.jsonl ------------------------------------------------------------
    def tail(self) -> MetricsTail:
        """A tail of ``metrics.jsonl`` from its start (follow it with ``read_new``)."""
        return MetricsTail(self.metrics_jsonl)

    def events(self) -> Iterator[Event]:
        """Every event written so far; damaged lines and a half-written last line are skipped."""
        return iter(self.tail().read_all())


class MetricsWriter:
    """The one writer of ``metrics.jsonl``: appends a line per event, flushed."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._handle = open(self.path, "a", encoding="utf-8")

    def write(self, event: Event) -> None:
        line = event.to_json() + "\n"
        with self._lock:
            if self._handle.closed:
                return
            self._handle.write(line)
            self._handle.flush()

    def close(self) -> None:
        with self._lock:
            if not self._handle.closed:
                self._handle.flush()
                with contextlib.suppress(OSError):
                    os.fsync(self._handle.fileno())
                self._handle.close()


def _process_start(pid: int) -> float | None:
    try:
        import psutil

        return psutil.Process(pid).create_time()
    except Exception:  # noqa: BLE001 - gone, or not ours to see
        return None


def _on_network_fs(path: Path) -> bool:
    try:
        import psutil

        best = None
        target = str(path.resolve())
        for part in psutil.disk_partitions(all=True):
            if target.startswith(part.mountpoint) and (best is None or len(part.mountpoint) > len(best.mountpoint)):
                best = part
        return best is not None and best.fstype.lower() in NETWORK_FILESYSTEMS
    except Exception:  # noqa: BLE001
        return False


class RunStore:
    """The SQLite run index (WAL where the filesystem supports it)."""

    COLUMNS = ("id", "run_dir", "name", "task", "status", "started", "finished", "duration", "best_metric", "monitor", "pid", "host", "proc_start", "updated", "error")

    def __init__(self, db_path: Path | None = None):
        self.db_path = Path(db_path) if db_path else paths.index_path()
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        self.journal_mode = "delete" if _on_network_fs(self.db_path.parent) else "wal"
        with self._connect() as db:
            mode = db.execute(f"PRAGMA journal_mode={self.journal_mode}").fetchone()[0]
            self.journal_mode = str(mode).lower()
            db.execute(
                """CREATE TABLE IF NOT EXISTS runs (
                    id TEXT PRIMARY KEY, run_dir TEXT UNIQUE NOT NULL, name TEXT, task TEXT,
                    status TEXT, started REAL, finished REAL, duration REAL, best_metric REAL,
                    monitor TEXT, pid INTEGER, host TEXT, proc_start REAL, updated REAL, error TEXT)"""
            )
            # Indexes written before the error column (it tells an interrupted run
            # from a failed one without opening every run.json).
            present = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
            if "error" not in present:
                try:
                    db.execute("ALTER TABLE runs ADD COLUMN error TEXT")
                except sqlite3.OperationalError as exc:  # another process added it meanwhile
                    if "duplicate column" not in str(exc):
                        raise

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.db_path, timeout=15)
        db.row_factory = sqlite3.Row
        try:
            with db:
                yield db
        finally:
            db.close()

    def record(self, run: RunRecord | Mapping[str, Any], run_dir: Path) -> None:
        """Insert or update a run from its run.json content."""
        if isinstance(run, RunRecord):
            run = run.to_json()
        pid = os.getpid() if run.get("status") == "running" else None
        row = {
            "id": run["id"],
            "run_dir": str(run_dir),
            "name": run.get("name") or "",
            "task": run.get("task"),
            "status": run.get("status"),
            "started": run.get("timings", {}).get("started"),
            "finished": run.get("timings", {}).get("finished"),
            "duration": run.get("timings", {}).get("duration"),
            "best_metric": run.get("best", {}).get("value"),
            "monitor": run.get("best", {}).get("metric"),
            "pid": pid,
            "host": socket.gethostname(),
            "proc_start": _process_start(pid) if pid else None,
            "updated": time.time(),
            "error": str(run.get("error") or "")[:500],
        }
        cols = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        updates = ", ".join(f"{k}=excluded.{k}" for k in row if k != "id")
        with self._connect() as db:
            db.execute("DELETE FROM runs WHERE run_dir=? AND id<>?", (row["run_dir"], row["id"]))
            db.execute(f"INSERT INTO runs ({cols}) VALUES ({marks}) ON CONFLICT(id) DO UPDATE SET {updates}", list(row.values()))

    def list(self, reconcile: bool = True) -> list[dict[str, Any]]:
        if reconcile:
            self.reconcile()
        with self._connect() as db:
            rows = db.execute("SELECT * FROM runs ORDER BY started DESC").fetchall()
        return [dict(r) for r in rows]

    def get(self, run_id_or_dir: str) -> dict[str, Any] | None:
        with self._connect() as db:
            row = db.execute(
                "SELECT * FROM runs WHERE id=? OR run_dir=?", (run_id_or_dir, str(Path(run_id_or_dir).expanduser().resolve()))
            ).fetchone()
        return dict(row) if row else None

    def reconcile(self) -> int:
        """Mark runs whose process is gone as failed (interrupted); returns how many."""
        host = socket.gethostname()
        stale = []
        with self._connect() as db:
            for row in db.execute("SELECT * FROM runs WHERE status='running'").fetchall():
                if row["host"] != host or not row["pid"]:
                    continue
                start = _process_start(row["pid"])
                if start is None or (row["proc_start"] and abs(start - row["proc_start"]) > 1.0):
                    stale.append(dict(row))
        for row in stale:
            run_dir = RunDir(row["run_dir"])
            with contextlib.suppress(UsageError, OSError):
                data = run_dir.read()
                if data.get("status") == RUNNING:
                    data.update(status=FAILED, error=INTERRUPTED_ERROR)
                    run_dir.write(data)
            with self._connect() as db:
                db.execute(
                    "UPDATE runs SET status=?, error=?, pid=NULL, updated=? WHERE id=?",
                    (FAILED, INTERRUPTED_ERROR, time.time(), row["id"]),
                )
        return len(stale)

    def rename(self, run_id: str, name: str) -> None:
        row = self.get(run_id)
        if row is None:
            raise UsageError(f"no run {run_id!r} in the index")
        with contextlib.suppress(UsageError, OSError):
            RunDir(row["run_dir"]).update(name=name)
        with self._connect() as db:
            db.execute("UPDATE runs SET name=?, updated=? WHERE id=?", (name, time.time(), row["id"]))

    def delete(self, run_id: str, remove_files: bool = True) -> None:
        row = self.get(run_id)
        if row is None:
            raise UsageError(f"no run {run_id!r} in the index")
        if row["status"] == "running" and _process_start(row["pid"] or -1) is not None:
            raise UsageError(f"run {row['id']} is still running; stop it first")
        run_dir = Path(row["run_dir"])
        if remove_files and (run_dir / "run.json").is_file():
            shutil.rmtree(run_dir, ignore_errors=True)
        with self._connect() as db:
            db.execute("DELETE FROM runs WHERE id=?", (row["id"],))
