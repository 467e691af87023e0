"""Image data: scanning, splits, bad input, image modes, EXIF, transforms, workers."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from PIL import Image

from fixtures.images.imagedata import corrupt, cpu_ctx, make_task, shapes, solid, truncated_jpeg
from trainlab import DataError
from trainlab_plugins.image.decode import UnreadableImage, load_rgb
from trainlab_plugins.image.folder import read_dataset
from trainlab_plugins.image.task import auto_workers
from trainlab_plugins.image.transforms import resolve_augmentation, train_transform


def prepare(root, **overrides):
    task, params = make_task(**overrides)
    summary = task.prepare(str(root), cpu_ctx(params, seed=int(params["seed"])))
    return task, summary


# -- scanning and splitting ---------------------------------------------------------------


def test_stratified_split_holds_out_each_class_and_follows_the_seed(tmp_path):
    shapes(tmp_path / "d", classes=3, per_class=10)
    task, summary = prepare(tmp_path / "d", val_fraction="0.2")
    assert summary.label_names == ["circle", "square", "triangle"]
    assert summary.counts["train"] == {"circle": 8, "square": 8, "triangle": 8}
    assert summary.counts["val"] == {"circle": 2, "square": 2, "triangle": 2}
    assert task.splits() == ["train", "val"]
    val = {p for p, _ in task._items["val"]}
    assert not val & {p for p, _ in task._items["train"]}
    again = read_dataset(str(tmp_path / "d"), val_fraction=0.2, seed=42)
    other = read_dataset(str(tmp_path / "d"), val_fraction=0.2, seed=7)
    assert {p for p, _ in again.items["val"]} == val
    assert {p for p, _ in other.items["val"]} != val


def test_a_class_with_one_image_stays_in_training_with_a_warning(tmp_path):
    shapes(tmp_path / "d", classes=2, per_class=5)
    solid(tmp_path / "d" / "lonely" / "only.png")
    _, summary = prepare(tmp_path / "d")
    assert summary.counts["train"]["lonely"] == 1 and summary.counts["val"]["lonely"] == 0
    assert any("'lonely' has a single image" in w for w in summary.warnings)


def test_explicit_train_val_test_folders_are_used(tmp_path):
    shapes(tmp_path / "d", classes=2, splits={"train": 6, "val": 2, "test": 3})
    task, summary = prepare(tmp_path / "d")
    assert task.splits() == ["train", "val", "test"]
    assert summary.counts["test"] == {"circle": 3, "square": 3}
    assert summary.extra["splits_from"] == "folders"


def test_train_folder_without_val_is_split_by_val_fraction(tmp_path):
    shapes(tmp_path / "d", classes=2, splits={"train": 10})
    _, summary = prepare(tmp_path / "d", val_fraction="0.3")
    assert summary.counts["val"] == {"circle": 3, "square": 3}
    assert any("no val/ folder" in w for w in summary.warnings)


@pytest.mark.parametrize(
    "layout, message",
    [
        ("missing", "does not exist"),
        ("file", "is a file"),
        ("no_class_folders", "no class folders"),
        ("one_class", "at least two classes"),
        ("val_extra_class", "holds classes that"),
        ("val_without_train", "no train/ folder"),
        ("nothing_readable", "no usable images"),
    ],
)
def test_unusable_data_is_a_data_error_naming_the_problem(tmp_path, layout, message):
    root = tmp_path / "d"
    if layout == "file":
        root = solid(tmp_path / "d.png")
    elif layout == "no_class_folders":
        solid(root / "a.png")
        solid(root / "b.png")
    elif layout == "one_class":
        shapes(root, classes=1, per_class=4)
    elif layout == "val_extra_class":
        shapes(root / "train", classes=2, per_class=3)
        shapes(root / "val", classes=3, per_class=2)
    elif layout == "val_without_train":
        shapes(root / "val", classes=2, per_class=2)
    elif layout == "nothing_readable":
        corrupt(root / "a" / "x.jpg")
        corrupt(root / "b" / "y.png")
    with pytest.raises(DataError, match=message) as info:
        prepare(root)
    assert info.value.exit_code == 2
    if layout == "val_extra_class":
        assert "triangle" in str(info.value)


def test_unreadable_and_stray_files_are_skipped_and_counted(tmp_path):
    root = shapes(tmp_path / "d", classes=2, per_class=5)
    corrupt(root / "circle" / "broken.jpg")
    corrupt(root / "square" / "notes.txt", b"lab notes")
    solid(root / "stray.png")
    corrupt(root / "circle" / ".DS_Store", b"\0\0")  # hidden: ignored, not counted
    _, summary = prepare(root)
    assert summary.skipped == {"not a readable image": 1, "not an image file": 1, "not inside a class folder": 1}
    assert {p.rsplit("/", 1)[-1] for p, _ in summary.skipped_examples} == {"broken.jpg", "notes.txt", "stray.png"}
    assert sum(summary.counts["train"].values()) + sum(summary.counts["val"].values()) == 10
    assert any("skipped" in w for w in summary.warnings)


def test_heavy_imbalance_is_warned_about_with_class_weighting_offered(tmp_path):
    root = shapes(tmp_path / "d", classes=1, per_class=30)
    shapes(tmp_path / "other", classes=2, per_class=4)
    (tmp_path / "other" / "square").rename(root / "square")
    _, summary = prepare(root)
    assert any("class_weighting=true" in w for w in summary.warnings)


def test_scan_reads_headers_only(tmp_path, monkeypatch):
    root = shapes(tmp_path / "d", classes=2, per_class=4)
    from PIL import ImageFile

    loads = []
    monkeypatch.setattr(ImageFile.ImageFile, "load", lambda self: loads.append(self) or None)
    found = read_dataset(str(root), val_fraction=0.25, seed=0)
    assert len(found.items["train"]) + len(found.items["val"]) == 8
    assert loads == []


# -- decoding -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "mode, value, expected",
    [
        ("L", 100, (100, 100, 100)),
        ("1", 1, (255, 255, 255)),
        ("LA", (50, 255), (50, 50, 50)),
        ("LA", (50, 0), (255, 255, 255)),  # fully transparent: the white background
        ("RGBA", (10, 20, 30, 255), (10, 20, 30)),
        ("I;16", 32896, (128, 128, 128)),  # 16-bit mid-grey stays mid-grey, not clipped white
        ("I", 65535, (255, 255, 255)),
        ("CMYK", (0, 255, 255, 0), (255, 0, 0)),
    ],
)
def test_every_image_mode_becomes_8_bit_rgb(tmp_path, mode, value, expected):
    fmt = {"CMYK": "JPEG", "I": "TIFF"}.get(mode, "PNG")
    path = tmp_path / f"img.{fmt.lower()}"
    Image.new(mode, (4, 4), value).save(path, format=fmt)
    image = load_rgb(str(path))
    assert image.mode == "RGB"
    assert np.allclose(np.asarray(image)[0, 0], expected, atol=3)


def test_palette_image_with_transparency_and_float_tiff(tmp_path):
    pal = Image.new("P", (4, 4), 1)
    pal.putpalette([0, 0, 0, 200, 10, 10] + [0] * 762)
    pal.save(tmp_path / "p.png", transparency=0)
    assert tuple(np.asarray(load_rgb(str(tmp_path / "p.png")))[0, 0]) == (200, 10, 10)
    pal.save(tmp_path / "t.png", transparency=1)
    assert tuple(np.asarray(load_rgb(str(tmp_path / "t.png")))[0, 0]) == (255, 255, 255)
    ramp = Image.fromarray(np.linspace(-5.0, 5.0, 16, dtype=np.float32).reshape(4, 4), mode="F")
    ramp.save(tmp_path / "f.tiff")
    gray = np.asarray(load_rgb(str(tmp_path / "f.tiff")))[..., 0]
    assert gray.min() == 0 and gray.max() == 255


def test_exif_orientation_is_honoured(tmp_path):
    array = np.zeros((10, 20, 3), dtype=np.uint8)
    array[:, :10] = (255, 0, 0)  # stored: red left half, blue right half
    array[:, 10:] = (0, 0, 255)
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90 CW to view"
    Image.fromarray(array).save(tmp_path / "r.jpg", exif=exif, quality=95)
    upright = np.asarray(load_rgb(str(tmp_path / "r.jpg")))
    assert upright.shape == (20, 10, 3)
    assert upright[2, 5, 0] > 200 and upright[-3, 5, 2] > 200  # red on top, blue below


def test_large_jpegs_decode_at_reduced_scale_but_never_below_the_needed_side(tmp_path):
    Image.new("RGB", (1600, 1200), (0, 128, 0)).save(tmp_path / "big.jpg")
    small = load_rgb(str(tmp_path / "big.jpg"), min_side=200)
    assert min(small.size) >= 200 and small.size[0] < 1600


def test_truncated_file_raises_unreadable(tmp_path):
    with pytest.raises(UnreadableImage, match="^truncated image$"):
        load_rgb(str(truncated_jpeg(tmp_path / "t.jpg")))
    (tmp_path / "notes.jpg").write_text("not an image")
    with pytest.raises(UnreadableImage, match="^not a readable image$"):
        load_rgb(str(tmp_path / "notes.jpg"))


# -- transforms, datasets, loaders ------------------------------------------------------------


def test_augmentation_auto_and_hflip_switch():
    assert resolve_augmentation("auto", "auto", epochs=3, median_side=500).name == "none"
    assert resolve_augmentation("auto", "auto", epochs=9, median_side=500).name == "none"
    assert resolve_augmentation("auto", "auto", epochs=10, median_side=500).name == "light"
    assert resolve_augmentation("auto", "auto", epochs=50, median_side=64).name == "none"  # small images
    assert not resolve_augmentation("light", "auto", epochs=10).hflip
    assert resolve_augmentation("standard", "auto", epochs=10).hflip
    assert not resolve_augmentation("standard", "false", epochs=10).hflip
    assert resolve_augmentation("none", "true", epochs=1).hflip


def test_train_transforms_give_uint8_squares_and_flip_only_when_asked(tmp_path):
    array = np.zeros((30, 40, 3), dtype=np.uint8)
    array[:, :20] = 255
    image = Image.fromarray(array)
    for name in ("none", "light", "standard"):
        out = train_transform(resolve_augmentation(name, "false", 10), 16)(image)
        assert str(out.dtype) == "torch.uint8" and tuple(out.shape) == (3, 16, 16)
    no_flip = train_transform(resolve_augmentation("none", "false", 1), 16)
    assert all(no_flip(image)[0, 8, 0] == 255 for _ in range(10))
    flip = train_transform(resolve_augmentation("none", "true", 1), 16)
    assert {int(flip(image)[0, 8, 0]) for _ in range(40)} == {0, 255}


def test_dataset_collate_and_task_pickle_for_loader_workers(tmp_path):
    import torch

    root = shapes(tmp_path / "d", classes=2, per_class=6, size=20)
    task, _ = prepare(root, image_size="16")
    clone = pickle.loads(pickle.dumps(task.collate))  # what a spawned worker receives
    batch = clone([pickle.loads(pickle.dumps(task.dataset("train")))[i] for i in range(4)])
    assert batch["pixels"].shape == (4, 3, 16, 16) and batch["pixels"].dtype == torch.uint8
    assert batch["labels"].tolist() == [task._items["train"][i][1] for i in range(4)]
    assert batch["keys"].tolist() == [0, 1, 2, 3]


def test_describe_examples_and_label_counts(tmp_path):
    root = shapes(tmp_path / "d", classes=2, per_class=5)
    task, _ = prepare(root)
    assert task.describe_examples("val", [0]) == [task._items["val"][0][0]]
    assert task.label_counts() == [4, 4]


def test_auto_workers_rule():
    assert auto_workers(2, 5.0, cuda=False) == 0  # two cores: the model needs both
    assert auto_workers(2, 0.1, cuda=True) == 0  # tiny images: shipping costs more than decoding
    assert auto_workers(16, 3.0, cuda=True) == 8
    assert auto_workers(16, 3.0, cuda=False) == 4
    assert auto_workers(16, 0.2, cuda=False) == 0


def test_expand_inputs_finds_images_in_folders(tmp_path):
    root = shapes(tmp_path / "d", classes=2, per_class=2)
    corrupt(root / "circle" / "readme.txt")
    task, _ = make_task()
    files = task.expand_inputs([str(root)])
    assert len(files) == 4 and all(f.endswith(".jpg") for f in files)
    with pytest.raises(DataError, match="does not exist"):
        task.expand_inputs([str(tmp_path / "nope.png")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no image files"):
        task.expand_inputs([str(tmp_path / "empty")])
