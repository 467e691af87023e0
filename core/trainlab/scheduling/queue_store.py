"""The persistent run queue: one SQLite file under the TrainLab home.

Every change is one ``BEGIN IMMEDIATE`` transaction (SQLite's write lock,
taken at the start so that read-then-write cannot interleave), in rollback
journal mode, which is safe on network file systems too; writers are a
handful of processes (the scheduler, its runners, the CLI, the window),
never the many parallel writers that make SQLite lock up (optuna#820).

How "no run starts twice, none is lost" holds when the scheduler or a runner
is killed at any moment:

* the scheduler *launches* an entry: ``running`` with a fresh random
  ``token``, not yet ``claimed``, then starts a runner process with that
  token;
* the runner *claims* it: only while the entry is still ``running`` with
  that token and unclaimed; one of a claim and a scheduler's reset
  (``requeue`` with the token) wins, never both;
* whoever finds an entry ``running`` whose runner is dead (a restarted
  scheduler) puts it back in line (``requeue``), and its runner, on the next
  launch, resumes the run from its checkpoint (``trainlab.scheduling.execution``).

Entry states: ``EntryState`` (``trainlab.runfolder.status``, with its mapping
to a run's status): ``queued``, ``running``, ``paused``, ``done``, ``failed``,
``cancelled``, stored as those words.  ``requested`` is what a user asked of a running entry
(``pause``, ``cancel``); its runner sees it and stops the run.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from trainlab.api.errors import UsageError
from trainlab.runfolder.status import ENTRY_FINISHED, ENTRY_WAITING, EntryState, entry_state
from trainlab.system import paths

QUEUED, RUNNING, PAUSED = EntryState.QUEUED, EntryState.RUNNING, EntryState.PAUSED
DONE, FAILED, CANCELLED = EntryState.DONE, EntryState.FAILED, EntryState.CANCELLED
STATES = tuple(EntryState)
FINISHED = ENTRY_FINISHED
WAITING = ENTRY_WAITING
RUN, SWEEP, TRIAL = "run", "sweep", "trial"


def queue_dir() -> Path:
    return paths.data_dir() / "queue"


@dataclass(frozen=True)
class QueueEntry:
    """One entry of the queue, as plain values.

    ``request``: for a run or trial the RunRequest's fields (task, data,
    params, out, resume); for a sweep the sweep's (task, data, params,
    study, trials, gpus_per_trial).  ``gpus``: how many GPUs a run asks
    (0: the CPU).  ``devices``: the GPU UUIDs it was given.
    """

    id: int
    kind: str
    state: EntryState | str
    position: int
    request: dict[str, Any]
    gpus: int
    parent: int | None = None
    study: str = ""
    trial: int | None = None
    run_dir: str = ""
    devices: tuple[str, ...] = ()
    token: str = ""
    claimed: bool = False
    runner_pid: int | None = None
    runner_start: float | None = None
    requested: str = ""
    reason: str = ""
    attempts: int = 0
    added: float = 0.0
    started: float | None = None
    finished: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def task(self) -> str:
        return str(self.request.get("task", ""))

    def to_json(self) -> dict[str, Any]:
        data = dict(self.__dict__)
        data["devices"] = list(self.devices)
        data.pop("token")
        return data


_COLUMNS = """
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL, state TEXT NOT NULL, position INTEGER NOT NULL,
    request TEXT NOT NULL, gpus INTEGER NOT NULL,
    parent INTEGER, study TEXT, trial INTEGER, run_dir TEXT, devices TEXT,
    token TEXT, claimed INTEGER DEFAULT 0, runner_pid INTEGER, runner_start REAL,
    requested TEXT, reason TEXT, attempts INTEGER DEFAULT 0,
    added REAL, started REAL, finished REAL, updated REAL, extra TEXT
"""


def _entry(row: sqlite3.Row) -> QueueEntry:
    return QueueEntry(
        id=row["id"],
        kind=row["kind"],
        state=entry_state(row["state"]),
        position=row["position"],
        request=json.loads(row["request"] or "{}"),
        gpus=row["gpus"],
        parent=row["parent"],
        study=row["study"] or "",
        trial=row["trial"],
        run_dir=row["run_dir"] or "",
        devices=tuple(json.loads(row["devices"] or "[]")),
        token=row["token"] or "",
        claimed=bool(row["claimed"]),
        runner_pid=row["runner_pid"],
        runner_start=row["runner_start"],
        requested=row["requested"] or "",
        reason=row["reason"] or "",
        attempts=row["attempts"] or 0,
        added=row["added"] or 0.0,
        started=row["started"],
        finished=row["finished"],
        extra=json.loads(row["extra"] or "{}"),
    )


class QueueStore:
    """The queue's SQLite file; every method is one transaction."""

    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path else queue_dir() / "queue.sqlite3"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._write() as db:
            db.execute(f"CREATE TABLE IF NOT EXISTS entries ({_COLUMNS})")

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        db.row_factory = sqlite3.Row
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        finally:
            db.close()

    def _read(self, sql: str, args: tuple[Any, ...] = ()) -> list[QueueEntry]:
        db = sqlite3.connect(self.path, timeout=30)
        db.row_factory = sqlite3.Row
        try:
            return [_entry(r) for r in db.execute(sql, args).fetchall()]
        finally:
            db.close()

    # -- reading -------------------------------------------------------------------
    def get(self, entry_id: int) -> QueueEntry | None:
        found = self._read("SELECT * FROM entries WHERE id=?", (int(entry_id),))
        return found[0] if found else None

    def entry(self, entry_id: int | str) -> QueueEntry:
        """The entry, or UsageError naming the id."""
        try:
            number = int(str(entry_id).strip().lstrip("#"))
        except ValueError:
            raise UsageError(f"queue: {entry_id!r} is not an entry id (see `trainlab queue list`)") from None
        found = self.get(number)
        if found is None:
            raise UsageError(f"queue: no entry {number} (see `trainlab queue list`)")
        return found

    def entries(self) -> list[QueueEntry]:
        """Every entry, in line order: position, then a sweep before its trials, then id."""
        return self._read("SELECT * FROM entries ORDER BY position, CASE kind WHEN 'sweep' THEN 0 ELSE 1 END, id")

    def in_state(self, *states: EntryState) -> list[QueueEntry]:
        return [e for e in self.entries() if e.state in states]

    def trials_of(self, sweep_id: int) -> list[QueueEntry]:
        return self._read("SELECT * FROM entries WHERE parent=? ORDER BY id", (int(sweep_id),))

    def has_work(self) -> bool:
        return bool(self._read("SELECT * FROM entries WHERE state IN ('queued', 'running') LIMIT 1"))

    # -- adding and arranging ----------------------------------------------------------
    def add(
        self,
        kind: str,
        request: dict[str, Any],
        gpus: int,
        *,
        parent: int | None = None,
        study: str = "",
        trial: int | None = None,
        state: EntryState = QUEUED,
        run_dir: str = "",
    ) -> QueueEntry:
        now = time.time()
        with self._write() as db:
            if parent is not None:
                position = db.execute("SELECT position FROM entries WHERE id=?", (parent,)).fetchone()[0]
            else:
                position = (db.execute("SELECT MAX(position) FROM entries").fetchone()[0] or 0) + 1
            cursor = db.execute(
                "INSERT INTO entries (kind, state, position, request, gpus, parent, study, trial, run_dir, added, updated)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (kind, state, position, json.dumps(request, default=str), int(gpus), parent, study, trial, run_dir, now, now),
            )
            entry_id = cursor.lastrowid
        return self.entry(entry_id)

    def move(self, entry_id: int | str, position: int) -> QueueEntry:
        """Put a waiting entry at ``position`` (1: next to start) among the waiting entries."""
        entry = self.entry(entry_id)
        if entry.parent is not None:
            raise UsageError(f"queue move {entry.id}: a trial moves with its sweep (move {entry.parent})")
        if entry.state not in WAITING:
            raise UsageError(f"queue move {entry.id}: only a queued or paused entry can move (this one is {entry.state})")
        if position < 1:
            raise UsageError(f"queue move {entry.id} {position}: positions start at 1")
        with self._write() as db:
            rows = db.execute(
                "SELECT id FROM entries WHERE parent IS NULL AND state IN (?, ?) ORDER BY position, id", (QUEUED, PAUSED)
            ).fetchall()
            order = [r["id"] for r in rows if r["id"] != entry.id]
            order.insert(min(position, len(order) + 1) - 1, entry.id)
            slots = sorted(
                r[0] for r in db.execute(
                    f"SELECT position FROM entries WHERE id IN ({','.join('?' * len(order))})", order
                ).fetchall()
            )
            for entry_id_, slot in zip(order, slots):
                db.execute("UPDATE entries SET position=?, updated=? WHERE id=? OR parent=?", (slot, time.time(), entry_id_, entry_id_))
        return self.entry(entry.id)

    # -- what users ask -------------------------------------------------------------------
    def request_stop(self, entry_id: int, action: str) -> QueueEntry:
        """``pause`` or ``cancel`` an entry: at once if it waits, through its runner if it runs."""
        entry = self.entry(entry_id)
        with self._write() as db:
            row = db.execute("SELECT state FROM entries WHERE id=?", (entry.id,)).fetchone()
            state = row["state"]
            if state == RUNNING:
                db.execute("UPDATE entries SET requested=?, updated=? WHERE id=?", (action, time.time(), entry.id))
            elif action == "pause" and state == QUEUED:
                db.execute("UPDATE entries SET state=?, reason='paused', updated=? WHERE id=?", (PAUSED, time.time(), entry.id))
            elif action == "cancel" and state in WAITING:
                db.execute(
                    "UPDATE entries SET state=?, reason='cancelled in the queue', finished=?, updated=? WHERE id=?",
                    (CANCELLED, time.time(), time.time(), entry.id),
                )
            else:
                raise UsageError(f"queue {action} {entry.id}: the entry is {state}")
        return self.entry(entry.id)

    def continue_(self, entry_id: int) -> QueueEntry:
        """A paused entry back in line, where it was."""
        entry = self.entry(entry_id)
        with self._write() as db:
            moved = db.execute(
                "UPDATE entries SET state=?, requested=NULL, reason='', updated=? WHERE id=? AND state=?",
                (QUEUED, time.time(), entry.id, PAUSED),
            ).rowcount
        if not moved:
            raise UsageError(f"queue continue {entry.id}: only a paused entry continues (this one is {entry.state})")
        return self.entry(entry.id)

    # -- the scheduler's and runners' steps --------------------------------------------------
    def launch(self, entry_id: int, devices: list[str]) -> str:
        """Mark a queued entry started on ``devices``; the token its runner claims it with."""
        token = secrets.token_hex(8)
        now = time.time()
        with self._write() as db:
            changed = db.execute(
                "UPDATE entries SET state=?, token=?, claimed=0, runner_pid=NULL, runner_start=NULL, devices=?,"
                " attempts=attempts+1, started=COALESCE(started, ?), updated=? WHERE id=? AND state=?",
                (RUNNING, token, json.dumps(devices), now, now, entry_id, QUEUED),
            ).rowcount
        if not changed:
            raise UsageError(f"queue: entry {entry_id} is no longer queued")
        return token

    def set_runner(self, entry_id: int, token: str, pid: int) -> None:
        with self._write() as db:
            db.execute("UPDATE entries SET runner_pid=? WHERE id=? AND token=? AND claimed=0", (pid, entry_id, token))

    def claim(self, entry_id: int, token: str, pid: int, start: float | None) -> QueueEntry | None:
        """The runner takes its entry; None when the launch was withdrawn meanwhile."""
        with self._write() as db:
            changed = db.execute(
                "UPDATE entries SET claimed=1, runner_pid=?, runner_start=?, updated=? WHERE id=? AND token=? AND state=? AND claimed=0",
                (pid, start, time.time(), entry_id, token, RUNNING),
            ).rowcount
        return self.get(entry_id) if changed else None

    def set_run_dir(self, entry_id: int, token: str, run_dir: str) -> None:
        with self._write() as db:
            db.execute("UPDATE entries SET run_dir=?, updated=? WHERE id=? AND token=?", (run_dir, time.time(), entry_id, token))

    def requeue(self, entry_id: int, token: str, reason: str = "") -> bool:
        """A launched entry back in line (its runner died, or could not get its GPUs)."""
        with self._write() as db:
            return bool(
                db.execute(
                    "UPDATE entries SET state=?, token=NULL, claimed=0, runner_pid=NULL, runner_start=NULL, devices=NULL,"
                    " reason=?, updated=? WHERE id=? AND token=? AND state=?",
                    (QUEUED, reason, time.time(), entry_id, token, RUNNING),
                ).rowcount
            )

    def finish(self, entry_id: int, token: str | None, state: EntryState, reason: str = "") -> bool:
        """The entry's end (or, ``paused``, its pause); ``token`` None for an entry without a runner (a sweep)."""
        assert state in (PAUSED, DONE, FAILED, CANCELLED)
        now = time.time()
        with self._write() as db:
            sql = (
                "UPDATE entries SET state=?, reason=?, token=NULL, claimed=0, runner_pid=NULL, runner_start=NULL,"
                " devices=NULL, requested=NULL, finished=?, updated=? WHERE id=?"
            )
            args: list[Any] = [state, reason, None if state == PAUSED else now, now, entry_id]
            if token is not None:
                sql += " AND token=?"
                args.append(token)
            return bool(db.execute(sql, args).rowcount)

    def set_state(self, entry_id: int, state: EntryState, reason: str = "") -> None:
        """A sweep entry's own state (it has no runner)."""
        with self._write() as db:
            db.execute("UPDATE entries SET state=?, reason=?, updated=? WHERE id=?", (state, reason, time.time(), entry_id))

    def update_request(self, entry_id: int, request: dict[str, Any]) -> None:
        with self._write() as db:
            db.execute("UPDATE entries SET request=?, updated=? WHERE id=?", (json.dumps(request, default=str), time.time(), entry_id))
