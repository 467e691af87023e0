"""The run index is a cache of the run folders: rebuilt when deleted or damaged, never
"no runs yet" with runs on disk; damaged run files are one-line errors naming the file."""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import subprocess
import sys

import pytest

from helpers import FIXTURE_PLUGINS, one_json_line, one_line_error, run_trainlab, write_toy_csv
from trainlab.system import paths
from trainlab.runfolder.index import IndexUnavailable, RunDir, RunStore


cli = functools.partial(run_trainlab, extra_path=[FIXTURE_PLUGINS])


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Three runs under a home and one --out run elsewhere, trained once for the module."""
    base = tmp_path_factory.mktemp("index")
    home = base / "home"
    data = write_toy_csv(base / "toy.csv")
    env = {"TRAINLAB_HOME": str(home)}
    dirs = []
    for n in range(3):
        result = cli("train", "toy-classification", "--data", data, "--epochs", "1", "--json", env=env)
        assert result.returncode == 0, result.stderr
        dirs.append(one_json_line(result)["run_dir"])
    result = cli("train", "toy-classification", "--data", data, "--epochs", "1", "--out", base / "elsewhere" / "run", "--json", env=env)
    assert result.returncode == 0, result.stderr
    dirs.append(one_json_line(result)["run_dir"])
    return home, data, dirs


@pytest.fixture
def home(trained, tmp_path, monkeypatch):
    """A copy of the trained home (the --out run stays where it is, listed in the copy's index)."""
    import shutil

    source, _, dirs = trained
    copy = tmp_path / "home"
    shutil.copytree(source, copy)
    monkeypatch.setenv("TRAINLAB_HOME", str(copy))
    db = sqlite3.connect(copy / "index.sqlite3")
    with db:  # the copy's own folders
        db.execute("UPDATE runs SET run_dir=replace(run_dir, ?, ?)", (str(source), str(copy)))
    db.close()
    return copy, [d.replace(str(source), str(copy)) for d in dirs]


def listed(home) -> list[str]:
    result = cli("runs", "--json", env={"TRAINLAB_HOME": str(home)})
    assert result.returncode == 0, result.stderr
    return sorted(r["run_dir"] for r in one_json_line(result)["runs"])


def test_a_deleted_index_is_rebuilt_from_the_folders_and_the_out_runs_it_knew(home):
    home, dirs = home
    assert listed(home) == sorted(dirs)
    assert (home / "other-run-folders.txt").read_text().split() == [dirs[3]]
    for name in ("index.sqlite3", "index.sqlite3-wal", "index.sqlite3-shm"):
        (home / name).unlink(missing_ok=True)
    assert listed(home) == sorted(dirs)  # never "no runs yet" with runs on disk
    rows = {r["run_dir"]: r for r in RunStore().list()}
    assert {r["status"] for r in rows.values()} == {"completed"}
    assert all(r["best_metric"] is not None and r["started"] for r in rows.values())


def test_a_garbage_index_is_set_aside_rebuilt_and_said(home):
    home, dirs = home
    index = home / "index.sqlite3"
    for name in ("index.sqlite3-wal", "index.sqlite3-shm"):
        (home / name).unlink(missing_ok=True)
    index.write_bytes(b"this is not an sqlite database at all" * 100)
    result = cli("runs", "--json", env={"TRAINLAB_HOME": str(home)})
    assert result.returncode == 0, result.stderr
    assert sorted(r["run_dir"] for r in one_json_line(result)["runs"]) == sorted(dirs)
    assert f"the run index {index} was damaged" in result.stderr and "rebuilt it from 4 run folder(s)" in result.stderr
    assert (home / "index.sqlite3.damaged").read_bytes().startswith(b"this is not")
    assert "Traceback" not in result.stderr


def test_a_run_folder_copied_in_is_listed(home, tmp_path):
    import shutil

    home, dirs = home
    record = json.loads((RunDir(dirs[0]).run_json).read_text())
    copied = home / "runs" / "copied-from-a-colleague"
    shutil.copytree(dirs[0], copied)
    record["id"] = "copied-from-a-colleague"
    (copied / "run.json").write_text(json.dumps(record))
    assert str(copied) in listed(home)


def test_a_running_run_found_in_a_rebuild_whose_process_is_gone_shows_interrupted(home):
    home, dirs = home
    rd = RunDir(dirs[1])
    record = rd.read()
    record.update(status="running", pid=2**22 + 12345)  # no such process
    rd.write(record)
    (home / "index.sqlite3").unlink()
    rows = {r["run_dir"]: r for r in RunStore().list()}
    assert rows[str(rd.path)]["status"] == "failed"
    assert rd.read()["error"].startswith("interrupted:") and "--resume" in rd.read()["error"]
    assert "interrupted" in cli("runs", env={"TRAINLAB_HOME": str(home)}).stdout


@pytest.mark.parametrize("content", ["[1, 2, 3]", '{"id": "x", "task": "toy-classification", "status": "compl'], ids=["a-list", "truncated"])
def test_a_damaged_run_json_is_one_line_naming_it_everywhere(home, content):
    home, dirs = home
    rd = RunDir(dirs[2])
    rd.run_json.write_text(content)
    env = {"TRAINLAB_HOME": str(home)}
    for args in (("eval", rd.path), ("predict", rd.path, "0,0,0,0"), ("train", "--resume", rd.path)):
        error = one_line_error(cli(*args, "--json", env=env))
        assert error.startswith(f"{rd.run_json}: is not "), (args, error)
    (home / "index.sqlite3").unlink()  # a rebuild leaves it out and lists the others
    assert listed(home) == sorted(d for d in dirs if d != dirs[2])


def test_a_checkpoint_with_a_damaged_header_is_one_line_for_eval_and_resume(home):
    home, dirs = home
    rd = RunDir(dirs[0])
    for checkpoint in (rd.best_checkpoint, rd.last_checkpoint):
        raw = bytearray(checkpoint.read_bytes())
        raw[8:12] = b"{{{{"  # the header is no longer JSON
        checkpoint.write_bytes(bytes(raw))
    env = {"TRAINLAB_HOME": str(home)}
    error = one_line_error(cli("eval", rd.path, "--json", env=env))
    assert error.startswith(f"checkpoint {rd.best_checkpoint} is damaged: its header is not valid JSON")
    error = one_line_error(cli("train", "--resume", rd.path, "--more-epochs", "1", "--json", env=env))
    assert error.startswith(f"checkpoint {rd.last_checkpoint} is damaged")
    assert rd.read()["status"] == "completed"


def test_a_truncated_model_file_is_one_line_for_predict_and_eval(home):
    home, dirs = home
    rd = RunDir(dirs[0])
    weights = rd.model_dir / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])
    for checkpoint in (rd.best_checkpoint, rd.last_checkpoint):
        checkpoint.unlink()  # eval then uses model/
    env = {"TRAINLAB_HOME": str(home)}
    for args in (("predict", rd.path, "0,0,0,0"), ("eval", rd.path)):
        error = one_line_error(cli(*args, "--json", env=env))
        assert error.startswith(f"{weights} is damaged: truncated"), (args, error)


def test_an_index_that_cannot_be_opened_raises_one_error_naming_it(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.write_text("a file, not a folder")
    monkeypatch.setenv("TRAINLAB_HOME", str(home))
    with pytest.raises(IndexUnavailable) as err:
        RunStore()
    assert str(err.value).startswith(f"run index {paths.index_path()} cannot be used: its folder cannot be created")
    result = cli("runs", "--json", env={"TRAINLAB_HOME": str(home)})
    assert one_line_error(result) == str(err.value)


@pytest.mark.skipif(os.name == "nt", reason="POSIX")
def test_the_window_marks_the_history_unavailable_and_finishes_starting(qtbot, toy_plugin, tmp_path, monkeypatch, request):
    home = tmp_path / "home"
    home.mkdir()
    # a damaged index in a read-only home: it cannot even be set aside and rebuilt
    read_only = ReadOnlyFolder(home)
    request.addfinalizer(read_only.close)
    read_only.write(home / "index.sqlite3", b"garbage" * 100)
    monkeypatch.setenv("TRAINLAB_HOME", str(home))
    from PySide6.QtWidgets import QLabel

    from trainlab_desktop.app import make_application
    from trainlab_desktop.main_window import MainWindow

    make_application(language="en", theme="light")
    win = MainWindow(resolved_theme="light")
    qtbot.addWidget(win)
    win.show()
    try:
        win.start_setup()  # as the app does: step by step, through the event loop
        qtbot.waitUntil(lambda: win.is_ready, timeout=60_000)
        win.show_page("history")
        label = win.findChild(QLabel, "historyUnavailable")
        assert label is not None and win.history is None
        assert label.text().startswith(f"Cannot read the run index: {home / 'index.sqlite3'}: it is damaged (file is not a database)")
        assert "Starting" not in win.status_label.text()
    finally:
        win._shutdown()


class ReadOnlyFolder:
    """``folder`` made read-only for real: a read-only tmpfs for root (who writes anywhere a mode allows), else its mode."""

    def __init__(self, folder):
        self.folder = folder
        self.mounted = hasattr(os, "geteuid") and os.geteuid() == 0 and sys.platform == "linux"
        if self.mounted:
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)], check=True)

    def write(self, path, data: bytes) -> None:
        path.write_bytes(data)
        if self.mounted:
            subprocess.run(["mount", "-o", "remount,ro", str(self.folder)], check=True)
        else:
            self.folder.chmod(0o555)

    def close(self) -> None:
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.folder)], check=False)
        else:
            self.folder.chmod(0o755)


def test_a_run_killed_after_its_run_json_ended_but_before_the_index_did_keeps_its_end(tmp_path):
    store = RunStore()
    rd = RunDir(tmp_path / "run")
    rd.path.mkdir()
    record = {"id": "r1", "task": "toy-classification", "status": "running", "timings": {"started": 1.0}}
    store.record(record, rd.path)
    with sqlite3.connect(store.db_path) as db:  # its process is gone
        db.execute("UPDATE runs SET pid=999999, proc_start=1.0 WHERE id='r1'")
    rd.write({**record, "status": "completed", "best": {"metric": "accuracy", "value": 0.9, "step": 12}})
    rows = {r["id"]: r for r in store.list()}
    assert rows["r1"]["status"] == "completed" and rows["r1"]["best_metric"] == 0.9
    assert rd.read()["status"] == "completed"


def test_a_full_home_lists_the_runs_read_only_from_their_folders(home, monkeypatch, capsys):
    """On a full disk SQLite cannot even open the index (its WAL needs a -shm file): "disk I/O error"."""
    import shutil
    from collections import namedtuple

    from trainlab.cli.commands import main

    home, dirs = home
    real_usage = shutil.disk_usage
    usage = namedtuple("usage", "total used free")

    def connect(*args, **kwargs):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(sqlite3, "connect", connect)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**9, 10**9, 0) if str(path).startswith(str(home)) else real_usage(path))
    assert main(["runs", "--json"]) == 0
    captured = capsys.readouterr()
    runs = json.loads(captured.out.strip().splitlines()[-1])["runs"]
    assert sorted(r["run_dir"] for r in runs) == sorted(dirs)
    assert {r["status"] for r in runs} == {"completed"} and all(r["best_metric"] is not None for r in runs)
    note = [line for line in captured.err.splitlines() if "index.sqlite3" in line]
    assert len(note) == 1, captured.err
    assert f"the disk holding {home} is full (0 bytes free)" in note[0] and "read-only from their folders" in note[0]
    with pytest.raises(IndexUnavailable):  # a writer is still told: the index cannot take its run
        RunStore()


def test_an_out_run_that_could_not_open_the_index_is_listed_once_the_index_is_back(tmp_path):
    home = tmp_path / "home"
    (home / "index.sqlite3").mkdir(parents=True)  # an index that cannot be opened while the run trains
    out = tmp_path / "elsewhere" / "run"
    data = write_toy_csv(tmp_path / "toy.csv", rows=48)
    result = cli("train", "toy-classification", "--data", data, "--epochs", "1", "--out", out, "--json", env={"TRAINLAB_HOME": str(home)})
    assert result.returncode == 0, result.stderr
    assert "run index unavailable" in result.stderr
    (home / "index.sqlite3").rmdir()
    assert listed(home) == [str(out.resolve())]


@pytest.mark.parametrize("fault", ["every write fails", "the first write is cut short"])
def test_an_out_run_whose_folder_note_could_not_be_written_is_found_after_the_index_is_lost(toy_plugin, tmp_path, monkeypatch, fault):
    """A full disk for other-run-folders.txt while the index itself takes the run (SQLite
    reuses its WAL's pages): the listing notes the folder once it can, so a rebuild finds it."""
    import errno

    from trainlab.engine.scripting import RunRequest, run_training

    real_open, real_write = os.open, os.write
    notes: set[int] = set()

    def open_(path, flags, *args, **kwargs):
        if os.path.basename(path) == RunStore.OTHER_FOLDERS and flags & os.O_WRONLY:
            if fault == "every write fails":
                raise OSError(errno.ENOSPC, "No space left on device", str(path))
            fd = real_open(path, flags, *args, **kwargs)
            notes.add(fd)
            return fd
        return real_open(path, flags, *args, **kwargs)

    def write(fd, data):
        if fd in notes:
            notes.clear()  # the first write only: what a disk that fills part-way takes
            return real_write(fd, bytes(data)[: len(data) // 2])
        return real_write(fd, data)

    home = paths.data_dir()
    out = tmp_path / "elsewhere" / "run"
    with monkeypatch.context() as patched:
        patched.setattr(os, "open", open_)
        patched.setattr(os, "write", write)
        result = run_training(RunRequest(task="toy-classification", data=str(write_toy_csv(tmp_path / "toy.csv")), out=str(out),
                                         params={"epochs": "1"}))  # fmt: skip
    assert result.status == "completed"
    assert listed(home) == [str(out.resolve())]  # from the index, which took the run
    for name in ("index.sqlite3", "index.sqlite3-wal", "index.sqlite3-shm"):
        (home / name).unlink(missing_ok=True)
    assert listed(home) == [str(out.resolve())]  # rebuilt from the folders it knows
    assert str(out.resolve()) in (home / RunStore.OTHER_FOLDERS).read_text().splitlines()
