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
