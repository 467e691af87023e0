"""object-detection starts from weights already on the machine: a whole detector's or only its backbone's, never downloaded."""

from __future__ import annotations

import pytest
import torch
from trainlab import UsageError
from trainlab_plugins.detection.networks import build_detector, load_weights
from trainlab_plugins.detection.task import read_weights_file


def test_whole_detector_weights_load_except_a_head_for_other_classes():
    torch.manual_seed(0)
    trained = build_detector("small-fcos", 5, 64)
    fresh = build_detector("small-fcos", 3, 64)
    loaded, skipped = load_weights(fresh, trained.state_dict(), "small-fcos")
    assert skipped == ["head.classification_head.cls_logits.bias", "head.classification_head.cls_logits.weight"]
    assert loaded == len(trained.state_dict()) - 2
    assert torch.equal(fresh.state_dict()["backbone.body.0.0.weight"], trained.state_dict()["backbone.body.0.0.weight"])


def test_backbone_only_weights_land_under_the_backbone(tmp_path):
    torch.manual_seed(1)
    source = build_detector("small-fcos", 3, 64)
    backbone = {k.removeprefix("backbone.body."): v for k, v in source.state_dict().items() if k.startswith("backbone.body.")}
    path = tmp_path / "backbone.pth"
    torch.save(backbone, path)
    fresh = build_detector("small-fcos", 3, 64)
    loaded, skipped = load_weights(fresh, read_weights_file(path), "small-fcos")
    assert loaded == len(backbone) and not skipped
    assert all(torch.equal(fresh.state_dict()["backbone.body." + k], v) for k, v in backbone.items())


def test_a_file_that_is_no_weights_is_named(tmp_path):
    bad = tmp_path / "notes.pth"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(UsageError, match="notes.pth: not readable as weights"):
        read_weights_file(bad)
    with pytest.raises(UsageError, match="no such file"):
        read_weights_file(tmp_path / "missing.safetensors")
