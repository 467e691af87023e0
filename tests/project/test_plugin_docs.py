"""docs/plugins.md's complete regression plugin works as written.

The test takes the doc's code blocks as they are (the ``pyproject.toml`` of
section 1 for the entry point, the files of section 7), installs them as a
plugin in a temporary folder and trains, evaluates and predicts with it
through the real CLI, so the doc cannot rot.
"""

from __future__ import annotations

import csv
import json
import random
import re
import tomllib
from pathlib import Path

import pytest

from helpers import ROOT, one_json_line

DOC = ROOT / "docs" / "plugins.md"
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)


def section(text: str, title: str) -> str:
    start = text.index(f"\n## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def doc_plugin(tmp_path: Path) -> tuple[Path, str]:
    """The doc's plugin installed under ``tmp_path``; returns (its folder, its task id)."""
    text = DOC.read_text(encoding="utf-8")
    toml = next(body for lang, body in BLOCK.findall(section(text, "1. Package and entry point")) if lang == "toml")
    project = tomllib.loads(toml)["project"]
    entry_points = project["entry-points"]["trainlab.plugins"]
    files = {}
    for lang, body in BLOCK.findall(section(text, "7. A complete regression plugin")):
        first = body.splitlines()[0]
        if lang == "python" and first.startswith("# ") and first.endswith(".py"):
            files[first[2:].strip()] = body
    assert set(files) == {"trainlab_tabreg/__init__.py", "trainlab_tabreg/task.py"}, sorted(files)
    assert set(entry_points.values()) == {"trainlab_tabreg"}  # section 1 names the package section 7 writes
    for name, body in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body, encoding="utf-8")
    info = tmp_path / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    lines = "".join(f"{name} = {module}\n" for name, module in entry_points.items())
    (info / "entry_points.txt").write_text("[trainlab.plugins]\n" + lines)
    task_id = re.search(r'id="([a-z0-9-]+)"', files["trainlab_tabreg/__init__.py"]).group(1)
    return tmp_path, task_id


def houses(path: Path, rows: int = 400) -> Path:
    """price = a non-linear function of three features plus noise, in the hundreds of thousands."""
    rng = random.Random(1)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["rooms", "age", "distance", "y"])
        for _ in range(rows):
            rooms, age, distance = rng.uniform(1, 6), rng.uniform(0, 80), rng.uniform(0.5, 30)
            price = 150_000 + 40_000 * rooms - 900 * age - 15_000 * (distance ** 0.5) + rng.gauss(0, 8_000)
            writer.writerow([f"{rooms:.2f}", f"{age:.1f}", f"{distance:.2f}", f"{price:.0f}"])
    return path


@pytest.mark.long
def test_the_docs_regression_plugin_trains_evaluates_and_predicts(cli, tmp_path):
    plugin, task_id = doc_plugin(tmp_path / "plugin")
    data = houses(tmp_path / "houses.csv")
    listed = {p["name"]: p for p in one_json_line(cli("plugins", "--json", extra_path=[plugin]))["plugins"]}
    assert listed["tabreg"]["status"] == "ok" and listed["tabreg"]["tasks"] == [task_id], listed.get("tabreg")
    assert not listed["tabreg"]["warnings"]

    run = tmp_path / "run"
    trained = cli("train", task_id, "--data", data, "--out", run, "--json", extra_path=[plugin])
    assert trained.returncode == 0, trained.stderr
    result = one_json_line(trained)
    assert result["status"] == "completed" and result["epochs"] == 30
    assert set(result["metrics"]) == {"r2", "mae", "rmse", "loss"} and result["metrics"]["r2"] > 0.9
    state = json.loads((run / "model" / "task_state.json").read_text())
    assert state["features"] == ["rooms", "age", "distance"] and 150_000 < state["target_mean"] < 300_000

    evaluated = cli("eval", run, "--json", extra_path=[plugin])
    assert evaluated.returncode == 0, evaluated.stderr
    report = one_json_line(evaluated)
    assert abs(report["metrics"]["r2"] - result["metrics"]["r2"]) < 1e-6  # the same split, the same fitted state
    assert report["worst_examples"][0]["example"].startswith("line ")

    table = tmp_path / "pred.csv"
    predicted = cli("predict", run, "3,10,2", "1,2", "--out", table, "--json", extra_path=[plugin])
    assert predicted.returncode == 2  # the row of the wrong width is named; the other is predicted
    good, bad = one_json_line(predicted)["predictions"]
    assert good["prediction"]["kind"] == "number" and 150_000 < good["prediction"]["value"] < 350_000
    assert bad["prediction"] is None and "expected 3 numbers (rooms, age, distance)" in bad["error"]
    rows = list(csv.reader(table.open(encoding="utf-8")))
    assert rows[0] == ["input", "value", "error"] and rows[2][2] == bad["error"]
