"""A failure in a plugin's code names the plugin and the method, wherever the user meets it.

The faulty fixture plugin (tests/fixtures/broken_plugins/faulty) raises in
the method its ``fail_in`` parameter names; the toy plugin's own failures
(``fail_at_step``) and the engine's verdicts (out of memory) are checked too.
"""

from __future__ import annotations

import json

import pytest

from helpers import FAULTY_PLUGIN, one_json_line, write_toy_csv
from trainlab.engine.plugin_calls import PluginCallError, failure_of
from trainlab.api.events import Finished
from trainlab.runfolder.tail import read_events
from trainlab.runfolder.index import RunDir

TASK = "faulty-classification"


@pytest.fixture
def faulty(monkeypatch):
    monkeypatch.syspath_prepend(str(FAULTY_PLUGIN))
    return FAULTY_PLUGIN


@pytest.fixture
def rows(tmp_path):
    return write_toy_csv(tmp_path / "rows.csv", rows=64)


def train(rows, out, **params):
    from trainlab.engine.scripting import RunRequest, run_training

    return run_training(RunRequest(task=TASK, data=str(rows), params={k: str(v) for k, v in params.items()}, out=str(out)))


def expected(method, raised_in=None):
    return {
        "plugin": "faulty",
        "task": TASK,
        "method": method,
        "exception": f"ValueError: faulty in {raised_in or method}",
    }


# What the engine calls once the run folder exists; (fail_in, the method the user reads).
IN_RUN = [
    ("dataset", "dataset"),
    ("getitem", "Rows.__getitem__"),  # the dataset object's own method, found in the traceback
    ("collate", "collate"),
    ("build_model", "build_model"),
    ("prepare_model", "prepare_model"),
    ("train_step", "train_step"),
    ("eval_step", "eval_step"),
    ("metric_accumulator", "metric_accumulator"),
    ("compute", "FailingCompute.compute"),
    ("calibrate", "calibrate"),
    ("fitted_state", "fitted_state"),
    ("save_model", "save_model"),
]


@pytest.mark.parametrize("fail_in, method", IN_RUN, ids=[m for m, _ in IN_RUN])
def test_a_failure_during_the_run_names_the_plugin_and_the_method(faulty, rows, tmp_path, fail_in, method):
    outcome = train(rows, tmp_path / "run", fail_in=fail_in)
    assert outcome.status == "failed" and outcome.exit_code == 1
    assert outcome.failure == expected(method, fail_in)
    assert outcome.error == f"plugin 'faulty' (task {TASK}) failed in {method}: ValueError: faulty in {fail_in}"
    as_json = outcome.to_json()
    assert as_json["plugin"] == "faulty" and as_json["method"] == method and as_json["exit_code"] == 1

    run_dir = RunDir(outcome.run_dir)
    record = run_dir.read()
    assert record["status"] == "failed" and record["error"] == outcome.error
    assert record["failure"] == expected(method, fail_in)
    assert f"faulty in {fail_in}" in record["traceback"] and "faulty_task.py" in record["traceback"]
    finished = [e for e in read_events(run_dir.metrics_jsonl) if isinstance(e, Finished)]
    assert finished[-1].failure == expected(method, fail_in)


@pytest.mark.parametrize("fail_in", ["factory", "prepare", "batch_order"])
def test_a_failure_before_the_run_folder_exists_names_the_plugin(faulty, rows, tmp_path, fail_in):
    with pytest.raises(PluginCallError) as raised:
        train(rows, tmp_path / "run", fail_in=fail_in)
    assert failure_of(raised.value).to_json() == expected(fail_in)
    assert str(raised.value) == f"plugin 'faulty' (task {TASK}) failed in {fail_in}: ValueError: faulty in {fail_in}"
    assert not (tmp_path / "run").exists()


def test_the_engines_own_verdicts_and_other_plugins_failures_stay_theirs(toy_plugin, toy_csv, tmp_path):
    from trainlab.engine.scripting import RunRequest, run_training

    def run(name, **params):
        request = RunRequest(task="toy-classification", data=str(toy_csv), params={"epochs": "1", **params}, out=str(tmp_path / name))
        return run_training(request)

    # out of memory past three retries: the engine gives up, with its own advice
    oom = run("oom", oom_above="1")
    assert oom.status == "failed" and "--batch-size" in oom.error and oom.failure == {}
    failed = run("step", fail_at_step="2")
    assert failed.failure == {"plugin": "toy", "task": "toy-classification", "method": "train_step", "exception": "RuntimeError: toy failure at step 2"}
    assert failed.error.startswith("plugin 'toy' (task toy-classification) failed in train_step: RuntimeError: toy failure at step 2")


def test_the_cli_says_whose_code_failed_in_one_line_and_json_still_prints(cli, rows, tmp_path):
    # prepare() raising KeyError before the run folder exists: exit 1, no traceback without -v
    result = cli("train", TASK, "--data", rows, "--set", "fail_in=prepare", "--set", "error=key", "--json", extra_path=[FAULTY_PLUGIN])
    assert result.returncode == 1, result.stderr
    data = one_json_line(result)
    reason = f"plugin 'faulty' (task {TASK}) failed in prepare: KeyError: 'missing_column'"
    assert data["error"] == reason and data["exit_code"] == 1
    assert data["plugin"] == "faulty" and data["method"] == "prepare" and data["task"] == TASK
    assert data["failure"]["exception"] == "KeyError: 'missing_column'"
    assert f"trainlab: error: {reason}" in result.stderr.splitlines()
    assert "Traceback" not in result.stderr
    verbose = cli("-v", "train", TASK, "--data", rows, "--set", "fail_in=prepare", "--set", "error=key", extra_path=[FAULTY_PLUGIN])
    assert verbose.returncode == 1 and "Traceback" in verbose.stderr and "faulty_task.py" in verbose.stderr

    # the plugin's own verdict on the data: exit 2, its message, and whose check said it
    result = cli("train", TASK, "--data", rows, "--set", "fail_in=prepare", "--set", "error=data", "--json", extra_path=[FAULTY_PLUGIN])
    assert result.returncode == 2, result.stderr
    data = one_json_line(result)
    assert data["error"] == "faulty data check in prepare (plugin 'faulty', in prepare)"
    assert data["plugin"] == "faulty" and data["method"] == "prepare" and data["exit_code"] == 2

    # once the run folder exists: the run failed, run.json says whose code and where
    result = cli("train", TASK, "--data", rows, "--set", "fail_in=build_model", "--out", tmp_path / "run", "--json", extra_path=[FAULTY_PLUGIN])
    assert result.returncode == 1
    data = one_json_line(result)
    assert data["status"] == "failed" and data["exit_code"] == 1
    assert data["plugin"] == "faulty" and data["method"] == "build_model" and data["failure"] == expected("build_model")
    assert f"trainlab: the run failed: plugin 'faulty' (task {TASK}) failed in build_model: ValueError: faulty in build_model" in result.stderr
    assert "Traceback" not in result.stderr
    assert json.loads((tmp_path / "run" / "run.json").read_text())["failure"] == expected("build_model")


def test_the_traceback_of_a_plugin_failure_goes_to_the_log(cli, rows, tmp_home):
    result = cli("train", TASK, "--data", rows, "--set", "fail_in=prepare", "--set", "error=key", extra_path=[FAULTY_PLUGIN])
    assert result.returncode == 1 and "Traceback" not in result.stderr
    log_text = (tmp_home / "logs" / "trainlab.log").read_text(encoding="utf-8")
    assert "plugin 'faulty' (task faulty-classification) failed in prepare" in log_text
    assert "Traceback" in log_text and "faulty_task.py" in log_text


def test_a_child_process_run_carries_the_failure_too(cli, rows, tmp_path):
    result = cli("train", TASK, "--data", rows, "--set", "fail_in=train_step", "--isolated", "--json", extra_path=[FAULTY_PLUGIN])
    assert result.returncode == 1
    data = one_json_line(result)
    assert data["failure"] == expected("train_step") and data["method"] == "train_step"
    before = cli("train", TASK, "--data", rows, "--set", "fail_in=prepare", "--isolated", "--json", extra_path=[FAULTY_PLUGIN])
    assert before.returncode == 1
    data = one_json_line(before)
    assert "plugin 'faulty'" in data["error"] and data["failure"] == expected("prepare") and data["plugin"] == "faulty"


def test_predict_and_eval_name_the_plugin_and_the_method(faulty, cli, rows, tmp_path):
    # each trains fine (nothing in training calls these), then fails where it was told
    for fail_in in ("load_predictor", "predictor", "load_trained_model"):
        assert train(rows, tmp_path / fail_in, fail_in=fail_in, keep_checkpoints="none").status == "completed"
    for fail_in, command in (
        ("load_predictor", ["predict", tmp_path / "load_predictor", "0.1,0.2,0.3,0.4"]),
        ("predictor", ["predict", tmp_path / "predictor", "0.1,0.2,0.3,0.4"]),
        ("load_trained_model", ["eval", tmp_path / "load_trained_model"]),  # no checkpoint kept: eval rebuilds from model/
    ):
        result = cli(*command, "--json", extra_path=[FAULTY_PLUGIN])
        assert result.returncode == 1, (fail_in, result.stderr)
        data = one_json_line(result)
        assert data["error"] == f"plugin 'faulty' (task {TASK}) failed in {fail_in}: ValueError: faulty in {fail_in}"
        assert data["plugin"] == "faulty" and data["method"] == fail_in
        assert "Traceback" not in result.stderr

