"""Run folders and the run index.

A run folder is readable without TrainLab (CONTRACT.md "Run directory").  The
index is a SQLite database under the user data dir; it is a cache of what the
folders say, so a run placed anywhere with ``--out`` is still listed.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import shutil
import socket
import sqlite3
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from trainlab.api.errors import UsageError
from trainlab.api.events import Event
from trainlab.runfolder.eval_report import EvalRecord
from trainlab.runfolder.records import RUN_SCHEMA_VERSION, RunFileError, RunRecord, read_json_object, run_title
from trainlab.runfolder.status import DAMAGED, FAILED, FINISHED, INTERRUPTED_ERROR, RUNNING
from trainlab.runfolder.tail import MetricsTail
from trainlab.system import paths
from trainlab.system.fileio import atomic_write_json, disk_full_message, folder_write_problem, free_bytes, is_disk_full

__all__ = ["RUN_SCHEMA_VERSION", "IndexUnavailable", "MetricsWriter", "RunDir", "RunFileError", "RunStore", "new_run_id", "remember_run_folder"]
NETWORK_FILESYSTEMS = {"nfs", "nfs4", "cifs", "smbfs", "smb3", "sshfs", "fuse.sshfs", "9p", "afs", "ceph", "glusterfs", "lustre"}


def new_run_id(task: str) -> str:
    return f"{datetime.now().strftime('%Y%m%d-%H%M%S')}-{task}-{secrets.token_hex(2)}"


class RunDir:
    """Paths and files of one run folder: the one reader (and writer) of it.

    ``read_record()`` and ``read_eval()`` give typed records
    (``trainlab.runfolder.records``), ``events()`` and ``tail()`` read ``metrics.jsonl``
    through the one tolerant tail (``trainlab.runfolder.tail``), ``title()`` is what the
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
        """``run.json`` as a plain dict (scripts, and the engine until it writes records).

        Its fields are checked as ``read_record`` checks them: a value of the
        wrong type (``"task": 5``) is a ``RunFileError`` naming the file and
        the key, never a run that is then looked up as task 5.
        """
        try:
            data = read_json_object(self.run_json)
        except FileNotFoundError:
            raise RunFileError(
                self.run_json, "not found", f"{self.path} is not a TrainLab run folder (no run.json)"
            ) from None
        RunRecord.from_json(data, self.run_json)
        return data

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
    """The one writer of ``metrics.jsonl``: appends a line per event, as it happens.

    One ``write`` system call per line on an append-only descriptor, no
    buffer: a line that fails (a full disk) is not kept to be written again
    later in the middle of the next one.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0)
        self._fd: int | None = os.open(self.path, flags, 0o666)

    def write(self, event: Event) -> None:
        data = (event.to_json() + "\n").encode("utf-8")
        with self._lock:
            if self._fd is None:
                return
            view = memoryview(data)
            try:
                while view:
                    written = os.write(self._fd, view)
                    view = view[written:]
            except OSError as exc:  # os.write does not say which file
                raise OSError(exc.errno, exc.strerror, str(self.path)) from None

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                with contextlib.suppress(OSError):
                    os.fsync(self._fd)
                os.close(self._fd)
                self._fd = None


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


# Less free than this and SQLite's "disk I/O error" is the disk being full
# (the WAL's -shm file alone takes 32 kB).
_NEARLY_FULL = 1_000_000


class IndexUnavailable(UsageError):
    """The run index cannot be opened or read (a read-only or full disk); the message names the file."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"run index {self.path} cannot be used: {reason}")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(getattr(exc, "strerror", None) or exc).split()) or type(exc).__name__


def _signature(run_json: Path) -> str | None:
    """``run.json``'s size and modification time, as the index last read it (None: not there)."""
    try:
        stat = run_json.stat()
    except (OSError, ValueError):  # ValueError: a listed folder whose name holds a NUL is no file either
        return None
    return f"{stat.st_size}:{stat.st_mtime_ns}"


# What SQLite raises on an index file: its own errors, and UnicodeDecodeError
# when a damaged file's schema or error message is not UTF-8.
DATABASE_ERRORS = (sqlite3.DatabaseError, UnicodeDecodeError)


def _is_damage(exc: BaseException) -> bool:
    """An index file that is not a usable database (garbage, truncated), as opposed to one that cannot be written."""
    if isinstance(exc, UnicodeDecodeError):
        return True
    name = getattr(exc, "sqlite_errorname", "")
    text = str(exc).lower()
    return name in ("SQLITE_NOTADB", "SQLITE_CORRUPT") or "not a database" in text or "malformed" in text


def remember_run_folder(run_dir: Path | str, db_path: Path | None = None) -> bool:
    """Note a run folder outside ``runs/`` (``--out``) in ``other-run-folders.txt`` beside the index.

    Also without the index: a run that could not open it (a full disk, an I/O
    error) is still found, and indexed, by the next listing.  Returns whether
    the folder is noted (or needs no note); never raises.  A note that could not
    be written is tried again at the run's next save, and by every listing
    while the index holds the run (``RunStore.sync_folders``).
    """
    db_path = Path(db_path) if db_path else paths.index_path()
    folder = str(Path(run_dir).expanduser().resolve())
    if Path(folder).parent == (db_path.parent / "runs").resolve():
        return True
    listed = db_path.parent / RunStore.OTHER_FOLDERS
    try:
        text = listed.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        text = ""
    if folder in (line.strip() for line in text.splitlines()):
        return True
    line = folder + "\n"
    if text and not text.endswith("\n"):
        line = "\n" + line  # after a line a full disk cut short: this one on a line of its own
    data = line.encode("utf-8", "surrogateescape")
    try:
        fd = os.open(listed, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            written = os.write(fd, data)  # one append: safe beside other writers
        finally:
            os.close(fd)
    except OSError:
        return False  # a cache of a cache: the run is still indexed, or its folder is all there is
    return written == len(data)  # a write cut short (a disk that filled): noted at the next try


class RunStore:
    """The SQLite run index (WAL where the filesystem supports it): a cache of the run folders.

    Every run folder under ``runs/`` beside the index, and every ``--out``
    folder it was told of (``other-run-folders.txt`` beside it, one path a
    line, so that a rebuild finds them), is listed: ``list()`` adds the
    folders it does not know yet, so a deleted index, or one set aside
    because it was damaged (``index.sqlite3.damaged``), is rebuilt from the
    folders.  ``notes`` says what opening it did.  An index that cannot be
    opened at all (a read-only or full disk) raises ``IndexUnavailable``.
    """

    COLUMNS = ("id", "run_dir", "name", "task", "status", "started", "finished", "duration", "best_metric", "monitor", "pid", "host", "proc_start", "updated", "error", "run_json")
    OTHER_FOLDERS = "other-run-folders.txt"

    def __init__(self, db_path: Path | None = None, *, read_only_when_full: bool = False):
        self.db_path = Path(db_path) if db_path else paths.index_path()
        self.runs_folder = self.db_path.parent / "runs"
        self.other_folders_file = self.db_path.parent / self.OTHER_FOLDERS
        self.notes: list[str] = []
        self._other_folders: set[str] | None = None
        # A listing on a full disk: the runs are read from their folders
        # (``read_only`` then says so), since the index can be neither opened
        # nor updated (SQLite's WAL needs its -shm file: "disk I/O error").
        self.read_only_when_full = read_only_when_full
        self.read_only = False
        try:
            self.db_path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise IndexUnavailable(self.db_path, f"its folder cannot be created ({_one_line(exc)})") from None
        self.journal_mode = "delete" if _on_network_fs(self.db_path.parent) else "wal"
        try:
            self._create()
        except DATABASE_ERRORS as exc:
            if not _is_damage(exc) and self._read_only_on_a_full_disk(exc):
                return
            if not _is_damage(exc):
                problem = folder_write_problem(self.db_path.parent)  # sqlite says only "unable to open database file"
                raise IndexUnavailable(self.db_path, _one_line(exc) + (f" ({problem})" if problem else "")) from None
            self._replace_damaged(exc)

    def _read_only_on_a_full_disk(self, exc: BaseException) -> bool:
        """Whether to list from the folders: a listing, on a disk that is full. Says so in ``notes``."""
        if not self.read_only_when_full:
            return False
        free = free_bytes(self.db_path.parent)
        if not (is_disk_full(exc) or (free is not None and free < _NEARLY_FULL)):
            return False
        if not self.read_only:
            self.read_only = True
            self.notes.append(
                f"the run index {self.db_path} cannot be used ({_one_line(exc)}): "
                f"{disk_full_message(self.db_path.parent)}; the runs are listed read-only from their folders"
            )
        return True

    def _folder_rows(self) -> list[dict[str, Any]]:
        """The index's rows as the run folders say them (the read-only listing), newest first."""
        rows: list[dict[str, Any]] = []
        seen: set[str] = set()
        for folder in self.run_folders():
            run_dir = RunDir(folder)
            try:
                data = run_dir.read()
                run_id = data.get("id") or run_dir.path.name
                timings, best = data.get("timings") or {}, data.get("best") or {}
                if not isinstance(run_id, str) or run_id in seen or not isinstance(timings, dict) or not isinstance(best, dict):
                    continue
            except (UsageError, OSError, TypeError, ValueError, AttributeError):
                continue
            seen.add(run_id)
            rows.append(
                {
                    "id": run_id, "run_dir": str(run_dir.path), "name": data.get("name") or "", "task": data.get("task"),
                    "status": data.get("status"), "started": timings.get("started"), "finished": timings.get("finished"),
                    "duration": timings.get("duration"), "best_metric": best.get("value"), "monitor": best.get("metric"),
                    "pid": None, "host": None, "proc_start": None, "updated": None, "error": str(data.get("error") or "")[:500],
                }
            )  # fmt: skip
        rows.sort(key=lambda r: r["started"] if isinstance(r["started"], (int, float)) else 0, reverse=True)
        return rows

    def _create(self) -> None:
        with self._connect() as db:
            mode = db.execute(f"PRAGMA journal_mode={self.journal_mode}").fetchone()[0]
            self.journal_mode = str(mode).lower()
            db.execute(
                """CREATE TABLE IF NOT EXISTS runs (
                    id TEXT PRIMARY KEY, run_dir TEXT UNIQUE NOT NULL, name TEXT, task TEXT,
                    status TEXT, started REAL, finished REAL, duration REAL, best_metric REAL,
                    monitor TEXT, pid INTEGER, host TEXT, proc_start REAL, updated REAL, error TEXT, run_json TEXT)"""
            )
            # Indexes written before the error column (it tells an interrupted run
            # from a failed one without opening every run.json).
            # And before run_json: the size and modification time of the run.json a
            # row was read from, so a listing notices one changed since.
            present = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
            for column in ("error", "run_json"):
                if column in present:
                    continue
                try:
                    db.execute(f"ALTER TABLE runs ADD COLUMN {column} TEXT")
                except sqlite3.OperationalError as exc:  # another process added it meanwhile
                    if "duplicate column" not in str(exc):
                        raise

    def _replace_damaged(self, damage: BaseException) -> None:
        """Set a damaged index aside and start a new one, rebuilt from the run folders."""
        aside = self.db_path.with_name(self.db_path.name + ".damaged")
        try:
            for suffix in ("", "-wal", "-shm"):
                source = self.db_path.with_name(self.db_path.name + suffix)
                with contextlib.suppress(FileNotFoundError):  # another process set it aside first
                    os.replace(source, aside.with_name(aside.name + suffix))
            self._create()
        except (OSError, *DATABASE_ERRORS) as exc:
            raise IndexUnavailable(self.db_path, f"it is damaged ({_one_line(damage)}) and cannot be replaced ({_one_line(exc)})") from None
        added = self.sync_folders()
        self.notes.append(
            f"the run index {self.db_path} was damaged ({_one_line(damage)}): rebuilt it from {added} run folder(s); "
            f"the damaged file is kept as {aside}"
        )

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.db_path, timeout=15)
        db.row_factory = sqlite3.Row
        try:
            with db:
                yield db
        finally:
            db.close()

    def record(self, run: RunRecord | Mapping[str, Any], run_dir: Path, *, found: bool = False) -> None:
        """Insert or update a run from its run.json content.

        ``found``: the record was read from its folder (a rebuild), not told
        by the process running it, so its pid and host are run.json's.
        """
        if isinstance(run, RunRecord):
            run = run.to_json()
        running = run.get("status") == RUNNING
        host, proc_start = socket.gethostname(), None
        if found:
            pid = run.get("pid") if running and isinstance(run.get("pid"), int) else None
            host = str((run.get("environment") or {}).get("hostname") or host)
            if pid:
                proc_start = _process_start(pid)
                timings = run.get("timings") or {}
                began = max((v for k, v in timings.items() if k in ("started", "resumed") and isinstance(v, (int, float))), default=0)
                if proc_start is None or proc_start > began + 1.0:
                    proc_start = -1.0  # that process is gone (or another took its number): reconcile marks the run
        else:
            pid = os.getpid() if running else None
            proc_start = _process_start(pid) if pid else None
            self._remember_folder(Path(run_dir))
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
            "host": host,
            "proc_start": proc_start,
            "updated": time.time(),
            "error": str(run.get("error") or "")[:500],
            "run_json": _signature(Path(run_dir) / "run.json"),
        }
        cols = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        updates = ", ".join(f"{k}=excluded.{k}" for k in row if k != "id")
        with self._connect() as db:
            db.execute("DELETE FROM runs WHERE run_dir=? AND id<>?", (row["run_dir"], row["id"]))
            db.execute(f"INSERT INTO runs ({cols}) VALUES ({marks}) ON CONFLICT(id) DO UPDATE SET {updates}", list(row.values()))

    def list(self, reconcile: bool = True) -> list[dict[str, Any]]:
        """Every run, newest first; folders the index did not know are added first."""
        if self.read_only:
            return self._folder_rows()
        try:
            self.sync_folders()
            if reconcile:
                self.reconcile()
        except DATABASE_ERRORS as exc:
            if _is_damage(exc):
                self._replace_damaged(exc)
            # else a full or read-only disk: list what the index holds
        except OSError:
            pass
        try:
            with self._connect() as db:
                rows = db.execute("SELECT * FROM runs ORDER BY started DESC").fetchall()
        except DATABASE_ERRORS as exc:
            if self._read_only_on_a_full_disk(exc):
                return self._folder_rows()
            raise IndexUnavailable(self.db_path, _one_line(exc)) from None
        for row in rows:
            if row["status"] == DAMAGED:
                self.notes.append(f"run {row['id']} is listed as damaged: {row['error']}")
        return [dict(r) for r in rows]

    # -- the folders the index is a cache of ---------------------------------------
    def _remember_folder(self, run_dir: Path) -> None:
        """Note a run folder outside ``runs/`` (``--out``) in the list a rebuild reads."""
        folder = str(Path(run_dir).expanduser().resolve())
        if folder in self._read_other_folders():
            return
        if remember_run_folder(folder, self.db_path):
            self._read_other_folders().add(folder)

    def _read_other_folders(self) -> set[str]:
        if self._other_folders is None:
            try:
                text = self.other_folders_file.read_text(encoding="utf-8", errors="surrogateescape")
            except OSError:
                text = ""
            self._other_folders = {line.strip() for line in text.splitlines() if line.strip()}
        return self._other_folders

    def run_folders(self) -> list[Path]:
        """Every folder the index should list: those under ``runs/`` and the ``--out`` ones it was told of.

        Not checked for a run.json here: ``sync_folders`` looks only at the
        ones it does not know (a listing every 2 s must not stat them all).
        """
        found: list[Path] = []
        with contextlib.suppress(OSError):
            found += [entry for entry in self.runs_folder.iterdir() if not entry.name.startswith(".")]
        self._other_folders = None  # other processes append to it
        found += [Path(line) for line in sorted(self._read_other_folders())]
        return found

    def sync_folders(self) -> int:
        """Add the run folders the index does not list yet; returns how many.

        A folder whose run.json cannot be read is left out (``trainlab eval``
        or ``--resume`` on it names the file), and so is a copy of a listed
        run (the same id in another folder).  A listed run whose run.json
        changed since it was read (its size or modification time) is read
        again: see ``_recheck``.
        """
        with self._connect() as db:
            rows = db.execute("SELECT id, run_dir, status, run_json FROM runs").fetchall()
        known_dirs = {r["run_dir"] for r in rows}
        known_ids = {r["id"] for r in rows}
        for row in rows:
            self._recheck(row)
        added = 0
        for folder in self.run_folders():
            if str(folder) in known_dirs:
                continue
            try:
                # a listed path may be no path at all (a NUL in other-run-folders.txt) or too long to look at
                run_dir = RunDir(folder)
                if str(run_dir.path) in known_dirs or not run_dir.run_json.is_file():
                    continue
                data = run_dir.read()
                run_id = data.get("id") or run_dir.path.name
                if not isinstance(run_id, str) or run_id in known_ids:
                    continue
                self.record({**data, "id": run_id}, run_dir.path, found=True)
            except (UsageError, OSError, TypeError, ValueError, AttributeError, RuntimeError):  # RuntimeError: an unknown ~user
                continue
            known_ids.add(run_id)
            added += 1
        self._note_out_folders(r["run_dir"] for r in rows)
        return added

    def _note_out_folders(self, run_dirs: Iterable[str]) -> None:
        """Note the ``--out`` folders of listed runs that ``other-run-folders.txt`` lacks.

        A run whose note could not be written (a full disk, while the index still
        took its rows) is listed from the index, but a rebuild of a lost index
        reads the note: written here, as soon as it can be.
        """
        noted = self._read_other_folders()
        runs = str(self.runs_folder)
        for run_dir in run_dirs:
            if not isinstance(run_dir, str) or run_dir in noted or os.path.dirname(run_dir) == runs:
                continue
            with contextlib.suppress(OSError, ValueError, RuntimeError):  # as sync_folders: a path that is no path
                if (Path(run_dir) / "run.json").is_file():
                    self._remember_folder(Path(run_dir))

    def _recheck(self, row: Mapping[str, Any]) -> None:
        """Read a listed run's run.json again if it changed since the index read it.

        Readable: the row takes what it says now.  Not (garbage, cut short,
        empty, a value of the wrong type): the row is marked ``damaged``,
        its error naming the file and why, and it claims no best metric;
        what the index knew before is no longer backed by the folder.  A
        run.json that is gone leaves the row as it was (a folder being
        deleted, or on a disk not mounted now).
        """
        if not isinstance(row["run_dir"], str):  # not a folder TrainLab wrote: nothing to read again
            return
        run_json = Path(row["run_dir"]) / "run.json"
        signature = _signature(run_json)
        if signature is None or signature == row["run_json"]:
            return
        try:
            data = RunDir(row["run_dir"]).read()
            if data.get("id") not in (None, row["id"]):
                raise RunFileError(run_json, f"now holds another run's id ({data.get('id')!r}, the index has {row['id']!r})")
            self.record({**data, "id": row["id"]}, Path(row["run_dir"]), found=True)
            return
        except FileNotFoundError:
            return
        except (UsageError, OSError, TypeError, ValueError, AttributeError, RuntimeError) as exc:
            error = str(exc) if str(run_json) in str(exc) else f"{run_json}: {_one_line(exc)}"
        with self._connect() as db:
            db.execute(
                "UPDATE runs SET status=?, error=?, best_metric=NULL, pid=NULL, updated=?, run_json=? WHERE id=?",
                (DAMAGED, error[:500], time.time(), signature, row["id"]),
            )

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
            error = f"{INTERRUPTED_ERROR}; resume it with: trainlab train --resume {shlex.quote(str(run_dir.path))}"
            data: dict[str, Any] = {}
            with contextlib.suppress(UsageError, OSError):
                data = run_dir.read()
                if data.get("status") == RUNNING:
                    data.update(status=FAILED, error=error, pid=None)
                    run_dir.write(data)
            if data.get("status") in FINISHED and data.get("error") != error and data.get("id") == row["id"]:
                # killed after run.json had its end, before the index did: the folder is right
                self.record(data, run_dir.path, found=True)
                continue
            with self._connect() as db:
                db.execute(
                    "UPDATE runs SET status=?, error=?, pid=NULL, updated=? WHERE id=?",
                    (FAILED, error, time.time(), row["id"]),
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
        if row["status"] == RUNNING and _process_start(row["pid"] or -1) is not None:
            raise UsageError(f"run {row['id']} is still running; stop it first")
        run_dir = Path(row["run_dir"])
        if remove_files and (run_dir / "run.json").is_file():
            shutil.rmtree(run_dir, ignore_errors=True)
        with self._connect() as db:
            db.execute("DELETE FROM runs WHERE id=?", (row["id"],))
