"""Crash safety: a run is resumable from any moment, aborts say what they left,
stale temporaries go, and a NaN loss fails the run before its export."""

from __future__ import annotations

import functools
import json
import signal
import subprocess
import sys

import pytest
import torch

from helpers import FIXTURE_PLUGINS, assert_same_weights, one_json_line, run_trainlab, subprocess_env
from helpers import checkpoint_weights as model_weights
from helpers import run_toy_classification as train
from trainlab.api.callbacks import Callback, RunControl
from trainlab.api.errors import UsageError
from trainlab.api.events import Log, Progress, Started, TrainStep
from trainlab.engine.run_process import RunProcess
from trainlab.engine.scripting import RunRequest, run_training
from trainlab.runfolder.index import RunDir, RunStore
from trainlab.runfolder.tail import read_events


def logs(run_dir) -> list[str]:
    return [e.message for e in read_events(RunDir(run_dir).metrics_jsonl) if isinstance(e, Log)]


def flip_a_data_byte(path):
    raw = bytearray(path.read_bytes())
    start = 8 + int.from_bytes(raw[:8], "little")
    raw[start + (len(raw) - start) // 2] ^= 0x01
    path.write_bytes(bytes(raw))


cli = functools.partial(run_trainlab, extra_path=[FIXTURE_PLUGINS])


# -- resumable from any moment ---------------------------------------------------------


def test_a_kill_before_any_checkpoint_resumes_from_step_0_in_the_same_folder(toy_plugin, toy_csv, tmp_path):
    straight = train(toy_csv, tmp_path, "straight", epochs=2, final_weights="last")
    out = tmp_path / "killed"
    child = RunProcess(
        RunRequest(task="toy-classification", data=str(toy_csv), out=str(out),
                   params={"epochs": "2", "final_weights": "last", "step_delay": "0.02", "log_interval": "0"}),
        env=subprocess_env([FIXTURE_PLUGINS]),
    )  # fmt: skip
    child.start()
    for event in child.events():
        if isinstance(event, TrainStep) and event.step >= 3:  # in epoch 1: nothing saved yet
            child.kill()
            break
    child.wait(30)
    rd = RunDir(out)
    assert not rd.last_checkpoint.exists() and rd.read()["status"] == "running"

    listed = one_json_line(cli("runs", "--json"))["runs"]  # finds it stale: interrupted, with the command that resumes it
    row = next(r for r in listed if r["run_dir"] == str(rd.path))
    assert row["status"] == "failed"
    record = rd.read()
    assert record["status"] == "failed" and record["error"].startswith("interrupted:")
    assert f"trainlab train --resume {rd.path}" in record["error"]
    assert "interrupted" in cli("runs").stdout

    resumed = run_training(RunRequest(resume=str(out)))
    assert resumed.status == "completed" and resumed.steps == 24 and resumed.run_dir == str(rd.path)
    assert_same_weights(model_weights(straight.run_dir), model_weights(out))
    assert any("restarting it from step 0 in the same folder" in m for m in logs(out))
    started = [e for e in read_events(rd.metrics_jsonl) if isinstance(e, Started)]
    assert [(e.resumed, e.step) for e in started] == [(False, 0), (True, 0)]


class Saves(Callback):
    def __init__(self):
        self.steps = []

    def on_event(self, event):
        if isinstance(event, Log) and event.message.startswith("saving checkpoint at step "):
            self.steps.append(int(event.message.rsplit(" ", 1)[1]))


def test_checkpoints_are_also_written_by_time_between_steps(toy_plugin, toy_csv, tmp_path):
    from trainlab.engine.checkpoint import checkpoint_position

    saves = Saves()
    # 0.002 minutes: every 0.12 s; at 0.05 s a step, every few steps
    result = train(toy_csv, tmp_path, callbacks=[saves], epochs=1, step_delay=0.05, checkpoint_every_minutes=0.002)
    assert result.status == "completed"
    mid_epoch = [s for s in saves.steps if s % 12]
    assert len(mid_epoch) >= 2, saves.steps
    assert saves.steps == sorted(set(saves.steps)) and saves.steps[-1] == 12
    assert checkpoint_position(RunDir(result.run_dir).last_checkpoint)["step"] == 12


def test_by_default_a_run_checkpoints_every_10_minutes(toy_plugin):
    from trainlab.api.params import ENGINE_PARAMS

    assert {p.name: p.default for p in ENGINE_PARAMS}["checkpoint_every_minutes"] == 10.0


def test_resume_from_a_time_checkpoint_is_exact(toy_plugin, toy_csv, tmp_path):
    straight = train(toy_csv, tmp_path, "straight", epochs=1, final_weights="last")
    control = RunControl()

    class KillAfterAMidEpochSave(Saves):
        def on_event(self, event):
            super().on_event(event)
            if self.steps and self.steps[-1] % 12 and isinstance(event, TrainStep) and event.step > self.steps[-1]:
                raise KeyboardInterrupt  # as a second Ctrl-C would, after the save

    with pytest.raises(KeyboardInterrupt):
        train(toy_csv, tmp_path, "split", callbacks=[KillAfterAMidEpochSave()], control=control, epochs=1,
              final_weights="last", step_delay=0.05, checkpoint_every_minutes=0.002, log_interval=0)  # fmt: skip
    record = RunDir(tmp_path / "split").read()
    assert record["status"] == "cancelled" and "--resume continues from the last one" in record["error"]
    resumed = run_training(RunRequest(resume=str(tmp_path / "split")))
    assert resumed.status == "completed" and resumed.steps == 12
    assert_same_weights(model_weights(straight.run_dir), model_weights(resumed.run_dir))


# -- two Ctrl-C ----------------------------------------------------------------------------


def abort_with_two_ctrl_c(out, toy_csv, epochs: int, wait_for: str):
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainlab", "train", "toy-classification", "--data", str(toy_csv), "--out", str(out),
         "--epochs", str(epochs), "--set", "step_delay=0.2", "--set", "final_weights=last", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=subprocess_env([FIXTURE_PLUGINS]),
    )  # fmt: skip
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if wait_for in line:
            break
    if epochs > 1:
        # the epoch's checkpoint is written right after its evaluation is told;
        # 50 ms after it, the run is inside the next step (of 200 ms)
        import time

        last, deadline = out / "checkpoints" / "last.safetensors", time.monotonic() + 30
        while time.monotonic() < deadline and not (last.exists() and time.time() - last.stat().st_mtime > 0.05):
            pass
    proc.send_signal(signal.SIGINT)
    for line in proc.stderr:  # the first one was taken: a stop after this step (of 0.2 s)
        seen.append(line)
        if "Ctrl-C again to abort" in line:
            break
    proc.send_signal(signal.SIGINT)  # within a few ms: the second aborts, inside the same step
    stdout, stderr = proc.communicate(timeout=120)
    return proc.returncode, stdout, "".join(seen) + stderr


@pytest.mark.long
def test_two_ctrl_c_before_any_checkpoint_say_so_and_resume_restarts_from_step_0(toy_plugin, toy_csv, tmp_path):
    out = tmp_path / "run"
    code, stdout, stderr = abort_with_two_ctrl_c(out, toy_csv, 1, "run folder:")
    assert code == 130, stderr
    assert json.loads(stdout)["exit_code"] == 130 and "Traceback" not in stderr
    record = RunDir(out).read()
    assert record["status"] == "cancelled"
    assert record["error"] == "aborted before a checkpoint was written: --resume restarts the run from step 0"
    assert not RunDir(out).last_checkpoint.exists()
    straight = train(toy_csv, tmp_path, "straight", epochs=1, final_weights="last")
    resumed = run_training(RunRequest(resume=str(out)))
    assert resumed.status == "completed" and resumed.steps == 12
    assert_same_weights(model_weights(straight.run_dir), model_weights(out))


@pytest.mark.long
def test_two_ctrl_c_after_a_checkpoint_say_where_resume_continues(toy_plugin, toy_csv, tmp_path):
    out = tmp_path / "run"
    code, _, stderr = abort_with_two_ctrl_c(out, toy_csv, 2, "epoch 1: val loss")
    assert code == 130, stderr
    record = RunDir(out).read()
    assert record["status"] == "cancelled", stderr
    # in step 13, before it counted: nothing after the checkpoint of step 12 was lost
    assert record["status"] == "cancelled" and record["error"] == "aborted after the checkpoint of step 12: --resume continues from it"
    straight = train(toy_csv, tmp_path, "straight", epochs=2, final_weights="last")
    resumed = run_training(RunRequest(resume=str(out)))
    assert resumed.status == "completed" and resumed.steps == 24
    assert_same_weights(model_weights(straight.run_dir), model_weights(out))



# The real CLI, with the write of the last checkpoint made slow enough (in the
# child) for a second Ctrl-C to land in the middle of it; it says when it begins.
SLOW_LAST_CHECKPOINT = """
import runpy, sys, time
import safetensors.torch as st

real = st.save_file

def save_file(tensors, filename, metadata=None):
    if ".last.safetensors." in str(filename):
        print("test: writing the last checkpoint", file=sys.stderr, flush=True)
        time.sleep(1.0)
    return real(tensors, filename, metadata=metadata)

st.save_file = save_file
sys.argv = ["trainlab", *sys.argv[1:]]
runpy.run_module("trainlab", run_name="__main__")
"""


def test_a_second_ctrl_c_during_the_stops_checkpoint_lets_it_finish_and_json_has_the_whole_object(toy_plugin, toy_csv, tmp_path):
    from trainlab.engine.checkpoint import checkpoint_step, verify_checkpoint

    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_LAST_CHECKPOINT, "train", "toy-classification", "--data", str(toy_csv), "--out", str(out),
         "--epochs", "1", "--set", "step_delay=0.2", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=subprocess_env([FIXTURE_PLUGINS]),
    )  # fmt: skip
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if "run folder:" in line:
            proc.send_signal(signal.SIGINT)  # stop after this step: its checkpoint is written
        if "test: writing the last checkpoint" in line:
            proc.send_signal(signal.SIGINT)  # the second, in the middle of that checkpoint
            break
    stdout, stderr = proc.communicate(timeout=120)
    stderr = "".join(seen) + stderr
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    data = one_json_line(subprocess.CompletedProcess([], 130, stdout, stderr))
    assert data["run_dir"] == str(out) and data["status"] == "cancelled" and data["exit_code"] == 130
    assert data["steps"] >= 1 and data["task"] == "toy-classification"
    last = RunDir(out).last_checkpoint
    assert verify_checkpoint(last) == "verified" and checkpoint_step(last) == data["steps"]
    record = RunDir(out).read()
    assert record["status"] == "cancelled"
    assert record["error"] == f"aborted after the checkpoint of step {data['steps']}: --resume continues from it"
    assert list(out.rglob("*.tmp")) == []


SLOW_PREPARATION = """
import runpy, sys, time
import toy_task

real = toy_task.ToyTask.prepare

def prepare(self, *args, **kwargs):
    print("test: preparing the data", file=sys.stderr, flush=True)
    time.sleep(3)
    return real(self, *args, **kwargs)

toy_task.ToyTask.prepare = prepare
sys.argv = ["trainlab", *sys.argv[1:]]
runpy.run_module("trainlab", run_name="__main__")
"""


def test_two_ctrl_c_before_the_run_began_still_print_the_whole_object(toy_plugin, toy_csv, tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_PREPARATION, "train", "toy-classification", "--data", str(toy_csv), "--out", str(tmp_path / "run"), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=subprocess_env([FIXTURE_PLUGINS]),
    )  # fmt: skip
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if "test: preparing the data" in line:
            proc.send_signal(signal.SIGINT)
        if "Ctrl-C again to abort" in line:
            proc.send_signal(signal.SIGINT)
            break
    stdout, stderr = proc.communicate(timeout=120)
    stderr = "".join(seen) + stderr
    assert proc.returncode == 130 and "Traceback" not in stderr, stderr
    data = one_json_line(subprocess.CompletedProcess([], 130, stdout, stderr))
    assert data["status"] == "cancelled" and data["steps"] == 0 and data["run_dir"] == "" and data["exit_code"] == 130
    assert data["task"] == "toy-classification" and data["error"].startswith("interrupted before the run began")
    assert "resume with" not in stderr


def test_a_stop_during_the_final_evaluation_cancels_the_run_and_resume_finishes_it(toy_plugin, toy_csv, tmp_path):
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainlab", "train", "toy-classification", "--data", str(toy_csv), "--out", str(out),
         "--epochs", "1", "--set", "eval_delay=0.1", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=subprocess_env([FIXTURE_PLUGINS]),
    )  # fmt: skip
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if "final evaluation" in line:
            proc.send_signal(signal.SIGTERM)
            break
    stdout, stderr = proc.communicate(timeout=120)
    stderr = "".join(seen) + stderr
    assert proc.returncode == 130, stderr
    data = json.loads(stdout)
    assert data["status"] == "cancelled" and data["steps"] == 12 and data["run_dir"] == str(out)
    assert "final evaluation" in data["error"] and "--resume" in data["error"]
    assert not (out / "eval.json").exists() and not (out / "model" / "model.safetensors").exists()
    assert RunDir(out).read()["status"] == "cancelled"
    resumed = run_training(RunRequest(resume=str(out)))
    assert resumed.status == "completed" and resumed.steps == 12, resumed.error
    assert (out / "eval.json").exists() and (out / "model" / "model.safetensors").exists()


# -- damaged checkpoints on resume --------------------------------------------------------------


class StopAfterEpoch(Callback):
    def __init__(self, control, epoch):
        self.control, self.epoch = control, epoch

    def on_epoch_end(self, state):
        if state.epoch == self.epoch:
            self.control.request_stop("test stop")


def test_a_damaged_last_checkpoint_falls_back_to_best_and_says_so(toy_plugin, toy_csv, tmp_path):
    control = RunControl()
    first = train(toy_csv, tmp_path, control=control, callbacks=[StopAfterEpoch(control, 1)], epochs=3)
    rd = RunDir(first.run_dir)
    assert first.status == "cancelled" and rd.best_checkpoint.exists()
    flip_a_data_byte(rd.last_checkpoint)
    resumed = run_training(RunRequest(resume=first.run_dir))
    assert resumed.status == "completed" and resumed.steps == 36 and resumed.epochs == 3
    said = [m for m in logs(rd.path) if "continuing from the best checkpoint instead" in m]
    assert len(said) == 1 and f"checkpoint {rd.last_checkpoint} is damaged" in said[0] and "step 12" in said[0]
    assert "optimizer's state started afresh" in said[0]
    from trainlab.engine.checkpoint import verify_checkpoint

    assert verify_checkpoint(rd.last_checkpoint) == "verified"  # replaced by the resumed run's


def test_both_checkpoints_damaged_is_exit_2_naming_the_file(toy_plugin, toy_csv, tmp_path):
    control = RunControl()
    first = train(toy_csv, tmp_path, control=control, callbacks=[StopAfterEpoch(control, 1)], epochs=3)
    rd = RunDir(first.run_dir)
    flip_a_data_byte(rd.last_checkpoint)
    flip_a_data_byte(rd.best_checkpoint)
    before = rd.run_json.read_bytes()
    result = cli("train", "--resume", rd.path, "--json")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    error = one_json_line(result)["error"]
    assert f"checkpoint {rd.last_checkpoint} is damaged" in error and "best checkpoint is unusable too" in error
    assert "\n" not in error and rd.run_json.read_bytes() == before


def test_a_damaged_checkpoint_never_turns_a_completed_run_into_failed(toy_plugin, toy_csv, tmp_path):
    first = train(toy_csv, tmp_path, epochs=1)
    rd = RunDir(first.run_dir)
    flip_a_data_byte(rd.last_checkpoint)
    before = rd.run_json.read_bytes()
    with pytest.raises(UsageError, match=f"checkpoint {rd.last_checkpoint} is damaged"):
        run_training(RunRequest(resume=first.run_dir, more_epochs=1))
    assert rd.run_json.read_bytes() == before and rd.read()["status"] == "completed"
    assert RunStore().get(rd.read()["id"])["status"] == "completed"


# -- temporaries ---------------------------------------------------------------------------------


def plant_temporaries(rd: RunDir) -> list:
    (rd.model_dir).mkdir(exist_ok=True)
    planted = [
        rd.checkpoints / ".last.safetensors.k2j4h5g6.tmp",
        rd.model_dir / ".model.pt2.abcd_123.tmp",
        rd.path / ".run.json.x1y2z3w4.tmp",
        # safetensors' own temporaries, beside the file it writes (a kill inside its write leaves one)
        rd.checkpoints / ".tmpcocmcU",
        rd.model_dir / ".tmpXvNzQ4",
        # an export killed before its folder was renamed into place as model/ (and, of the text
        # plugins before they used atomic_write_folder, their own folders beside it)
        rd.path / ".model.k2j4_5g6.tmp" / "model.safetensors",
        rd.path / ".model.tmp-0a1b2c3d" / "config.json",
        rd.path / ".adapter.old-0a1b2c3d" / "adapter_config.json",
    ]
    for path in planted:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"\0" * 4096)
    return planted


def test_stale_temporaries_go_on_resume_and_at_the_end_of_a_run(toy_plugin, toy_csv, tmp_path):
    control = RunControl()
    first = train(toy_csv, tmp_path, control=control, callbacks=[StopAfterEpoch(control, 1)], epochs=2)
    rd = RunDir(first.run_dir)
    keep = rd.path / "notes.tmp"  # not a temporary of ours
    keep.write_text("mine")
    also_kept = rd.path / ".tmp-notes"
    also_kept.write_text("mine")
    planted = plant_temporaries(rd)

    class SeesThemGone(Callback):
        def on_run_start(self, state):
            self.left = [p for p in planted if p.exists()]

    check = SeesThemGone()
    run_training(RunRequest(resume=first.run_dir), callbacks=[check])
    assert check.left == []  # removed before the resumed run wrote anything
    assert [p.name for p in rd.path.iterdir() if p.name.startswith(".")] == [".tmp-notes"]  # the folders they were in too
    assert keep.read_text() == "mine" and also_kept.read_text() == "mine"

    class PlantsMidRun(Callback):
        def on_epoch_end(self, state):
            plant_temporaries(RunDir(state.run_dir))

    second = train(toy_csv, tmp_path, "second", callbacks=[PlantsMidRun()], epochs=1)
    assert second.status == "completed"
    assert list(RunDir(second.run_dir).path.rglob("*.tmp")) == [] and list(RunDir(second.run_dir).path.rglob(".tmp*")) == []
    assert not (RunDir(second.run_dir).path / ".trainlab-reserved-space").exists()


def test_a_reserve_that_cannot_be_removed_is_tried_again_and_then_named(toy_plugin, toy_csv, tmp_path, monkeypatch, capsys):
    """An I/O error removing the space reserve at the end: tried again once run.json is written;
    one that persists leaves a completed run and a line naming the file, not a silent 1 MiB."""
    import errno
    import pathlib

    real_unlink = pathlib.Path.unlink
    failures = {"left": 1}

    def unlink(self, missing_ok=False):
        if self.name == ".trainlab-reserved-space" and failures["left"] > 0:
            failures["left"] -= 1
            raise OSError(errno.EIO, "Input/output error", str(self))
        return real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(pathlib.Path, "unlink", unlink)
    once = train(toy_csv, tmp_path, "once", epochs=1)
    assert once.status == "completed" and failures["left"] == 0
    assert not (RunDir(once.run_dir).path / ".trainlab-reserved-space").exists()
    assert "could not be removed" not in capsys.readouterr().err

    failures["left"] = 2
    always = train(toy_csv, tmp_path, "always", epochs=1)
    reserve = RunDir(always.run_dir).path / ".trainlab-reserved-space"
    assert always.status == "completed" and failures["left"] == 0
    assert json.loads((RunDir(always.run_dir).path / "run.json").read_text())["status"] == "completed"
    assert reserve.exists()
    err = capsys.readouterr().err
    assert f"trainlab: {reserve} could not be removed (Input/output error)" in err


# -- a kill during the export ---------------------------------------------------------------------


def kill_during_the_export(request, out, newer_than_ns: int = 0) -> None:
    """Run ``request`` in a child process and SIGKILL it once its export has written
    model.safetensors (the toy task then sleeps export_delay before config.json)."""
    import time

    child = RunProcess(request, env=subprocess_env([FIXTURE_PLUGINS]))
    child.start()
    for event in child.events():
        if isinstance(event, Progress) and event.phase == "save":
            break
    deadline = time.monotonic() + 60

    def written() -> bool:
        for path in out.rglob("model.safetensors"):
            try:
                if path.stat().st_mtime_ns > newer_than_ns:
                    return True
            except FileNotFoundError:  # renamed meanwhile
                pass
        return False

    while time.monotonic() < deadline and not written():
        pass
    assert written(), "the export never began"
    child.kill()
    child.wait(30)


def model_files(run_dir) -> dict:
    folder = RunDir(run_dir).model_dir
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def assert_a_complete_model(run_dir) -> None:
    """model/ holds the last checkpoint's weights and a config that reads, and the run folder no temporary."""
    from safetensors.torch import load_file

    rd = RunDir(run_dir)
    config = json.loads((rd.model_dir / "config.json").read_text())
    assert config["labels"] and config["features"]
    exported = load_file(str(rd.model_dir / "model.safetensors"))
    assert_same_weights({f"model.{k}": v for k, v in exported.items()}, model_weights(run_dir))
    assert [p.name for p in rd.path.iterdir() if p.name.startswith(".")] == []


def test_a_kill_during_the_export_leaves_no_half_written_model_and_resume_writes_it_whole(toy_plugin, toy_csv, tmp_path):
    out = tmp_path / "run"
    params = {"epochs": "1", "final_weights": "last", "export_delay": "1", "log_interval": "0"}
    kill_during_the_export(RunRequest(task="toy-classification", data=str(toy_csv), out=str(out), params=params), out)
    rd = RunDir(out)
    assert rd.read()["status"] == "running"  # killed: no end was written
    assert not rd.model_dir.exists()  # not a model/ holding weights and no config.json

    resumed = run_training(RunRequest(resume=str(out)))
    assert resumed.status == "completed"
    assert_a_complete_model(out)

    # a re-export (--more-epochs) killed half-way keeps the complete model/ it replaces
    before = model_files(out)
    newer_than = (rd.model_dir / "model.safetensors").stat().st_mtime_ns
    kill_during_the_export(RunRequest(resume=str(out), more_epochs=1), out, newer_than)
    assert model_files(out) == before

    resumed = run_training(RunRequest(resume=str(out)))
    assert resumed.status == "completed" and resumed.steps == 24
    assert_a_complete_model(out)
    assert model_files(out)["model.safetensors"] != before["model.safetensors"]


# -- a loss that is NaN ------------------------------------------------------------------------------


@pytest.mark.parametrize("log_interval, nan_from", [(1, 1), (0.25, 5), (3600, 7)])
def test_a_nan_loss_fails_the_run_before_export_naming_the_first_bad_step(toy_plugin, toy_csv, tmp_path, log_interval, nan_from):
    result = train(toy_csv, tmp_path, epochs=2, log_interval=log_interval, nan_from_step=nan_from, checkpoint_every_steps=4)
    rd = RunDir(result.run_dir)
    assert result.status == "failed" and result.exit_code == 1
    record = rd.read()
    assert record["status"] == "failed" and record["error"] == result.error
    assert f"the training loss is NaN from step {nan_from} on (task toy-classification, plugin toy)" in result.error
    if nan_from == 1:
        assert "the data" in result.error and "rather than the learning rate" in result.error
    else:
        assert "--lr" in result.error
    assert not rd.model_dir.exists() and not rd.eval_json.exists()  # nothing exported
    from trainlab.engine.checkpoint import checkpoint_position

    if nan_from > 4:  # the good checkpoint of step 4 is kept, not replaced by a diverged model
        assert checkpoint_position(rd.last_checkpoint)["step"] == 4
        assert all(torch.isfinite(t).all() for t in model_weights(rd.path).values())
    else:
        assert not rd.last_checkpoint.exists()
