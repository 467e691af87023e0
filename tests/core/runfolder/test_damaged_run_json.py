"""A run.json with wrong types, or damaged after the index read it: the file and the key are named."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers import one_line_error, run_trainlab
from trainlab.runfolder.index import RunDir, RunStore
from trainlab.runfolder.records import RunFileError

RECORD = {
    "id": "20260101-000000-toy-classification-abcd",
    "name": "",
    "task": "toy-classification",
    "status": "completed",
    "parameters": {"epochs": 1},
    "timings": {"started": 1.0, "finished": 2.0, "duration": 1.0},
    "best": {"metric": "accuracy", "value": 0.58, "step": 3},
    "metrics": {"accuracy": 0.58},
}


def run_folder(parent: Path, name: str = "run", **changes) -> Path:
    folder = parent / name
    (folder / "model").mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({**RECORD, "id": f"{RECORD['id']}-{name}", **changes}), encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    ("changes", "key"),
    [({"task": 5, "parameters": [1]}, "'task'"), ({"parameters": [1]}, "'parameters'"), ({"best": "high"}, "'best'"), ({"pid": "x"}, "'pid'")],
)
def test_reading_a_run_json_with_a_wrong_type_names_the_file_and_the_key(tmp_path, changes, key):
    folder = run_folder(tmp_path, **changes)
    with pytest.raises(RunFileError) as err:
        RunDir(folder).read()
    assert str(folder / "run.json") in str(err.value) and key in str(err.value)


def test_eval_and_predict_name_the_file_and_the_key_of_a_wrong_type(tmp_path):
    folder = run_folder(tmp_path, task=5, parameters=[1])
    inputs = tmp_path / "rows.csv"
    inputs.write_text("x0,x1\n1,2\n", encoding="utf-8")
    for command in (["eval", folder, "--json"], ["predict", folder, inputs, "--json"]):
        error = one_line_error(run_trainlab(*command))
        assert str(folder / "run.json") in error and "'task'" in error and "unknown task" not in error, error


def damage(run_json: Path, how: str) -> None:
    text = run_json.read_text(encoding="utf-8")
    if how == "random":
        run_json.write_bytes(os.urandom(len(text) + 7))
    elif how == "half":
        run_json.write_text(text[: len(text) // 2], encoding="utf-8")
    elif how == "empty":
        run_json.write_text("", encoding="utf-8")
    else:  # wrong types
        run_json.write_text(json.dumps({**json.loads(text), "task": 5, "status": ["completed"]}), encoding="utf-8")


@pytest.mark.parametrize("how", ["random", "half", "empty", "types"])
def test_the_listing_marks_a_run_whose_run_json_was_damaged_after_it_was_indexed(tmp_home, how):
    store = RunStore()
    folder = run_folder(store.runs_folder)
    row = next(r for r in store.list() if r["run_dir"] == str(folder))
    assert row["status"] == "completed" and row["best_metric"] == 0.58
    good = (folder / "run.json").read_bytes()
    damage(folder / "run.json", how)
    listed = RunStore()
    row = next(r for r in listed.list() if r["run_dir"] == str(folder))
    assert row["status"] == "damaged" and row["best_metric"] is None
    assert str(folder / "run.json") in row["error"]
    assert any(str(folder / "run.json") in note for note in listed.notes)
    # put right again: listed as run.json says
    (folder / "run.json").write_bytes(good)
    row = next(r for r in RunStore().list() if r["run_dir"] == str(folder))
    assert row["status"] == "completed" and row["best_metric"] == 0.58 and not row["error"]


def test_trainlab_runs_shows_a_damaged_run_json_as_damaged_and_names_it(tmp_home):
    store = RunStore()
    folder = run_folder(store.runs_folder)
    assert [r["status"] for r in store.list()] == ["completed"]
    damage(folder / "run.json", "half")
    result = run_trainlab("runs")
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if str(folder) in line).replace(str(folder), "")
    assert "damaged" in line and "completed" not in line and "58" not in line
    assert str(folder / "run.json") in result.stderr
