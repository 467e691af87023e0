"""Declared models: each model's format, and the installed tasks that take it.

The model store and the CLI never name a task: a task says which formats its
``model`` parameter takes (``TaskSpec.model_formats``) and the listing
matches them, so a plugin's own model format is offered for its own task.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers import ROOT, one_json_line
from trainlab.models import catalog as modelstore
from trainlab.models.formats import model_format

BUILT_IN_TASK_IDS = (
    "image-classification",
    "text-classification",
    "image-regression",
    "text-regression",
    "image-multilabel",
    "text-multilabel",
)

AUDIO_PLUGIN = '''
import trainlab
from trainlab import InputSpec, TaskSpec


@trainlab.hookimpl
def trainlab_api_version():
    return "2.0"


@trainlab.hookimpl
def trainlab_tasks():
    return [TaskSpec(id="audio-tagging", title="Audio tagging", factory="audio_plugin:Nothing", family="multilabel",
                     input=InputSpec("file", (".wav",), "a recording"), model_formats=("acme-audio",))]
'''


def transformers_folder(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    (path / "vocab.txt").write_text("[PAD]\n[UNK]\n")
    (path / "model.safetensors").write_bytes((8).to_bytes(8, "little") + b"{}      ")
    return path


def described_folder(path: Path, fmt: str) -> Path:
    path.mkdir(parents=True)
    (path / "model.json").write_text(json.dumps({"format": fmt, "architecture": "small-cnn"}))
    (path / "model.safetensors").write_bytes((8).to_bytes(8, "little") + b"{}      ")
    return path


def test_each_kind_of_model_has_its_format(tmp_path):
    assert model_format(transformers_folder(tmp_path / "bert")) == "transformers"
    assert model_format(described_folder(tmp_path / "cnn", "trainlab-image-classifier")) == "trainlab-image"
    assert model_format(described_folder(tmp_path / "wav", "acme-audio")) == "acme-audio"
    (tmp_path / "resnet18-f37072fd.pth").write_bytes(b"\0")
    assert model_format(tmp_path / "resnet18-f37072fd.pth") == "torchvision-checkpoint"
    (tmp_path / "empty").mkdir()
    assert model_format(tmp_path / "empty") == "" and model_format(tmp_path / "missing") == ""


def test_a_real_image_run_model_folder_is_trainlab_image(tmp_path):
    torch = pytest.importorskip("torch")
    from trainlab_plugins.image.export import save_model_folder
    from trainlab_plugins.image.models import build_architecture

    model = build_architecture("small-cnn", 2, 32).eval()
    with torch.no_grad():
        save_model_folder(model, tmp_path / "m", arch="small-cnn", label_names=["a", "b"],
                          preprocessing={"image_size": 32, "crop_fraction": 1.0, "resize": 32, "interpolation": "bilinear",
                                         "mean": [0.5] * 3, "std": [0.5] * 3}, onnx=False)
    assert model_format(tmp_path / "m") == "trainlab-image"


def test_models_lists_the_tasks_that_take_each_model(cli, tmp_path):
    cache = tmp_path / "hf" / "hub"
    snapshot = transformers_folder(cache / "models--org--tiny" / "snapshots" / "abc")
    (cache / "models--org--tiny" / "refs").mkdir()
    (cache / "models--org--tiny" / "refs" / "main").write_text("abc")
    checkpoints = tmp_path / "torch" / "hub" / "checkpoints"
    checkpoints.mkdir(parents=True)
    (checkpoints / "resnet18-f37072fd.pth").write_bytes(b"\0" * 10)
    (tmp_path / "audio_plugin.py").write_text(AUDIO_PLUGIN)
    info = tmp_path / "audio-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: audio\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[trainlab.plugins]\naudio = audio_plugin\n")
    env = {"HF_HUB_CACHE": str(cache), "TORCH_HOME": str(tmp_path / "torch")}
    imported = cli("models", "import", described_folder(tmp_path / "tagger", "acme-audio"), "--json", extra_path=[tmp_path], env=env)
    assert imported.returncode == 0, imported.stderr
    assert one_json_line(imported)["imported"]["format"] == "acme-audio"

    listing = cli("models", "--json", extra_path=[tmp_path], env=env)
    assert listing.returncode == 0, listing.stderr
    models = {m["name"]: m for m in one_json_line(listing)["available"]}
    assert models["org/tiny"]["format"] == "transformers" and models["org/tiny"]["path"] == str(snapshot)
    assert "text-classification" in models["org/tiny"]["tasks"] and "image-classification" not in models["org/tiny"]["tasks"]
    resnet = models["resnet18-f37072fd.pth"]
    assert resnet["format"] == "torchvision-checkpoint" and "image-classification" in resnet["tasks"]
    assert "text-classification" not in resnet["tasks"] and resnet["task"] == resnet["tasks"][0]
    assert models["tagger"]["format"] == "acme-audio" and models["tagger"]["tasks"] == ["audio-tagging"]
    text = cli("models", extra_path=[tmp_path], env=env).stdout
    assert re.search(r"tagger\s+store\s+acme-audio\s+for audio-tagging", text), text


def test_an_image_model_folder_imports_into_the_store_and_the_image_task_takes_it(tmp_path):
    entry = modelstore.import_model(described_folder(tmp_path / "cells", "trainlab-image-classifier"))
    assert entry["format"] == "trainlab-image" and entry["usable"]
    stored = {m["name"]: m for m in modelstore.available_models()}["cells"]
    assert "image-classification" in stored["tasks"] and "text-classification" not in stored["tasks"]
    from trainlab.pluginhost.host import registry

    assert modelstore.accepts(registry().task("image-classification").spec, stored)
    assert not modelstore.accepts(registry().task("text-classification").spec, stored)


def test_nothing_in_core_names_a_built_in_task():
    found = []
    for path in sorted((ROOT / "core").rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            for task_id in BUILT_IN_TASK_IDS:
                if task_id in line:
                    found.append(f"{path.relative_to(ROOT)}:{number}: {task_id}")
    assert not found, "core/ must learn about tasks from their TaskSpec, not their ids:\n" + "\n".join(found)
