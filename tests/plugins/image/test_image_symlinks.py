"""Symlinks in an image folder never carry one split's images into another, and each one skipped is named."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fixtures.images.imagedata import shapes
from trainlab_plugins.image.folder import read_dataset

pytestmark = pytest.mark.skipif(os.name == "nt", reason="symlinks need privileges on Windows")


def split_data(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    shapes(root / "train", classes=2, per_class=6)
    shapes(root / "val", classes=2, per_class=4, seed=1)
    return root


def inside(path: str, folder: Path) -> bool:
    return Path(os.path.realpath(path)).is_relative_to(folder.resolve())


def test_links_to_the_data_root_an_ancestor_or_another_split_are_skipped_by_name(tmp_path):
    root = split_data(tmp_path)
    cls = root / "train" / "circle"
    (cls / "root").symlink_to("../..")  # the data root: would take every val image as a circle
    (cls / "above").symlink_to("../../..")  # the folder holding the data root
    (cls / "peek").symlink_to("../../val/square")  # a class folder of another split
    val_image = next((root / "val" / "square").iterdir())
    (cls / "borrowed.png").symlink_to(f"../../val/square/{val_image.name}")  # one file of another split
    (root / "train" / "valsquare").symlink_to("../val/square")  # a class folder that is another split's
    found = read_dataset(str(root), val_fraction=0.2, seed=0)
    train = [path for path, _ in found.items["train"]]
    assert len(train) == 12 and not any(inside(p, root / "val") for p in train)
    assert found.label_names == ["circle", "square"]
    assert len(found.items["val"]) == 8
    note = next(w for w in found.warnings if "symlink" in w)
    for name in ("train/circle/root", "train/circle/above", "train/circle/peek", "train/circle/borrowed.png", "train/valsquare"):
        assert name in note, note
    assert "val split" in note and "data folder" in note
    reasons = {why for _, why in found.skipped_examples}
    assert any("val split" in why for why in reasons) and any("data folder" in why for why in reasons)


def test_a_plain_folder_link_to_its_root_or_above_is_skipped_and_named(tmp_path):
    root = shapes(tmp_path / "d", classes=2, per_class=5)
    (root / "circle" / "up").symlink_to("../..")
    found = read_dataset(str(root), val_fraction=0.2, seed=0)
    paths = [p for items in found.items.values() for p, _ in items]
    assert len(paths) == 10 == len(set(paths))
    assert any("circle/up" in w and "data folder" in w for w in found.warnings)


def test_a_link_out_of_the_data_folder_is_followed_with_a_note(tmp_path):
    root = split_data(tmp_path)
    extra = shapes(tmp_path / "extra", classes=1, per_class=3, seed=2)
    (root / "train" / "circle" / "more").symlink_to(extra / "circle")
    found = read_dataset(str(root), val_fraction=0.2, seed=0)
    assert len(found.items["train"]) == 15
    assert any("train/circle/more" in w and "outside" in w for w in found.warnings)
