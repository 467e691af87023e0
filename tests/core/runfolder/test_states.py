"""One type per kind of state, the mapping between them, and the words on disk unchanged.

A run folder and a queue file written before the states were enums read
back as the same states, and what this version writes is the same words.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from trainlab.engine.outcome import RunOutcome
from trainlab.runfolder.index import RunDir
from trainlab.runfolder.status import (
    EntryState,
    RunStatus,
    SessionState,
    TrialState,
    entry_state,
    entry_state_of_finished,
    run_status,
    run_status_of_entry,
    session_state_of_ended,
    session_state_of_stored,
    status_word,
    trial_state_of_run,
)
from trainlab.scheduling.queue_store import QueueStore
from trainlab.viewmodel.session import RunSession


def test_each_kind_keeps_the_words_stored_on_disk():
    assert [s.value for s in RunStatus] == ["running", "completed", "failed", "cancelled"]
    assert [s.value for s in EntryState] == ["queued", "running", "paused", "done", "failed", "cancelled"]
    assert [s.value for s in SessionState] == [
        "idle", "preparing", "running", "paused", "stopping", "completed", "failed", "cancelled",
    ]
    assert [s.value for s in TrialState] == ["waiting", "running", "completed", "pruned", "failed"]
    assert json.dumps({"status": RunStatus.CANCELLED}) == '{"status": "cancelled"}'
    assert f"{EntryState.DONE}" == "done"


def test_a_word_this_version_does_not_know_is_kept_as_stored():
    assert run_status("completed") is RunStatus.COMPLETED
    assert run_status("archived") == "archived" and not isinstance(run_status("archived"), RunStatus)
    assert run_status("") == ""
    assert entry_state("done") is EntryState.DONE
    assert entry_state("deferred") == "deferred"


@pytest.mark.parametrize(
    ("stored", "window"),
    [("running", SessionState.RUNNING), ("completed", SessionState.COMPLETED), ("failed", SessionState.FAILED),
     ("cancelled", SessionState.CANCELLED), ("", SessionState.IDLE), ("archived", SessionState.IDLE)],
)
def test_the_window_state_of_a_stored_run(stored, window):
    assert session_state_of_stored(stored) is window


@pytest.mark.parametrize(
    ("ended", "window"),
    [("completed", SessionState.COMPLETED), ("failed", SessionState.FAILED), ("cancelled", SessionState.CANCELLED),
     ("running", SessionState.FAILED), ("", SessionState.FAILED)],
)
def test_the_window_state_of_an_ended_run(ended, window):
    """A run whose outcome names no end (a child that died mid-run) is shown failed, never still running."""
    assert session_state_of_ended(ended) is window


def test_a_queue_entry_is_done_when_its_run_completed_and_the_reverse():
    assert entry_state_of_finished(RunStatus.COMPLETED) is EntryState.DONE
    assert entry_state_of_finished("failed") is EntryState.FAILED
    assert entry_state_of_finished("cancelled") is None  # paused, cancelled or back in line: the reason decides
    assert run_status_of_entry("done") is RunStatus.COMPLETED
    assert run_status_of_entry(EntryState.FAILED) is RunStatus.FAILED
    assert run_status_of_entry("cancelled") is RunStatus.CANCELLED
    assert run_status_of_entry("running") is RunStatus.RUNNING
    assert run_status_of_entry("queued") is None and run_status_of_entry("paused") is None
    for end in (RunStatus.COMPLETED, RunStatus.FAILED):
        assert run_status_of_entry(entry_state_of_finished(end)) is end


def test_a_trial_state_from_its_run():
    assert trial_state_of_run("completed") is TrialState.COMPLETED
    assert trial_state_of_run("cancelled", pruned=True) is TrialState.PRUNED
    assert trial_state_of_run("cancelled") is TrialState.FAILED
    assert trial_state_of_run("failed", pruned=True) is TrialState.FAILED


def test_an_old_run_folder_reads_as_the_same_states(tmp_path):
    run = tmp_path / "old-run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"schema_version": 1, "id": "old-run", "task": "toy", "status": "cancelled"}))
    (run / "metrics.jsonl").write_text("")
    record = RunDir(run).read_record()
    assert record.status is RunStatus.CANCELLED
    assert status_word(record.status) == "stopped"
    session = RunSession()
    session.follow(run)
    assert session.status is SessionState.CANCELLED and session.ended and not session.live


def test_the_window_takes_a_run_outcome_through_the_mapping():
    session = RunSession()
    session.begin()
    assert session.status is SessionState.PREPARING and session.active
    session.set_status("paused")
    assert session.status is SessionState.PAUSED
    session.finish(RunOutcome(run_dir="", status="completed", task="toy"))
    assert session.status is SessionState.COMPLETED and session.ended


OLD_QUEUE_COLUMNS = """
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL, state TEXT NOT NULL, position INTEGER NOT NULL,
    request TEXT NOT NULL, gpus INTEGER NOT NULL,
    parent INTEGER, study TEXT, trial INTEGER, run_dir TEXT, devices TEXT,
    token TEXT, claimed INTEGER DEFAULT 0, runner_pid INTEGER, runner_start REAL,
    requested TEXT, reason TEXT, attempts INTEGER DEFAULT 0,
    added REAL, started REAL, finished REAL, updated REAL, extra TEXT
"""


def test_an_old_queue_file_reads_as_entry_states_and_keeps_its_words(tmp_path):
    path = tmp_path / "queue.sqlite3"
    db = sqlite3.connect(path)
    db.execute(f"CREATE TABLE entries ({OLD_QUEUE_COLUMNS})")
    for position, state in enumerate(("done", "queued", "paused", "cancelled"), 1):
        db.execute("INSERT INTO entries (kind, state, position, request, gpus) VALUES ('run', ?, ?, '{\"task\": \"toy\"}', 0)",
                   (state, position))
    db.commit()
    db.close()

    store = QueueStore(path)
    states = [e.state for e in store.entries()]
    assert states == [EntryState.DONE, EntryState.QUEUED, EntryState.PAUSED, EntryState.CANCELLED]
    assert all(type(s) is EntryState for s in states)
    assert store.has_work()
    moved = store.move(3, 1)  # the paused entry first among the waiting ones
    assert [e.id for e in store.entries() if e.state in (EntryState.QUEUED, EntryState.PAUSED)][0] == moved.id
    store.continue_(3)
    store.request_stop(2, "cancel")

    raw = dict(sqlite3.connect(path).execute("SELECT id, state FROM entries").fetchall())
    assert raw == {1: "done", 2: "cancelled", 3: "queued", 4: "cancelled"}
    assert all(type(v) is str for v in raw.values())
