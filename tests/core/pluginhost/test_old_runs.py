"""Runs and plugins from before plugin API 2 keep working.

A plugin API 1 plugin loads through the adapter (single-label
classification, with a warning); a run folder written the old way (eval.json
without ``metrics`` or ``family``, eval events with ``accuracy`` and
``macro_f1`` and no ``monitor``, run.json without its declared metrics, no
fitted state) is still evaluated, predicted with and listed, and its
classification outputs read exactly as before.
"""

from __future__ import annotations

import csv
import json
import shutil

import pytest

from helpers import FIXTURE_PLUGINS, one_json_line, write_toy_csv

API1_PLUGIN = '''
import trainlab
from trainlab import Param, TaskSpec


@trainlab.hookimpl
def trainlab_api_version():
    return "1.0"


@trainlab.hookimpl
def trainlab_tasks():
    return [TaskSpec(id="old-toy", title="Old toy", factory="toy_task:ToyTask", data_kind="file", params=(
        Param("hidden", "int", 16, "Hidden units."),
        Param("val_fraction", "float", 0.25, "Validation share."),
        Param("oom_above", "int", 0, "Off."),
        Param("fail_at_step", "int", 0, "Off."),
        Param("step_delay", "float", 0.0, "Off."),
    ), defaults={"lr": 0.01, "batch_size": 16})]
'''


def install_api1_plugin(folder):
    (folder / "old_plugin.py").write_text(API1_PLUGIN)
    info = folder / "old_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: old-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[trainlab.plugins]\nold = old_plugin\n")
    return folder


def write_the_old_way(run):
    """Rewrite a fresh run folder as TrainLab wrote it before plugin API 2."""
    report = json.loads((run / "eval.json").read_text())
    for key in ("metrics", "family"):
        report.pop(key, None)
    (run / "eval.json").write_text(json.dumps(report))
    record = json.loads((run / "run.json").read_text())
    for key in ("family", "declared_metrics"):
        record.pop(key, None)
    record["metrics"] = {k: record["metrics"][k] for k in ("accuracy", "macro_f1", "loss")}
    (run / "run.json").write_text(json.dumps(record))
    lines = []
    for line in (run / "metrics.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event["event"] == "eval":
            event = {k: event[k] for k in ("event", "time", "step", "epoch", "split", "loss", "accuracy", "macro_f1", "best")}
        lines.append(json.dumps(event))
    (run / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    for folder in (run, run / "model"):
        (folder / "task_state.json").unlink(missing_ok=True)
    return run


@pytest.fixture(scope="module")
def trained_old_way(tmp_path_factory):
    """One run of the API 1 plugin, trained once for this module and rewritten the old way."""
    import trainlab.pluginhost.host as host

    root = tmp_path_factory.mktemp("old-runs")
    plugins = install_api1_plugin(root)
    data = write_toy_csv(root / "toy.csv")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRAINLAB_HOME", str(root / "home"))
        mp.syspath_prepend(str(plugins))
        mp.syspath_prepend(str(FIXTURE_PLUGINS))
        mp.setattr(host, "_registry", None)
        from trainlab.engine.scripting import RunRequest, run_training

        outcome = run_training(RunRequest(task="old-toy", data=str(data), params={"epochs": "3"}, out=str(root / "run")))
        mp.setattr(host, "_registry", None)
    assert outcome.status == "completed", outcome.error
    assert set(outcome.metrics) == {"accuracy", "macro_f1", "loss"}  # as for any classification
    return write_the_old_way(root / "run"), plugins, outcome.metrics


@pytest.fixture
def old_run(trained_old_way, tmp_path):
    """A copy of the old run for one test, in this test's run index (the index is a cache of the folders)."""
    from trainlab.runfolder.index import RunStore

    source, plugins, metrics = trained_old_way
    run = tmp_path / "run"
    shutil.copytree(source, run)
    RunStore().record(json.loads((run / "run.json").read_text()), run)
    return run, plugins, {"metrics": metrics}


def test_an_api1_plugin_loads_through_the_adapter_with_a_warning(cli, tmp_path):
    plugins = install_api1_plugin(tmp_path)
    listed = {p["name"]: p for p in one_json_line(cli("plugins", "--json", extra_path=[plugins, FIXTURE_PLUGINS]))["plugins"]}
    old = listed["old"]
    assert old["status"] == "ok" and old["tasks"] == ["old-toy"]
    assert any("plugin API 1 adapter" in w and "single-label classification" in w for w in old["warnings"])
    task = next(t for t in one_json_line(cli("tasks", "--json", extra_path=[plugins, FIXTURE_PLUGINS]))["tasks"] if t["id"] == "old-toy")
    assert task["family"] == "classification" and task["monitor"] == "accuracy"


def test_an_old_run_still_evaluates(cli, old_run):
    run, plugins, trained = old_run
    result = cli("eval", run, "--json", extra_path=[plugins, FIXTURE_PLUGINS])
    assert result.returncode == 0, result.stderr
    report = one_json_line(result)
    assert report["accuracy"] == pytest.approx(trained["metrics"]["accuracy"])  # the API 1 key, where it always was
    assert report["metrics"]["accuracy"] == report["accuracy"] and len(report["per_class"]) == 3
    human = cli("eval", run, extra_path=[plugins, FIXTURE_PLUGINS]).stdout
    assert f"accuracy {report['accuracy']:.1%}" in human and "class_0 " in human


def test_an_old_run_still_predicts_with_the_classification_outputs_of_before(cli, old_run, tmp_path):
    run, plugins, _ = old_run
    table = tmp_path / "pred.csv"
    result = cli("predict", run, "0.1,0.2,0.3,0.4", "--top-k", "2", "--out", table, "--json", extra_path=[plugins, FIXTURE_PLUGINS])
    assert result.returncode == 0, result.stderr
    (item,) = one_json_line(result)["predictions"]
    # the toy predictor returns plugin API 1 (label, probability) lists: read as LabelScores
    assert [set(p) for p in item["predictions"]] == [{"label", "probability"}] * 2
    assert item["prediction"]["kind"] == "label_scores" and item["prediction"]["label"] == item["predictions"][0]["label"]
    rows = list(csv.reader(table.open(encoding="utf-8")))
    assert rows[0] == ["input", "label_1", "probability_1", "label_2", "probability_2", "error"]
    assert rows[1][1] == item["predictions"][0]["label"] and rows[1][2] == f"{item['predictions'][0]['probability']:.6f}"


def test_an_old_run_is_listed_and_its_files_read(cli, old_run):
    run, plugins, trained = old_run
    (row,) = one_json_line(cli("runs", "--json", extra_path=[plugins, FIXTURE_PLUGINS]))["runs"]
    assert row["monitor"] == "accuracy" and row["best"] == f"accuracy {row['best_metric']:.1%}"
    from trainlab.api.events import EvalResult
    from trainlab.runfolder.index import RunDir

    rd = RunDir(run)
    evals = [e for e in rd.events() if isinstance(e, EvalResult)]
    assert len(evals) == 3 and all(e.accuracy == e.metrics["accuracy"] and e.monitor == "" for e in evals)
    primary = rd.read_eval().primary
    assert primary.metrics["accuracy"] == pytest.approx(trained["metrics"]["accuracy"]) and primary.confusion_matrix
    assert rd.read_record().metrics["accuracy"] == trained["metrics"]["accuracy"]


def test_an_old_run_of_a_plugin_that_is_gone_still_lists(cli, old_run):
    run, _, _ = old_run
    (row,) = one_json_line(cli("runs", "--json"))["runs"]  # the plugin is not on the path any more
    assert row["run_dir"] == str(run) and row["best"].startswith("accuracy ") and row["best"].endswith("%")
