"""The training engine on the toy task: runs, resume, stop/pause, OOM, checkpoints."""

import json
import threading

import pytest
import torch

from helpers import FIXTURE_PLUGINS, assert_same_weights, subprocess_env
from helpers import checkpoint_weights as weights
from helpers import run_toy_classification as train
from trainlab.api.callbacks import Callback, RunControl
from trainlab.api.errors import UsageError
from trainlab.api.events import EvalResult, Finished, Log, Progress, Started, TrainStep
from trainlab.engine.scripting import RunRequest, run_training
from trainlab.runfolder.index import RunDir, RunStore
from trainlab.runfolder.tail import read_events


class Recorder(Callback):
    def __init__(self):
        self.events = []
        self.hooks = []

    def on_event(self, event):
        self.events.append(event)

    def on_run_start(self, state):
        self.hooks.append("run_start")

    def on_epoch_start(self, state):
        self.hooks.append(f"epoch_start:{state.epoch}")

    def on_epoch_end(self, state):
        self.hooks.append(f"epoch_end:{state.epoch}")

    def on_run_end(self, state):
        self.hooks.append("run_end")



def test_a_run_writes_the_contract_run_folder(toy_plugin, toy_csv, tmp_path):
    rec = Recorder()
    result = train(toy_csv, tmp_path, callbacks=[rec], epochs=3)
    assert result.status == "completed" and result.exit_code == 0
    assert result.epochs == 3 and result.steps == 36  # 180 train rows / batch 16 -> 12 steps per epoch
    assert result.metrics["accuracy"] > 0.8
    rd = RunDir(result.run_dir)
    record = rd.read()
    for key in ("schema_version", "task", "plugin", "parameters", "data", "label_names", "status", "error", "timings", "environment", "world_size"):
        assert key in record, key
    assert record["status"] == "completed" and record["data"]["fingerprint"]["files"] == 1
    assert record["environment"]["torch"] == torch.__version__
    kinds = [e.kind for e in read_events(rd.metrics_jsonl)]
    assert kinds[0] == "started" and kinds[-1] == "finished"
    assert {"train", "eval", "progress"} <= set(kinds)
    evals = [e for e in read_events(rd.metrics_jsonl) if isinstance(e, EvalResult)]
    assert [e.epoch for e in evals] == [1, 2, 3]
    report = json.loads(rd.eval_json.read_text())
    for key in ("accuracy", "macro_f1", "per_class", "confusion_matrix", "label_names", "misclassified"):
        assert key in report
    assert sum(map(sum, report["confusion_matrix"])) == 60
    assert rd.last_checkpoint.exists() and rd.best_checkpoint.exists()
    assert (rd.model_dir / "model.safetensors").exists()
    assert rec.hooks == ["run_start", "epoch_start:1", "epoch_end:1", "epoch_start:2", "epoch_end:2", "epoch_start:3", "epoch_end:3", "run_end"]
    assert isinstance(rec.events[0], Log) or isinstance(rec.events[0], Started)
    assert isinstance(rec.events[-1], Finished)
    assert RunStore().get(record["id"])["status"] == "completed"


def test_loss_is_read_back_at_intervals_not_every_step(toy_plugin, toy_csv, tmp_path):
    rec = Recorder()
    train(toy_csv, tmp_path, callbacks=[rec], epochs=2, log_interval=3600)
    steps = [e for e in rec.events if isinstance(e, TrainStep)]
    # one read per epoch end, each averaging the 12 steps of its epoch
    assert [(e.step, e.steps) for e in steps] == [(12, 12), (24, 12)]


def test_same_seed_same_result_and_other_seed_differs(toy_plugin, toy_csv, tmp_path):
    a = train(toy_csv, tmp_path, "a", epochs=1)
    b = train(toy_csv, tmp_path, "b", epochs=1)
    c = train(toy_csv, tmp_path, "c", epochs=1, seed=7)
    assert_same_weights(weights(a.run_dir), weights(b.run_dir))
    wa, wc = weights(a.run_dir), weights(c.run_dir)
    assert any(not torch.equal(wa[k], wc[k]) for k in wa)


class StopAfterEpoch(Callback):
    def __init__(self, control, epoch):
        self.control, self.epoch = control, epoch

    def on_epoch_end(self, state):
        if state.epoch == self.epoch:
            self.control.request_stop("test stop")


def test_resume_after_a_stop_gives_the_same_weights(toy_plugin, toy_csv, tmp_path):
    straight = train(toy_csv, tmp_path, "straight", epochs=2, final_weights="last")
    control = RunControl()
    first = train(toy_csv, tmp_path, "split", control=control, callbacks=[StopAfterEpoch(control, 1)], epochs=2, final_weights="last")
    assert first.status == "cancelled" and first.epochs == 1 and first.exit_code == 130
    assert RunDir(first.run_dir).read()["status"] == "cancelled"
    resumed = run_training(RunRequest(resume=first.run_dir))
    assert resumed.status == "completed" and resumed.epochs == 2 and resumed.steps == straight.steps
    assert_same_weights(weights(straight.run_dir), weights(resumed.run_dir))
    events = list(read_events(RunDir(resumed.run_dir).metrics_jsonl))
    assert [e.resumed for e in events if isinstance(e, Started)] == [False, True]


class StopAtStep(Callback):
    def __init__(self, control, step):
        self.control, self.step = control, step

    def on_step_end(self, state):
        if state.step == self.step:
            self.control.request_stop("test stop")


def test_stop_takes_effect_within_one_step_and_resume_mid_epoch_is_exact(toy_plugin, toy_csv, tmp_path):
    straight = train(toy_csv, tmp_path, "straight", epochs=2, final_weights="last")
    control = RunControl()
    first = train(toy_csv, tmp_path, "split", control=control, callbacks=[StopAtStep(control, 17)], epochs=2, final_weights="last")
    assert first.status == "cancelled" and first.steps == 17
    resumed = run_training(RunRequest(resume=first.run_dir))
    assert resumed.steps == 24
    assert_same_weights(weights(straight.run_dir), weights(resumed.run_dir))


def test_resume_after_a_kill_in_mid_epoch(toy_plugin, toy_csv, tmp_path):
    """SIGKILL a child-process run in mid-epoch, resume it, get the straight run's weights."""
    from trainlab.engine.run_process import RunProcess

    straight = train(toy_csv, tmp_path, "straight", epochs=2, final_weights="last", checkpoint_every_steps=4)
    request = RunRequest(
        task="toy-classification",
        data=str(toy_csv),
        out=str(tmp_path / "killed"),
        params={"epochs": "2", "final_weights": "last", "checkpoint_every_steps": "4", "step_delay": "0.02"},
    )
    child = RunProcess(request, env=subprocess_env([FIXTURE_PLUGINS]))
    child.start()
    killed = False
    for event in child.events():
        # the save at step 8 has begun, so the one at step 4 is complete
        if isinstance(event, Log) and event.message == "saving checkpoint at step 8":
            child.kill()
            killed = True
            break
    child.wait(30)
    assert killed, child.stderr_tail()
    rd = RunDir(tmp_path / "killed")
    assert rd.read()["status"] == "running"  # killed: nobody wrote the end
    assert RunStore().reconcile() == 1
    assert rd.read()["status"] == "failed" and "interrupted" in rd.read()["error"]
    resumed = run_training(RunRequest(resume=str(rd.path)))
    assert resumed.status == "completed" and resumed.steps == 24
    assert_same_weights(weights(straight.run_dir), weights(resumed.run_dir))


def test_train_more_epochs_continues_a_finished_run(toy_plugin, toy_csv, tmp_path):
    first = train(toy_csv, tmp_path, epochs=1)
    with pytest.raises(UsageError, match="already completed"):
        run_training(RunRequest(resume=first.run_dir))
    more = run_training(RunRequest(resume=first.run_dir, more_epochs=2))
    assert more.status == "completed" and more.epochs == 3 and more.steps == 36
    record = RunDir(first.run_dir).read()
    assert len(record["segments"]) == 2 and record["segments"][1]["start_step"] == 12
    lrs = [e.lr for e in read_events(RunDir(first.run_dir).metrics_jsonl) if isinstance(e, TrainStep)]
    assert len(lrs) >= 2


def test_pause_and_resume_in_the_same_process(toy_plugin, toy_csv, tmp_path):
    control = RunControl()
    paused = threading.Event()

    class PauseAt(Callback):
        def on_step_end(self, state):
            if state.step == 5:
                control.pause()

        def on_event(self, event):
            if isinstance(event, Progress) and event.phase == "paused":
                paused.set()

    result = {}
    thread = threading.Thread(target=lambda: result.update(r=train(toy_csv, tmp_path, callbacks=[PauseAt()], control=control, epochs=1)))
    thread.start()
    assert paused.wait(60), "the run never reported a pause"
    assert thread.is_alive() and control.paused
    control.resume()
    thread.join(60)
    assert result["r"].status == "completed" and result["r"].steps == 12


def test_out_of_memory_halves_the_micro_batch_and_keeps_the_effective_batch(toy_plugin, toy_csv, tmp_path):
    rec = Recorder()
    # fp32 whatever the CPU: the same batch in halves is the same sum up to float32 rounding (atol below)
    normal = train(toy_csv, tmp_path, "normal", epochs=1, final_weights="last", precision="fp32")
    oom = train(toy_csv, tmp_path, "oom", callbacks=[rec], epochs=1, final_weights="last", oom_above=5, precision="fp32")
    assert oom.status == "completed" and oom.steps == normal.steps
    messages = [e.message for e in rec.events if isinstance(e, Log) and "out of memory" in e.message]
    # 16 -> 8 -> 4: two retries, each logged
    assert len(messages) == 2 and "2x gradient accumulation" in messages[0] and "4x" in messages[1]
    a, b = weights(normal.run_dir), weights(oom.run_dir)
    for key in a:
        assert torch.allclose(a[key], b[key], atol=1e-5), key


def test_out_of_memory_past_three_retries_fails_with_advice(toy_plugin, toy_csv, tmp_path):
    result = train(toy_csv, tmp_path, epochs=1, oom_above=1)
    assert result.status == "failed" and result.exit_code == 1
    assert "out of memory" in result.error and "--batch-size" in result.error


def test_a_failing_task_fails_the_run_with_its_traceback(toy_plugin, toy_csv, tmp_path):
    result = train(toy_csv, tmp_path, epochs=1, fail_at_step=3)
    assert result.status == "failed" and "toy failure at step 3" in result.error
    record = RunDir(result.run_dir).read()
    assert record["status"] == "failed" and "RuntimeError" in record["traceback"]


def test_early_stopping(toy_plugin, toy_csv, tmp_path):
    rec = Recorder()
    result = train(toy_csv, tmp_path, callbacks=[rec], epochs=30, early_stopping_patience=1, monitor="loss", lr=0.5, seed=3)
    assert result.status == "completed" and result.epochs < 30
    assert any(isinstance(e, Log) and "early stopping" in e.message for e in rec.events)


def test_class_weighting_and_gradient_accumulation_run(toy_plugin, toy_csv, tmp_path):
    result = train(toy_csv, tmp_path, epochs=1, class_weighting="true", grad_accum=3, schedule="cosine")
    assert result.status == "completed" and result.steps == 4  # 12 batches / 3


def test_bad_parameters_and_data_are_usage_errors(toy_plugin, toy_csv, tmp_path):
    with pytest.raises(UsageError, match="unknown parameter 'nope'"):
        train(toy_csv, tmp_path, nope=1)
    with pytest.raises(UsageError, match="lr: -1.0 is below the minimum"):
        train(toy_csv, tmp_path, lr=-1)
    with pytest.raises(UsageError, match="CUDA is not available"):
        train(toy_csv, tmp_path, device="cuda")
    with pytest.raises(UsageError, match="no such file"):
        run_training(RunRequest(task="toy-classification", data=str(tmp_path / "missing.csv")))
    with pytest.raises(UsageError, match="unknown task 'nope'"):
        run_training(RunRequest(task="nope", data=str(toy_csv)))


def test_checkpoint_write_checks_free_disk_space(toy_plugin, toy_csv, tmp_path, monkeypatch):
    import shutil
    from collections import namedtuple

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**9, 10**9, 1000))
    result = train(toy_csv, tmp_path, epochs=1)
    assert result.status == "failed" and "not enough free disk space" in result.error


def test_checkpoints_are_safetensors_without_pickle(toy_plugin, toy_csv, tmp_path):
    from trainlab.engine.checkpoint import read_checkpoint

    result = train(toy_csv, tmp_path, epochs=1)
    tensors, plain = read_checkpoint(RunDir(result.run_dir).last_checkpoint)
    assert any(k.startswith("optim.") for k in tensors) and "rng.torch" in tensors
    assert plain["meta"]["position"]["step"] == 12
    assert not list(RunDir(result.run_dir).checkpoints.glob("*.tmp"))


def test_stale_running_run_is_marked_failed(tmp_path):
    store = RunStore()
    rd = RunDir(tmp_path / "ghost")
    rd.path.mkdir()
    record = {"id": "ghost", "task": "toy-classification", "status": "running", "timings": {"started": 1.0}}
    rd.write(record)
    store.record(record, rd.path)
    import sqlite3

    with sqlite3.connect(store.db_path) as db:  # a pid that is not alive
        db.execute("UPDATE runs SET pid=999999, proc_start=1.0 WHERE id='ghost'")
    assert store.reconcile() == 1
    assert store.get("ghost")["status"] == "failed"
    assert rd.read()["status"] == "failed"


def test_run_index_uses_wal(tmp_path):
    assert RunStore().journal_mode == "wal"


def test_run_index_falls_back_from_wal_on_network_filesystems(tmp_path, monkeypatch):
    import trainlab.runfolder.index as runs

    monkeypatch.setattr(runs, "_on_network_fs", lambda path: True)
    store = RunStore(tmp_path / "index.sqlite3")
    assert store.journal_mode == "delete"
    rd = RunDir(tmp_path / "r")
    rd.path.mkdir()
    record = {"id": "r1", "task": "t", "status": "completed", "timings": {"started": 1.0}}
    store.record(record, rd.path)
    assert store.list()[0]["id"] == "r1"


def test_bad_input_found_after_the_run_began_is_still_a_usage_error(toy_plugin, toy_csv, tmp_path, monkeypatch):
    import toy_task

    def build_model(self, ctx):
        raise UsageError("weights file /nowhere/w.safetensors is missing")

    monkeypatch.setattr(toy_task.ToyTask, "build_model", build_model)
    with pytest.raises(UsageError, match="w.safetensors is missing"):
        train(toy_csv, tmp_path, epochs=1)
    record = RunDir(tmp_path / "run").read()
    assert record["status"] == "failed" and "w.safetensors" in record["error"]


def test_loader_workers_persist_across_epochs(toy_plugin, toy_csv, tmp_path, monkeypatch):
    import toy_task

    monkeypatch.setattr(toy_task.ToyTask, "loader_options", lambda self, split, ctx: {"num_workers": 1, "persistent_workers": True}, raising=False)
    made = []
    real = torch.utils.data.DataLoader.__init__

    def counting_init(self, *args, **kwargs):
        made.append(kwargs.get("persistent_workers"))
        real(self, *args, **kwargs)

    monkeypatch.setattr(torch.utils.data.DataLoader, "__init__", counting_init)
    straight = train(toy_csv, tmp_path, "w", epochs=3, final_weights="last")
    assert straight.status == "completed"
    assert made == [True, True]  # one loader for train, one for val, for all three epochs


# -- plan_run / execute, one outcome, evaluation without an optimizer -------------------------


def toy_request(toy_csv, tmp_path, name="run", **params):
    return RunRequest(task="toy-classification", data=str(toy_csv), params={k: str(v) for k, v in params.items()}, out=str(tmp_path / name))


def test_plan_run_writes_nothing_and_execute_replays_what_planning_said(toy_plugin, toy_csv, tmp_path, monkeypatch):
    import toy_task

    from trainlab.engine.execute import execute
    from trainlab.engine.plan import plan_run

    real_prepare = toy_task.ToyTask.prepare

    def talking_prepare(self, data_path, ctx, label_names=None):
        ctx.log("read 240 rows")
        return real_prepare(self, data_path, ctx, label_names)

    monkeypatch.setattr(toy_task.ToyTask, "prepare", talking_prepare)
    heard = []
    plan = plan_run(toy_request(toy_csv, tmp_path, epochs=2), log=heard.append)
    assert not (tmp_path / "run").exists()  # planned: nothing written
    assert [e.message for e in heard] == ["read 240 rows"]
    described = json.loads(json.dumps(plan.to_json()))  # plain values (a dry run prints this)
    assert described["total_steps"] == 24 and described["steps_per_epoch"] == 12 and described["epochs"] == 2
    assert described["run_dir"] == str(tmp_path / "run") and described["parameters"]["epochs"] == 2

    rec = Recorder()
    outcome = execute(plan, callbacks=[rec])
    assert outcome.status == "completed" and outcome.steps == 24
    events = list(read_events(RunDir(outcome.run_dir).metrics_jsonl))
    assert isinstance(events[0], Log) and events[0].message == "read 240 rows"  # said before the folder existed
    assert not any(isinstance(e, Log) and e.message == "read 240 rows" for e in rec.events)  # not told twice


def test_total_steps_come_from_the_tasks_own_batch_order(toy_plugin, toy_csv, tmp_path, monkeypatch):
    """A task whose batches are not ceil(rows / batch_size): every event counts the steps the loop makes."""
    import toy_task

    from trainlab.api.taskbase import Task

    def half_size_batches(self, split, epoch, batch_size, seed):
        return Task.batch_order(self, split, epoch, max(1, batch_size // 2), seed)

    monkeypatch.setattr(toy_task.ToyTask, "batch_order", half_size_batches, raising=False)
    rec = Recorder()
    result = train(toy_csv, tmp_path, callbacks=[rec], epochs=2, log_interval=0)
    assert result.status == "completed" and result.steps == 46  # 180 rows in batches of 8: 23 per epoch
    started = next(e for e in rec.events if isinstance(e, Started))
    assert started.total_steps == 46
    assert {e.total_steps for e in rec.events if isinstance(e, Progress)} == {46}


def test_one_outcome_type_with_one_exit_code(toy_plugin, toy_csv, tmp_path):
    from trainlab.api.events import event_from_json
    from trainlab.engine.outcome import RunOutcome
    import trainlab.engine.scripting as scripting

    with pytest.warns(DeprecationWarning, match="RunOutcome"):
        assert scripting.RunResult is RunOutcome  # the old name still works, saying which to use
    rec = Recorder()
    outcome = train(toy_csv, tmp_path, callbacks=[rec], epochs=2)
    assert isinstance(outcome, RunOutcome) and outcome.exit_code == 0
    record = RunDir(outcome.run_dir).read()
    assert outcome.best == record["best"] and outcome.best["metric"] == "accuracy"
    finished = rec.events[-1]
    # what a parent process rebuilds from the Finished line is the outcome itself
    assert RunOutcome.from_finished(event_from_json(finished.to_json())) == outcome
    assert RunOutcome.from_json(json.loads(json.dumps(outcome.to_json()))) == outcome
    assert outcome.to_json()["exit_code"] == 0
    codes = {
        RunOutcome(run_dir="", status="completed", task="t").exit_code,
        RunOutcome(run_dir="", status="cancelled", task="t").exit_code,
        RunOutcome(run_dir="", status="failed", task="t", usage_error=True).exit_code,
        RunOutcome(run_dir="", status="failed", task="t").exit_code,
    }
    assert codes == {0, 130, 2, 1}


def test_a_child_process_returns_the_same_outcome(toy_plugin, toy_csv, tmp_path):
    from trainlab.engine.run_process import RunProcess
    from trainlab.engine.outcome import RunOutcome

    child = RunProcess(toy_request(toy_csv, tmp_path, "child", epochs=2), env=subprocess_env([FIXTURE_PLUGINS]))
    child.start()
    for _ in child.events():
        pass
    code = child.wait(120)
    outcome = child.result(code)
    assert code == outcome.exit_code == 0, child.stderr_tail()
    finished = [e for e in read_events(RunDir(tmp_path / "child").metrics_jsonl) if isinstance(e, Finished)][-1]
    assert outcome == RunOutcome.from_finished(finished)  # what the child's engine returned
    record = RunDir(tmp_path / "child").read()
    assert outcome.best == record["best"] and outcome.best  # `best` survives the trip
    assert (outcome.steps, outcome.epochs, outcome.run_dir) == (24, 2, str(tmp_path / "child"))


def test_bad_input_found_late_is_an_outcome_with_exit_code_2(toy_plugin, toy_csv, tmp_path, monkeypatch):
    import toy_task

    from trainlab.engine.execute import execute
    from trainlab.engine.plan import plan_run

    def build_model(self, ctx):
        raise UsageError("weights file /nowhere/w.safetensors is missing")

    monkeypatch.setattr(toy_task.ToyTask, "build_model", build_model)
    outcome = execute(plan_run(toy_request(toy_csv, tmp_path, epochs=1)))
    assert outcome.status == "failed" and outcome.usage_error and outcome.exit_code == 2
    assert "w.safetensors" in outcome.error and RunDir(outcome.run_dir).read()["status"] == "failed"


def test_evaluating_a_run_builds_no_optimizer(toy_plugin, toy_csv, tmp_path, monkeypatch):
    from trainlab.engine.scripting import evaluate_run

    result = train(toy_csv, tmp_path, epochs=2)

    def no_optimizer(*args, **kwargs):
        raise AssertionError("evaluation built an optimizer")

    monkeypatch.setattr(torch.optim.AdamW, "__init__", no_optimizer)
    monkeypatch.setattr(torch.optim.SGD, "__init__", no_optimizer)
    report = evaluate_run(result.run_dir)
    assert report["accuracy"] == result.metrics["accuracy"] and report["split"] == "val"
    assert sum(map(sum, report["confusion_matrix"])) == 60


def test_a_broken_plugin_callback_is_reported_in_metrics_jsonl(toy_plugin, toy_csv, tmp_path):
    import trainlab
    from trainlab.pluginhost.host import registry

    class Broken(Callback):
        def on_event(self, event):
            if isinstance(event, EvalResult):
                raise RuntimeError("callback bug")

    class BrokenPlugin:
        @trainlab.hookimpl
        def trainlab_api_version(self):
            return "1.0"

        @trainlab.hookimpl
        def trainlab_run_callbacks(self, task_id, params):
            return [Broken()]

    assert registry().add_plugin(BrokenPlugin(), "broken-callback").status == "ok"
    result = train(toy_csv, tmp_path, epochs=2)
    assert result.status == "completed"  # the plugin's callback is dropped, the run goes on
    logs = [e for e in read_events(RunDir(result.run_dir).metrics_jsonl) if isinstance(e, Log) and "callback bug" in e.message]
    assert len(logs) == 1 and logs[0].level == "warning" and "disabled" in logs[0].message


def test_the_engine_modules_import_without_torch():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from trainlab.engine.scripting import RunRequest, run_training, evaluate_run, predict\n"
        "from trainlab.engine.plan import plan_run\nfrom trainlab.engine.execute import execute\n"
        "from trainlab.engine.prepare import prepare_task\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"  # the window imports RunRequest on its GUI thread


def test_a_stop_while_preparing_ends_the_preparation_and_writes_nothing(toy_plugin, toy_csv, tmp_path, monkeypatch):
    import toy_task

    from trainlab import StopRequested

    real_prepare = toy_task.ToyTask.prepare

    def long_scan(self, data_path, ctx, label_names=None):
        if ctx.should_stop():  # what a long scan asks between files
            raise StopRequested(f"the scan of {data_path} was stopped on request")
        return real_prepare(self, data_path, ctx, label_names)

    monkeypatch.setattr(toy_task.ToyTask, "prepare", long_scan)
    control = RunControl()
    control.request_stop()  # Stop pressed while the data is read
    with pytest.raises(StopRequested, match="stopped on request"):
        run_training(toy_request(toy_csv, tmp_path, epochs=1), control=control)
    assert not (tmp_path / "run").exists()
    outcome = run_training(toy_request(toy_csv, tmp_path, epochs=1))  # not stopped: prepares and trains
    assert outcome.status == "completed"
