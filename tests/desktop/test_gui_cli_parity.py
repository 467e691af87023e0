"""The same settings give the same run from the window and from ``trainlab train``.

The window trains in its own thread, on the data check's preparation; the
CLI trains in its main thread and prepares the data itself.  Both train with
the same number of torch threads (``trainlab.engine.device.set_training_threads``:
CPU sums over another number of threads round differently, enough to end a
run of the image sample a few images apart), and run.json says how many.
One epoch on a small copy of the image sample, compared exactly.
"""

from __future__ import annotations

import json
import shutil

import pytest

from trainlab.runfolder.index import RunDir

pytest.importorskip("pytestqt")

from test_gui_window import RUN_TIMEOUT_MS, start_and_finish

TASK = "image-classification"
SETTINGS = {"epochs": "1", "device": "cpu", "seed": "42", "batch_size": "16"}
# measured while preparing (time per decoded image, the memory free for a cache): not settings
MEASURED = ("decode_ms_per_image", "memory_cache")


def small_sample(window, tmp_path, per_class: int = 8):
    """The first ``per_class`` images of each class of the bundled image sample."""
    from pathlib import Path

    source = Path(window.sample_path(TASK))
    assert source.is_dir(), "the image sample is not installed"
    out = tmp_path / "shapes"
    for folder in sorted(p for p in source.iterdir() if p.is_dir()):
        (out / folder.name).mkdir(parents=True)
        for image in sorted(folder.iterdir())[:per_class]:
            shutil.copyfile(image, out / folder.name / image.name)
    return out


def comparable(run: dict) -> dict:
    summary = dict(run["data_summary"])
    summary["extra"] = {k: v for k, v in (summary.get("extra") or {}).items() if k not in MEASURED}
    return {
        "task": run["task"],
        "parameters": run["parameters"],
        "data": run["data"],
        "label_names": run["label_names"],
        "data_summary": summary,
        "torch_threads": run["environment"]["torch_threads"],
        "metrics": run["metrics"],
        "best": run["best"],
    }


def test_the_window_and_the_cli_train_the_same_run(qtbot, window, cli, tmp_path):
    data = small_sample(window, tmp_path)
    assert window.select_task(TASK)
    assert window.params_form.set_values(SETTINGS) == []
    window.data_panel.set_path(str(data))
    qtbot.waitUntil(lambda: not window.data_panel.checking and window.data_panel.summary is not None, timeout=RUN_TIMEOUT_MS)
    assert window.start_blockers() == []
    outcome = start_and_finish(qtbot, window)
    assert outcome.status == "completed", outcome
    assert any("using the data check's preparation" in e.message for e in window.session.log)  # the window's own path
    in_window = RunDir(window.session.run_dir).read()

    flags = [arg for key, value in SETTINGS.items() for arg in ("--set", f"{key}={value}")]
    done = cli("train", TASK, "--data", str(data), *flags, "--out", str(tmp_path / "cli-run"), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "completed"
    from_cli = RunDir(tmp_path / "cli-run").read()

    assert comparable(in_window) == comparable(from_cli)
