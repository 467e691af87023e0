"""Typed run records: run.json and eval.json of this and earlier versions, damaged ones named."""

from __future__ import annotations

import ast
import copy
import json
import sqlite3
from dataclasses import replace

import pytest

from helpers import ROOT
from trainlab.api.errors import UsageError
from trainlab.runfolder.display import MISSING, format_duration, format_metric
from trainlab.runfolder.eval_report import EvalRecord, SplitReport
from trainlab.runfolder.records import RunFileError
from trainlab.runfolder.index import RunDir, RunStore
from trainlab.runfolder.status import INTERRUPTED_ERROR, shown_status, status_word

# run.json as version 1 of the engine writes it, plus a key from a newer TrainLab
RUN_JSON = {
    "schema_version": 1,
    "id": "20250101-120000-toy-classification-ab12",
    "name": "",
    "task": "toy-classification",
    "plugin": {"name": "toy", "version": "0.1", "distribution": "toy"},
    "parameters": {"epochs": 2, "lr": 0.02, "batch_size": 16},
    "data": {"path": "/data/rows.csv", "fingerprint": {"sha256": "abc", "files": 1}},
    "label_names": ["blue", "green", "red"],
    "data_summary": {"splits": {"train": 96, "val": 24}},
    "status": "completed",
    "error": "",
    "timings": {"started": 1735732800.0, "finished": 1735732860.5, "duration": 60.5, "train_seconds": 55.0},
    "environment": {"python": "3.11.7", "torch": "2.6.0"},
    "world_size": 1,
    "pid": None,
    "segments": [{"start": 0, "steps": 12, "schedule": "cosine", "warmup": 1}],
    "traceback": "",
    "metrics": {"accuracy": 0.875, "macro_f1": 0.86, "loss": 0.41},
    "progress": {"epochs_completed": 2, "steps": 12},
    "best": {"metric": "accuracy", "value": 0.875, "step": 12},
    "samples_per_second": 812.5,
    "queue_slot": {"gpus": [0, 1]},  # not known to this version
}


def report(accuracy=0.8, split=None):
    out = {
        "samples": 10,
        "accuracy": accuracy,
        "macro_f1": 0.75,
        "label_names": ["a", "b"],
        "per_class": [
            {"label": "a", "precision": 0.8, "recall": 0.8, "f1": 0.8, "support": 5},
            {"label": "b", "precision": 0.8, "recall": 0.8, "f1": 0.8, "support": 5},
        ],
        "confusion_matrix": [[4, 1], [1, 4]],
        "loss": 0.5,
        "misclassified": [{"key": 3, "example": "x3", "true": "a", "predicted": "b", "confidence": 0.9}],
        "correct_examples": [{"key": 0, "example": "x0", "true": "a", "predicted": "a", "confidence": 0.7}],
    }
    if split:
        out["split"] = split
    return out


def folder(tmp_path, run=None, evaluation=None, name="run") -> RunDir:
    path = tmp_path / name
    path.mkdir()
    if run is not None:
        (path / "run.json").write_text(run if isinstance(run, str) else json.dumps(run), encoding="utf-8")
    if evaluation is not None:
        text = evaluation if isinstance(evaluation, str) else json.dumps(evaluation)
        (path / "eval.json").write_text(text, encoding="utf-8")
    return RunDir(path)


def test_a_version_1_run_json_reads_typed_and_writes_back_unchanged(tmp_path):
    run = folder(tmp_path, RUN_JSON)
    record = run.read_record()
    assert record.task == "toy-classification" and record.label_names == ("blue", "green", "red")
    assert record.best_metric == "accuracy" and record.best_value == 0.875 and record.duration == 60.5
    assert record.title == RUN_JSON["id"]  # no name: the id
    assert record.extra == {"queue_slot": {"gpus": [0, 1]}}
    assert record.to_json() == RUN_JSON  # nothing lost, nothing added

    run.write(replace(record, name="baseline"))
    again = run.read_record()
    assert again.name == "baseline" and again.title == "baseline"
    assert again.extra == record.extra and again.parameters == record.parameters
    run.write({**RUN_JSON, "name": "as a dict"})  # the engine still writes dicts
    assert run.read()["name"] == "as a dict" and run.title() == "as a dict"


def test_a_sparse_early_run_json_gets_defaults(tmp_path):
    run = folder(tmp_path, {"id": "old-run", "task": "image-classification", "status": "failed"})
    record = run.read_record()
    assert record.schema_version == 1 and record.label_names == () and record.best_value is None
    assert record.started is None and record.world_size == 1 and record.extra == {}
    assert run.title() == "old-run"
    assert RunDir(folder(tmp_path, {"task": "x"}, name="unnamed").path).title() == "unnamed"  # nor an id: the folder


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{not json", "is not valid JSON"),
        ("[1, 2, 3]", "is not a JSON object (it holds a list)"),
        (json.dumps({"id": "x", "label_names": 5}), "'label_names' should be a list, not a number"),
        (json.dumps({"id": "x", "timings": "yesterday"}), "'timings' should be an object, not a string"),
        (json.dumps({"id": 7}), "'id' should be a string, not a number"),
    ],
)
def test_a_damaged_run_json_raises_one_error_naming_the_file(tmp_path, content, reason):
    run = folder(tmp_path, content)
    with pytest.raises(RunFileError) as caught:
        run.read_record()
    assert str(run.run_json) in str(caught.value) and reason in str(caught.value)
    assert isinstance(caught.value, UsageError)  # the CLI turns it into exit 2 with that line
    assert run.title() == "run"  # the name fallback still works


def test_a_missing_run_json_says_it_is_not_a_run_folder(tmp_path):
    with pytest.raises(UsageError, match="not a TrainLab run folder"):
        RunDir(tmp_path).read_record()


def test_the_engines_eval_json_round_trips(tmp_path):
    data = {**report(split="val"), "test": report(0.5, split="test"), "weights": "best", "step": 12}
    evaluation = folder(tmp_path, RUN_JSON, data).read_eval()
    assert list(evaluation.splits) == ["val", "test"] and evaluation.layout == "flat"
    val = evaluation.primary
    assert val.metrics == {"accuracy": 0.8, "macro_f1": 0.75} and val.loss == 0.5 and val.samples == 10
    assert val.misclassified[0].example == "x3" and val.misclassified_count == 2
    assert val.examples_for("a", "b")[0].confidence == 0.9 and val.cell_count("b", "a") == 1
    assert evaluation.splits["test"].value("accuracy") == 0.5
    assert evaluation.weights == "best" and evaluation.step == 12
    assert evaluation.to_json() == data


def test_earlier_eval_shapes_still_read(tmp_path):
    old = report()
    old["per_class"] = {row["label"]: {k: v for k, v in row.items() if k != "label"} for row in old["per_class"]}
    old["correct"] = old.pop("correct_examples")
    old["calibration"] = {"ece": 0.1}  # a key this version does not know
    nested = {"val": old, "test": report(0.4)}
    evaluation = EvalRecord.from_json(nested, "eval.json")
    assert evaluation.layout == "nested" and list(evaluation.splits) == ["val", "test"]
    val = evaluation.splits["val"]
    assert [row["label"] for row in val.per_class] == ["a", "b"] and val.per_class[0]["support"] == 5
    assert val.has_correct_list and val.correct_examples[0].example == "x0"
    assert val.extra == {"calibration": {"ece": 0.1}}
    again = EvalRecord.from_json(copy.deepcopy(evaluation.to_json()), "eval.json")
    assert again == evaluation  # a round trip loses nothing

    bare = report()
    del bare["correct_examples"], bare["misclassified"], bare["per_class"]
    split = SplitReport.from_json(bare)
    assert not split.has_correct_list and split.examples_for("a", "a") == []

    nothing = EvalRecord.from_json({"weights": "last", "step": 4}, "eval.json")  # a run without a validation split
    assert nothing.splits == {} and nothing.primary is None and nothing.to_json() == {"weights": "last", "step": 4}


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"confusion_matrix": "many"}, "'confusion_matrix' should be a list, not a string"),
        ({"confusion_matrix": [[1, 2], [3]]}, "'confusion_matrix' is not square"),
        ({"confusion_matrix": [[1, 2, 3]] * 3}, "'confusion_matrix' has 3 rows for 2 label_names"),
        ({"misclassified": [1]}, "misclassified[0] should be an object, not a number"),
        ({"loss": "low"}, "'loss' should be a number, not a string"),
        ({"per_class": [["a", 1]]}, "'per_class' should be a list of objects"),
    ],
)
def test_a_damaged_eval_json_names_the_file_and_the_key(tmp_path, change, reason):
    run = folder(tmp_path, RUN_JSON, {**report(), **change})
    with pytest.raises(RunFileError) as caught:
        run.read_eval()
    assert str(run.eval_json) in str(caught.value) and reason in str(caught.value)


def test_evaluations_on_other_data_are_found_beside_eval_json(tmp_path):
    run = folder(tmp_path, RUN_JSON, report(split="val"))
    assert RunDir(folder(tmp_path, RUN_JSON, name="no-eval").path).read_eval() is None
    later = {**report(0.6, split="train"), "data": "/other.csv", "weights": "best"}
    (run.path / "eval-20250102-101500.json").write_text(json.dumps(later))
    (run.path / "eval-20250101-090000.json").write_text(json.dumps(report(0.7, split="val")))
    assert [p.name for p in run.eval_files()] == ["eval.json", "eval-20250101-090000.json", "eval-20250102-101500.json"]
    other = run.read_eval("eval-20250102-101500.json")
    assert other.data == "/other.csv" and other.primary.split == "train" and other.primary.value("accuracy") == 0.6


def test_the_index_takes_records_and_tells_interrupted_runs(tmp_path):
    db = tmp_path / "index.sqlite"
    with sqlite3.connect(db) as old:  # an index written before the error column
        old.execute(
            "CREATE TABLE runs (id TEXT PRIMARY KEY, run_dir TEXT UNIQUE NOT NULL, name TEXT, task TEXT,"
            " status TEXT, started REAL, finished REAL, duration REAL, best_metric REAL, monitor TEXT,"
            " pid INTEGER, host TEXT, proc_start REAL, updated REAL)"
        )
        old.execute("INSERT INTO runs (id, run_dir, status) VALUES ('early', '/nowhere', 'completed')")
    store = RunStore(db)
    run = folder(tmp_path, {**RUN_JSON, "status": "failed", "error": INTERRUPTED_ERROR})
    store.record(run.read_record(), run.path)
    rows = {r["id"]: r for r in store.list(reconcile=False)}
    assert rows["early"]["status"] == "completed" and not rows["early"]["error"]
    row = rows[RUN_JSON["id"]]
    assert shown_status(row["status"], row["error"]) == "interrupted"
    assert status_word(row["status"], row["error"]) == "interrupted"
    assert status_word("cancelled", "interrupted") == "stopped"  # Ctrl-C: the user stopped it
    assert status_word("paused") == "paused"  # a state from a newer TrainLab, as stored


def test_one_metric_format():
    assert format_metric("accuracy", 0.925) == "92.5%"
    assert format_metric("top5_accuracy", 1.0) == "100.0%"
    assert format_metric("accuracy", 0.8, detail=True) == "80.00%"
    assert format_metric("loss", 0.512345) == "0.5123"
    assert format_metric("val_loss", 12345.6) == "1.235e+04"
    assert format_metric("macro_f1", 0.76923) == "0.769"
    assert format_metric("support", 1234) == "1,234"
    assert format_metric("mae", 3.14159) == "3.142"
    for missing in (None, float("nan"), float("inf"), "n/a", True):
        assert format_metric("accuracy", missing) == MISSING == "\u2013"
    assert format_metric("accuracy", "nan") == MISSING  # as metrics.jsonl writes NaN
    assert format_metric("ppl", 0.123456, ".2f") == "0.12"  # a task's declared format
    assert format_metric("r2", 0.5, "percent") == "50.0%"
    assert format_metric("loss", 0.5, "{bad}") == "0.5"  # an unusable declaration falls back
    assert format_duration(65) == "1:05"


DESKTOP = ROOT / "desktop"
RUN_FILES = {"run.json", "eval.json", "metrics.jsonl"}
READERS = {"read_json", "read_json_object", "event_from_json", "event_from_dict"}
# Files allowed to name a run folder's files; each says why.
NAMES_RUN_FILES: dict[str, str] = {}
PARSES_JSON = {
    "data_panel.py": "previews the user's own JSON-lines data, not a run folder",
    "estimate.py": "the estimate child's settings on stdin and its one JSON line on stdout, not a run folder",
}


def test_the_desktop_reads_run_folders_only_through_rundir():
    found = []
    for path in sorted(DESKTOP.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in RUN_FILES and path.name not in NAMES_RUN_FILES:
                found.append(f"{path.name}:{node.lineno} names {node.value}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                owner = node.func.value
                if node.func.attr in ("loads", "load") and isinstance(owner, ast.Name) and owner.id == "json":
                    if path.name not in PARSES_JSON:
                        found.append(f"{path.name}:{node.lineno} json.{node.func.attr}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in READERS:
                found.append(f"{path.name}:{node.lineno} {node.func.id}()")
            if isinstance(node, ast.ImportFrom) and node.module in ("trainlab.system.fileio", "trainlab.api.events"):
                names = {alias.name for alias in node.names}
                if names & {"read_json", "event_from_json", "event_from_dict"}:
                    found.append(f"{path.name}:{node.lineno} imports {sorted(names)} from {node.module}")
    assert found == [], "read run folders through trainlab.runfolder.index.RunDir / trainlab.runfolder.tail:\n" + "\n".join(found)
