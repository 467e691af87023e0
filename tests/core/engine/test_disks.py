"""Full and unwritable disks: --out that cannot be made, a disk that fills during a run,
the torch.export write on a full disk, a TRAINLAB_HOME that cannot hold the index.

Full disks are real ones where this user may mount a small tmpfs (root);
elsewhere those tests skip, and the fault-injecting ones still run.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers import FIXTURE_PLUGINS, one_json_line, one_line_error, run_trainlab, subprocess_env
from trainlab.engine.scripting import RunRequest, run_training
from trainlab.api.events import TrainStep
from trainlab.runfolder.tail import read_events
from trainlab.runfolder.index import RunDir, RunStore

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
needs_mount = pytest.mark.skipif(not IS_ROOT or sys.platform != "linux", reason="mounting a tmpfs needs root on Linux")


@contextlib.contextmanager
def tmpfs(folder: Path, size: str, *, read_only: bool = False):
    folder.mkdir(parents=True, exist_ok=True)
    options = f"size={size}" + (",ro" if read_only else "")
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


cli = functools.partial(run_trainlab, extra_path=[FIXTURE_PLUGINS])


@pytest.fixture
def bad_csv(tmp_path):
    """Data whose scan would fail: an --out error must come before it."""
    path = tmp_path / "bad.csv"
    path.write_text("x0,x1,nolabel\n1,2,3\n")
    return path


# -- --out that cannot be made ------------------------------------------------------------------


def test_out_on_proc_is_refused_before_the_data_scan(bad_csv):
    error = one_line_error(cli("train", "toy-classification", "--data", bad_csv, "--out", "/proc/x/run", "--json"))
    assert error.startswith("--out /proc/x/run: cannot create (") and "proc file system" in error


def test_out_through_a_file_is_refused_before_the_data_scan(bad_csv, tmp_path):
    a_file = tmp_path / "plain.txt"
    a_file.write_text("not a folder")
    error = one_line_error(cli("train", "toy-classification", "--data", bad_csv, "--out", a_file / "run", "--json"))
    assert error == f"--out {a_file / 'run'}: cannot create ({a_file} is a file, not a folder)"


def test_out_in_a_read_only_folder_is_refused_and_nothing_is_made(bad_csv, tmp_path):
    folder = tmp_path / "ro"
    if IS_ROOT and sys.platform == "linux":
        context = tmpfs(folder, "1m", read_only=True)  # root writes anywhere a mode allows: use a read-only mount
        reason = f"{folder} is on a read-only file system"
    else:
        folder.mkdir()
        folder.chmod(0o555)
        context = contextlib.nullcontext()
        reason = f"no permission to write in {folder}"
    with context:
        out = folder / "deeper" / "run"
        error = one_line_error(cli("train", "toy-classification", "--data", bad_csv, "--out", out, "--json"))
        assert error == f"--out {out}: cannot create ({reason})"
        assert not (folder / "deeper").exists()
    folder.chmod(0o755)


def test_a_home_that_cannot_hold_runs_is_refused_before_the_data_scan(bad_csv, tmp_path):
    home = tmp_path / "home-file"
    home.write_text("a file where the home should be")
    error = one_line_error(cli("train", "toy-classification", "--data", bad_csv, "--json", env={"TRAINLAB_HOME": str(home)}))
    assert error.startswith(f"run folder {home / 'runs'}") and "cannot create" in error and "--out" in error


# -- a disk that fills during the run ------------------------------------------------------------------


@needs_mount
def test_not_enough_space_for_the_run_fails_it_before_the_first_epoch(toy_csv, tmp_path):
    with tmpfs(tmp_path / "small", "20m") as disk:
        out = disk / "run"
        result = cli("train", "toy-classification", "--data", toy_csv, "--out", out, "--set", "hidden=4096", "--json")
        assert result.returncode == 1, result.stderr
        data = one_json_line(result)
        assert data["status"] == "failed" and data["steps"] == 0
        assert data["error"].startswith(f"not enough free disk space in {out} for this run's checkpoints and model: needs about")
        assert "MB free" in data["error"] and "\n" not in data["error"]
        assert not [e for e in read_events(out / "metrics.jsonl") if isinstance(e, TrainStep)]
        assert RunDir(out).read()["status"] == "failed"


@needs_mount
@pytest.mark.parametrize("leave", [5_000_000, 0], ids=["a-little-left", "nothing-left"])
def test_a_disk_that_fills_during_the_run_fails_it_with_the_folder_and_the_free_space(toy_csv, tmp_path, leave):
    with tmpfs(tmp_path / "disk", "64m") as disk:
        out = disk / "run"
        result = cli("train", "toy-classification", "--data", toy_csv, "--out", out, "--set", "fill_disk_at_step=5",
                     "--set", f"fill_disk_leave={leave}", "--set", "log_interval=0", "--json")  # fmt: skip
        assert result.returncode == 1, result.stderr
        assert "Traceback" not in result.stderr
        data = one_json_line(result)  # --json still prints its object
        assert data["status"] == "failed" and data["run_dir"] == str(out)
        error = data["error"]
        assert "\n" not in error and " free" in error and str(out) in error
        # the epoch's checkpoint checks first (a line of metrics.jsonl still fits in its last page)
        assert error.startswith(f"not enough free disk space in {out / 'checkpoints'} to write a checkpoint")
        if not leave:
            assert ", 0 MB free" in error
        record = RunDir(out).read()  # even with nothing left, the space kept aside for it: run.json has the end
        assert record["status"] == "failed" and record["error"] == error
        assert RunStore().get(record["id"])["status"] == "failed"
        assert list(out.rglob("*.tmp")) == []


def test_when_run_json_itself_cannot_be_written_the_outcome_and_index_say_so(toy_plugin, toy_csv, tmp_path, monkeypatch, capfd):
    real_write = RunDir.write

    def write(self, record):
        if record.get("status") != "running":  # the end of the run: the disk is full by now
            raise OSError(errno.ENOSPC, "No space left on device", str(self.run_json))
        return real_write(self, record)

    monkeypatch.setattr(RunDir, "write", write)
    out = tmp_path / "run"
    result = run_training(RunRequest(task="toy-classification", data=str(toy_csv), out=str(out),
                                     params={"epochs": "1", "fail_at_step": "3"}))  # fmt: skip
    assert result.status == "failed"
    assert result.error.startswith("plugin 'toy' (task toy-classification) failed in train_step: RuntimeError: toy failure at step 3; ")
    assert "run.json could not be written (the disk holding" in result.error
    assert f"{out / 'run.json'} could not be written" in capfd.readouterr().err
    record = json.loads((out / "run.json").read_text())
    assert record["status"] == "running"  # what it said before; the index tells the truth
    row = RunStore().get(record["id"])
    assert row["status"] == "failed" and "could not be written" in row["error"]


def test_a_metrics_write_that_fails_on_the_loop_fails_the_run_naming_the_folder(toy_plugin, toy_csv, tmp_path, monkeypatch):
    import trainlab.runfolder.index as runs

    real_write = os.write
    calls = {"n": 0}

    def write(fd, data):
        if b'"event":"train"' in bytes(data):
            calls["n"] += 1
            if calls["n"] >= 2:
                raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(runs.os, "write", write)
    out = tmp_path / "run"
    result = run_training(RunRequest(task="toy-classification", data=str(toy_csv), out=str(out),
                                     params={"epochs": "2", "log_interval": "0"}))  # fmt: skip
    assert calls["n"] >= 2
    assert result.status == "failed" and result.error.startswith(f"the disk holding {out} is full (")
    assert "while writing metrics.jsonl" in result.error
    assert RunDir(out).read()["status"] == "failed"


def test_the_export_is_checked_for_space_before_it_is_written(toy_plugin, toy_csv, tmp_path, monkeypatch):
    import shutil
    from collections import namedtuple

    usage = namedtuple("usage", "total used free")
    real = shutil.disk_usage
    # the export is written into a new folder beside model/ (.model.XXXXXXXX.tmp) and renamed into place
    def disk_usage(path):
        return usage(10**9, 10**9, 1000) if Path(path).name.startswith(".model.") else real(path)

    monkeypatch.setattr(shutil, "disk_usage", disk_usage)
    out = tmp_path / "run"
    result = run_training(RunRequest(task="toy-classification", data=str(toy_csv), out=str(out), params={"epochs": "1"}))
    assert result.status == "failed"
    assert result.error.startswith(f"not enough free disk space in {out / 'model'} to export the model: needs about 1 MB, 0 MB free")
    assert not (out / "model").exists() and not [p for p in out.iterdir() if p.name.startswith(".model.")]


EXPORT_ON_A_FULL_DISK = textwrap.dedent(
    """
    import gc, sys
    from pathlib import Path
    import torch
    from trainlab_plugins.image.export import export_torch_program

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 64, 3), torch.nn.Flatten(), torch.nn.LazyLinear(10)).eval()
    model(torch.randn(2, 3, 16, 16))
    try:
        export_torch_program(model, Path(sys.argv[1]) / "model.pt2", 16)
    except OSError as exc:
        print("OSError", exc.errno)
    gc.collect()  # where torch's stream writer used to throw from its destructor (SIGABRT)
    print("alive")
    """
)


@needs_mount
def test_a_full_disk_during_the_torch_export_write_is_an_error_not_an_abort(tmp_path):
    with tmpfs(tmp_path / "tiny", "256k") as disk:
        result = subprocess.run([sys.executable, "-c", EXPORT_ON_A_FULL_DISK, str(disk)], capture_output=True, text=True,
                                timeout=240, env=subprocess_env())  # fmt: skip
        assert result.returncode == 0, result.stderr[-2000:]
        assert result.stdout.split() == ["OSError", str(errno.ENOSPC), "alive"]
        assert list(disk.iterdir()) == []  # the temporary went with the error


# -- a home that cannot hold the index -------------------------------------------------------------------


@needs_mount
@pytest.mark.parametrize("kind", ["full", "read-only"])
def test_runs_on_a_home_that_cannot_hold_the_index_is_one_line_or_read_from_the_folders(tmp_path, kind):
    home = tmp_path / "home"
    with tmpfs(home, "1m", read_only=kind == "read-only"):
        if kind == "full":
            with open(home / "filler", "wb", buffering=0) as handle:
                with contextlib.suppress(OSError):
                    while True:
                        handle.write(b"\0" * 65536)
        result = cli("runs", "--json", env={"TRAINLAB_HOME": str(home)})
        if kind == "full":  # listed read-only from the run folders (none here), with a note saying why
            assert result.returncode == 0 and one_json_line(result)["runs"] == []
            assert f"the run index {home / 'index.sqlite3'} cannot be used" in result.stderr
            assert f"the disk holding {home} is full (" in result.stderr and "read-only from their folders" in result.stderr
        else:
            error = one_line_error(result)
            assert error.startswith(f"run index {home / 'index.sqlite3'} cannot be used: ") and "read-only file system" in error


@pytest.mark.long
@needs_mount
def test_eval_of_a_run_on_a_read_only_disk_is_one_line_naming_the_file(toy_csv, tmp_path):
    import shutil

    done = cli("train", "toy-classification", "--data", toy_csv, "--out", tmp_path / "run", "--epochs", "1", "--json")
    assert done.returncode == 0, done.stderr
    disk = tmp_path / "disk"
    with tmpfs(disk, "16m"):
        shutil.copytree(tmp_path / "run", disk / "run")
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        result = cli("eval", disk / "run", "--json")
        error = one_line_error(result, code=1)
        assert error.startswith(f"{disk / 'run'}/eval-") and error.endswith(".json: Read-only file system")


# -- a full disk or a file-size limit met in the plugin's own code -----------------------------------------


@pytest.mark.parametrize(
    "error, words",
    [
        ("safetensors-ENOSPC", "is full ("),
        ("python-EDQUOT", "is full ("),
        ("safetensors-EFBIG", "hit the file-size limit"),
    ],
)
def test_a_full_disk_in_the_plugins_export_is_the_disk_not_the_plugin(toy_plugin, toy_csv, tmp_path, monkeypatch, error, words):
    import safetensors.torch
    from safetensors import SafetensorError

    kind, code = error.split("-")
    real_save, real_write_text = safetensors.torch.save_file, Path.write_text

    def exported(path: Path) -> bool:  # written into the folder renamed into place as model/ (.model.XXXXXXXX.tmp)
        return path.parent.name.startswith(".model.")

    def save_file(tensors, filename, metadata=None):
        if not exported(Path(filename)):  # the checkpoints are written as before
            return real_save(tensors, filename, metadata=metadata)
        Path(filename).write_bytes(b"\0" * 64)  # what the writer got onto the disk before it failed
        reason = "No space left on device (os error 28)" if code == "ENOSPC" else "File too large (os error 27)"
        raise SafetensorError(f"Error while serializing: I/O error: {reason}")

    def write_text(self, *args, **kwargs):
        if self.name == "config.json" and exported(self):
            raise OSError(errno.EDQUOT, "Disk quota exceeded", str(self))
        return real_write_text(self, *args, **kwargs)

    if kind == "safetensors":
        monkeypatch.setattr(safetensors.torch, "save_file", save_file)
        written = "model.safetensors"
    else:
        monkeypatch.setattr(Path, "write_text", write_text)
        written = "config.json"
    out = tmp_path / "run"
    result = run_training(RunRequest(task="toy-classification", data=str(toy_csv), out=str(out), params={"epochs": "1"}))
    assert result.status == "failed" and result.exit_code == 1
    assert "failed in save_model" not in result.error and not result.failure, result.error
    assert words in result.error and "\n" not in result.error
    if words.startswith("is full"):
        assert result.error.startswith(f"the disk holding {out} is full (")
        assert f"while writing {Path('model') / written}" in result.error
    else:
        assert result.error.startswith(f"writing {out / 'model' / written} hit the file-size limit")
    assert RunDir(out).read()["error"] == result.error


def _file_size_limit(limit: int):
    """For ``preexec_fn``: a file-size limit, with SIGXFSZ ignored so a write past it fails with EFBIG (as ``ulimit -f`` in a shell)."""

    def apply():
        import resource
        import signal

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.mark.skipif(sys.platform == "win32", reason="no RLIMIT_FSIZE")
def test_a_file_size_limit_names_the_file_and_the_limit(toy_csv, tmp_path):
    out = tmp_path / "run"
    # a checkpoint (weights and the optimizer's moments) of about 270 kB, the model 90 kB: the checkpoint meets the limit
    result = cli("train", "toy-classification", "--data", toy_csv, "--out", out, "--set", "hidden=2048", "--epochs", "1", "--json",
                 preexec_fn=_file_size_limit(150_000))  # fmt: skip
    error = one_line_error(result, code=1)
    assert "SafetensorError" not in error and "failed in" not in error
    assert error.startswith(f"writing {out / 'checkpoints'}/") and ".safetensors" in error
    assert "hit the file-size limit of this process (150.0 kB" in error and "ulimit -f" in error
    assert RunDir(out).read()["status"] == "failed"
    assert list(out.rglob("*.tmp")) == []
