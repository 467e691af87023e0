"""object-detection over two gloo ranks on the CPU (``trainlab train --nproc-per-node 2``).

Training differs from one process by design (each rank draws its own
augmentation), so what is compared is what must be equal: the two ranks'
evaluation of the trained model against one process's evaluation of the same
model (``trainlab eval``), every validation image counted once.
"""

from __future__ import annotations

import json

import pytest
from helpers import one_json_line
from trainlab_dev.detection_samples import write_coco

VAL_IMAGES = 5  # odd: a sampler that padded the ranks' shares to equal length would count one image twice


@pytest.mark.long
def test_two_ranks_evaluate_as_one_process_does(cli, tmp_path):
    data = write_coco(tmp_path / "shapes", {"train": 16, "val": VAL_IMAGES}, size=48, seed=5)
    run = tmp_path / "run"
    one_thread = {"OMP_NUM_THREADS": "1"}  # two ranks on a shared two-core machine
    # lr 0.004: two steps are enough for boxes over the detector's 0.05 score floor, so the metrics compared are not all zero
    trained = cli("train", "object-detection", "--data", data, "--epochs", "1", "--batch-size", "4", "--lr", "0.004", "--device", "cpu",
                  "--precision", "fp32", "--set", "model=small-fcos", "--set", "image_size=48", "--set", "export=off",
                  "--set", "score_threshold=0.0", "--out", run, "--json", "--nproc-per-node", "2", env=one_thread)  # fmt: skip
    assert trained.returncode == 0, trained.stderr[-3000:]
    outcome = one_json_line(trained)
    assert outcome["status"] == "completed" and outcome["steps"] == 2  # 16 images, 4 per rank: two steps of 8
    record = json.loads((run / "run.json").read_text())
    assert record["world_size"] == 2

    two = json.loads((run / "eval.json").read_text())  # written by rank 0 from both ranks' boxes
    evaluated = cli("eval", run, "--json", env=one_thread)
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    one = one_json_line(evaluated)
    assert two["samples"] == one["samples"] == VAL_IMAGES
    assert two["metrics"]["mar_100"] > 0, "a model that finds no box tells nothing about the comparison"
    for name in ("map", "map50", "map75", "mar_100"):
        assert two["metrics"][name] == pytest.approx(one["metrics"][name], abs=1e-6), name
    assert two["per_class_ap"] == pytest.approx(one["per_class_ap"], abs=1e-6)
    rows = {d["name"]: d for d in two["details"]}["worst_images"]["rows"]
    assert sorted(r["image"]["image"] for r in rows) == sorted(str(p) for p in (data / "val").glob("*.jpg"))
