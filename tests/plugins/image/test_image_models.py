"""Image models: every preset trains a step, heads, freezing, weights from local files only."""

from __future__ import annotations

import pytest
import torch

from trainlab import UsageError
from trainlab_plugins.image import MODELS, PRESETS, SPEC
from trainlab_plugins.image.models import HEADS, build_architecture, build_model, torchvision_checkpoint
from trainlab.api.params import ENGINE_PARAMS, resolve


@pytest.mark.parametrize("arch", MODELS)
def test_every_preset_runs_forward_and_backward_at_a_tiny_size(arch):
    torch.manual_seed(0)
    model = build_model(arch, 3, log=lambda m: None).train()
    pixels = torch.randn(2, 3, 32, 32)
    logits = model(pixels)
    assert logits.shape == (2, 3)
    torch.nn.functional.cross_entropy(logits, torch.tensor([0, 2])).backward()
    head = model.get_submodule(HEADS[arch])
    assert isinstance(head, torch.nn.Linear) and head.out_features == 3
    assert head.weight.grad is not None and head.weight.grad.abs().sum() > 0


def test_small_cnn_takes_any_image_size():
    model = build_architecture("small-cnn", 4).eval()
    for shape in ((1, 3, 16, 16), (2, 3, 48, 80), (1, 3, 200, 120)):
        assert model(torch.randn(*shape)).shape == (shape[0], 4)


def test_presets_resolve_to_their_defaults():
    auto = resolve(SPEC, ENGINE_PARAMS, {}, {})  # the small CNN sized to the data
    assert auto["model"] == "auto" and auto["image_size"] == 64 and auto["batch_size"] == 32 and not auto["pretrained"]
    small = resolve(SPEC, ENGINE_PARAMS, {}, {"model": "small-cnn"})
    assert small["image_size"] == 64 and small["batch_size"] == 64 and not small["pretrained"]
    big = resolve(SPEC, ENGINE_PARAMS, {}, {"model": "resnet50"})
    assert big["image_size"] == 224 and big["pretrained"] is True
    explicit = resolve(SPEC, ENGINE_PARAMS, {}, {"model": "resnet50", "image_size": "128"})
    assert explicit["image_size"] == 128
    assert {p.name for p in PRESETS} == set(MODELS)


def test_freeze_backbone_trains_only_the_head_and_keeps_batch_norm_statistics():
    torch.manual_seed(0)
    model = build_model("resnet18", 3, freeze=True, log=lambda m: None)
    trainable = [name for name, p in model.named_parameters() if p.requires_grad]
    assert trainable == ["fc.weight", "fc.bias"]
    before = {k: v.clone() for k, v in model.state_dict().items() if "running_mean" in k}
    model.train()
    model(torch.randn(4, 3, 32, 32) * 5 + 3)
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


@pytest.fixture
def torch_home(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    return tmp_path / "torch"


def test_pretrained_weights_come_from_torchvisions_cache_folder(torch_home):
    path, url = torchvision_checkpoint("resnet18")
    assert path == torch_home / "hub" / "checkpoints" / "resnet18-f37072fd.pth"
    assert url.endswith("/resnet18-f37072fd.pth")
    imagenet = build_architecture("resnet18", 1000).state_dict()
    path.parent.mkdir(parents=True)
    torch.save(imagenet, path)
    logs = []
    model = build_model("resnet18", 5, pretrained=True, log=logs.append)
    assert torch.equal(model.state_dict()["layer1.0.conv1.weight"], imagenet["layer1.0.conv1.weight"])
    assert model.fc.out_features == 5
    assert "resnet18-f37072fd.pth" in logs[0] and "head fc newly initialised" in logs[0]


def test_missing_pretrained_weights_name_the_file_the_folder_and_how_to_stage_them(torch_home):
    with pytest.raises(UsageError) as info:
        build_model("mobilenet_v3_small", 3, pretrained=True)
    message = str(info.value)
    assert "mobilenet_v3_small-047dcff4.pth" in message
    assert str(torch_home / "hub" / "checkpoints") in message
    assert "connected machine" in message and "pretrained=false" in message
    assert info.value.exit_code == 2


def test_user_weights_file_safetensors_or_wrapped_pth(tmp_path):
    from safetensors.torch import save_file

    source = build_architecture("small-cnn", 7).state_dict()
    save_file(source, str(tmp_path / "w.safetensors"))
    torch.save({"state_dict": {"module." + k: v for k, v in source.items()}, "epoch": 3}, tmp_path / "w.pth")
    for name in ("w.safetensors", "w.pth"):
        model = build_model("small-cnn", 3, weights=str(tmp_path / name), log=lambda m: None)
        assert torch.equal(model.state_dict()["features.0.weight"], source["features.0.weight"])
        assert model.fc.out_features == 3  # 7 classes in the file: the head is new


def test_weights_of_another_architecture_are_refused(tmp_path):
    torch.save(build_architecture("resnet18", 3).state_dict(), tmp_path / "r18.pth")
    with pytest.raises(UsageError, match="does not fit model resnet34"):
        build_model("resnet34", 3, weights=str(tmp_path / "r18.pth"))


class NotAWeight:
    pass


def test_pth_files_are_loaded_with_weights_only(tmp_path):
    torch.save({"payload": NotAWeight()}, tmp_path / "evil.pth")
    with pytest.raises(UsageError, match="cannot read weights file"):
        build_model("small-cnn", 3, weights=str(tmp_path / "evil.pth"))
    with pytest.raises(UsageError, match="does not exist"):
        build_model("small-cnn", 3, weights=str(tmp_path / "nope.safetensors"))


def test_the_plugin_module_imports_no_torch_torchvision_or_pil():
    import subprocess
    import sys

    code = (
        "import sys, trainlab_plugins.image as p\n"
        "assert p.trainlab_api_version() == '2.0' and p.trainlab_tasks()[0].id == 'image-classification'\n"
        "heavy = [m for m in ('torch', 'torchvision', 'PIL', 'numpy') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
