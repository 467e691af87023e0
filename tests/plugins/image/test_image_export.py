"""The model folder: weights, JSON, torch.export and ONNX round trips, predictions from the folder alone."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
import torch

from fixtures.images.imagedata import shapes
from trainlab.system.fileio import read_json
from trainlab_plugins.image import MODELS
from trainlab_plugins.image.export import load_model_folder, onnx_available, save_model_folder
from trainlab_plugins.image.models import build_model
from trainlab_plugins.image.predictor import make_predictor, normalise
from trainlab_plugins.image.transforms import IMAGENET_MEAN, IMAGENET_STD, eval_transform

LABELS = ["circle", "square", "triangle"]


def preprocessing(size):
    return {"image_size": size, "crop_fraction": 1.0, "resize": size, "interpolation": "bilinear",
            "mean": list(IMAGENET_MEAN), "std": list(IMAGENET_STD)}  # fmt: skip


def trained_like(arch, size=32, freeze=False):
    """A model whose batch-norm statistics are not the initial ones (as after training)."""
    torch.manual_seed(0)
    model = build_model(arch, len(LABELS), image_size=size, freeze=freeze, log=lambda m: None).train()
    with torch.no_grad():
        for _ in range(2):
            model(torch.randn(4, 3, size, size) * 2 + 1)
    return model.eval()


def test_small_cnn_folder_holds_weights_json_and_a_verified_program(tmp_path):
    model = trained_like("small-cnn")
    meta = save_model_folder(model, tmp_path / "model", arch="small-cnn", label_names=LABELS, preprocessing=preprocessing(32), onnx=False)
    files = {p.name for p in (tmp_path / "model").iterdir()}
    assert files == {"model.safetensors", "model.json", "model.pt2", "README.md"}
    on_disk = read_json(tmp_path / "model" / "model.json")
    assert on_disk == json.loads(json.dumps(meta))
    assert on_disk["architecture"] == "small-cnn" and on_disk["label_names"] == LABELS
    assert on_disk["preprocessing"]["image_size"] == 32 and on_disk["preprocessing"]["mean"] == list(IMAGENET_MEAN)
    export = on_disk["exports"]["torch_export"]
    assert export["verified"] and export["max_abs_diff"] <= 1e-4
    reloaded, _ = load_model_folder(tmp_path / "model")
    x = torch.randn(3, 3, 32, 32)
    with torch.no_grad():
        assert torch.allclose(reloaded(x), model(x), atol=1e-5)


def test_the_torch_export_program_runs_in_plain_torch_without_trainlab(tmp_path):
    model = trained_like("small-cnn")
    save_model_folder(model, tmp_path / "m", arch="small-cnn", label_names=LABELS, preprocessing=preprocessing(32), onnx=False)
    x = torch.randn(5, 3, 32, 32)
    torch.save(x, tmp_path / "x.pt")
    with torch.no_grad():
        expected = model(x)
    script = (
        "import sys, torch\n"
        "program = torch.export.load(sys.argv[1]).module()\n"
        "x = torch.load(sys.argv[2], weights_only=True)\n"
        "torch.save(program(x), sys.argv[3])\n"
        "assert 'trainlab' not in sys.modules\n"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", script, str(tmp_path / "m" / "model.pt2"), str(tmp_path / "x.pt"), str(tmp_path / "y.pt")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert torch.allclose(torch.load(tmp_path / "y.pt", weights_only=True), expected, atol=1e-4)


def test_torchvision_weights_load_into_plain_torchvision_even_after_freezing(tmp_path):
    import torchvision
    from safetensors.torch import load_file

    model = trained_like("resnet18", freeze=True)
    save_model_folder(model, tmp_path / "m", arch="resnet18", label_names=LABELS, preprocessing=preprocessing(32), onnx=False)
    plain = torchvision.models.resnet18(num_classes=3)
    plain.load_state_dict(load_file(str(tmp_path / "m" / "model.safetensors")), strict=True)
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        assert torch.allclose(plain.eval()(x), model(x), atol=1e-4)
    meta = read_json(tmp_path / "m" / "model.json")
    assert meta["torchvision"] == {"constructor": "torchvision.models.resnet18", "kwargs": {"num_classes": 3}}
    assert meta["exports"]["torch_export"]["verified"]


def test_onnx_is_skipped_with_a_reason_when_the_packages_are_missing(tmp_path):
    if onnx_available():
        pytest.skip("onnx is installed here; see test_onnx_export_round_trip")
    meta = save_model_folder(trained_like("small-cnn"), tmp_path / "m", arch="small-cnn", label_names=LABELS, preprocessing=preprocessing(32))
    assert "onnx" in meta["exports"]["onnx"]["skipped"] and meta["files"]["onnx"] is None
    assert not (tmp_path / "m" / "model.onnx").exists()


@pytest.mark.skipif(not onnx_available(), reason="the optional onnx and onnxscript packages are not installed")
def test_onnx_export_round_trip(tmp_path):
    meta = save_model_folder(trained_like("small-cnn"), tmp_path / "m", arch="small-cnn", label_names=LABELS, preprocessing=preprocessing(32))
    onnx_meta = meta["exports"]["onnx"]
    assert "error" not in onnx_meta, onnx_meta
    assert (tmp_path / "m" / "model.onnx").is_file() and meta["files"]["onnx"] == "model.onnx"
    import importlib.util

    if importlib.util.find_spec("onnxruntime") is not None:
        assert onnx_meta["verified"] and onnx_meta["max_abs_diff"] <= 1e-4
    else:
        assert not onnx_meta["verified"] and "onnxruntime" in onnx_meta["note"]


def test_predictions_come_from_the_model_folder_alone(tmp_path):
    data = shapes(tmp_path / "d", classes=3, per_class=2, size=40)
    model = trained_like("small-cnn")
    save_model_folder(model, tmp_path / "m", arch="small-cnn", label_names=LABELS, preprocessing=preprocessing(32), onnx=False)
    moved = tmp_path / "elsewhere" / "model"
    shutil.copytree(tmp_path / "m", moved)
    shutil.rmtree(tmp_path / "m")
    files = sorted(str(p) for p in data.rglob("*.jpg"))
    predict = make_predictor(moved, torch.device("cpu"))
    results = predict(files, 2)
    assert len(results) == len(files) and all(len(r) == 2 for r in results)
    # the same numbers as the model on the same preprocessing
    from trainlab_plugins.image.decode import load_rgb

    pixels = torch.stack([eval_transform(32)(load_rgb(f)) for f in files])
    with torch.no_grad():
        probs = torch.softmax(model(normalise(pixels, IMAGENET_MEAN, IMAGENET_STD)), 1)
    top = probs.max(1)
    assert [r[0][0] for r in results] == [LABELS[i] for i in top.indices.tolist()]
    assert [r[0][1] for r in results] == pytest.approx(top.values.tolist(), abs=1e-5)
    assert all(r[0][1] >= r[1][1] for r in results)


@pytest.mark.slow
@pytest.mark.parametrize("arch", MODELS)
def test_every_preset_exports_and_verifies(tmp_path, arch):
    meta = save_model_folder(trained_like(arch), tmp_path / "m", arch=arch, label_names=LABELS, preprocessing=preprocessing(32))
    assert meta["exports"]["torch_export"].get("verified"), meta["exports"]
    if onnx_available():
        assert "error" not in meta["exports"]["onnx"], meta["exports"]["onnx"]


def test_a_folder_that_would_not_reproduce_the_model_is_refused(tmp_path):
    # trained at 64 px (stride-2 stem) but described as 32 px (stride 1): same weights, other outputs
    model = trained_like("small-cnn", size=64)
    with pytest.raises(RuntimeError, match="differs from the trained one"):
        save_model_folder(model, tmp_path / "m", arch="small-cnn", label_names=LABELS, preprocessing=preprocessing(32), onnx=False)
