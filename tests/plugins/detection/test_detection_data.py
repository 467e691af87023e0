"""object-detection's data readers: COCO, YOLO and VOC read alike, every fault named, EXIF turned."""

from __future__ import annotations

import json

import pytest
from PIL import Image, ImageOps
from trainlab import DataError
from trainlab_dev.detection_samples import (
    CATEGORY_IDS,
    CLASSES,
    write_coco,
    write_voc,
    write_yolo,
)
from trainlab_plugins.detection import formats
from trainlab_plugins.detection.formats import (
    make_split,
    orient_box,
    read_detection_data,
)

COUNTS = {"train": 6, "val": 3}


@pytest.mark.parametrize("writer", [write_coco, write_yolo, write_voc])
def test_the_three_formats_read_the_same_boxes(tmp_path, writer):
    root = writer(tmp_path / writer.__name__, COUNTS, size=64, seed=3)
    found, cached = read_detection_data(str(root))
    assert not cached and found.form == writer.__name__.split("_")[1]
    assert found.classes == list(CLASSES) and not found.problems
    assert {s: len(v) for s, v in found.splits.items()} == COUNTS
    # the same seed draws the same images: every format gives the same boxes
    reference, _ = read_detection_data(str(write_coco(tmp_path / "ref", COUNTS, size=64, seed=3)))
    for split in COUNTS:
        got = sorted((i.path.rsplit("/", 1)[1], i.boxes, i.labels, i.width, i.height) for i in found.splits[split])
        want = sorted((i.path.rsplit("/", 1)[1], i.boxes, i.labels, i.width, i.height) for i in reference.splits[split])
        assert got == want


def test_coco_category_ids_with_gaps_and_crowd_boxes(tmp_path):
    root = write_coco(tmp_path / "c", {"train": 2}, size=64)
    data = json.loads((root / "train.json").read_text())
    data["annotations"][0]["iscrowd"] = 1
    (root / "train.json").write_text(json.dumps(data))
    found, _ = read_detection_data(str(root))
    assert found.category_ids == list(CATEGORY_IDS) and found.classes == list(CLASSES)
    first = found.splits["train"][0]
    assert first.crowd[0] is True and not any(first.crowd[1:])
    ann = data["annotations"][0]
    assert first.labels[0] == CATEGORY_IDS.index(ann["category_id"])
    x, y, w, h = ann["bbox"]
    assert first.boxes[0] == [x, y, x + w, y + h]


def test_every_bad_coco_annotation_is_named_by_line_and_skipped(tmp_path):
    root = write_coco(tmp_path / "c", {"train": 3}, size=64)
    data = json.loads((root / "train.json").read_text())
    anns = data["annotations"]
    anns[0]["bbox"] = [10, 10, 0, 5]  # zero width
    anns[1]["bbox"] = [70, 70, 5, 5]  # outside a 64 px image
    anns[2]["category_id"] = 99  # unknown class
    data["images"].append({"id": 99, "file_name": "gone.jpg", "width": 64, "height": 64})
    anns.append({"id": 5000, "image_id": 99, "category_id": 1, "bbox": [1, 1, 5, 5]})
    (root / "train.json").write_text(json.dumps(data, indent=1))
    text = (root / "train.json").read_text()
    found, _ = read_detection_data(str(root))
    reasons = dict(found.skipped)
    assert reasons == {formats.EMPTY_BOX: 1, formats.OUTSIDE: 1, formats.UNKNOWN_CLASS: 1, formats.MISSING_IMAGE: 1}
    where = {reason.split(":")[0]: place for place, reason in found.problems}
    line = text[: text.index(f'"id": {anns[0]["id"]}', text.index('"annotations"'))].count("\n") + 1
    assert where[formats.EMPTY_BOX] == f"{root / 'train.json'}:{line} (annotation id {anns[0]['id']})"
    assert "(image id 99)" in where[formats.MISSING_IMAGE]
    assert "99" in dict(found.problems)[where[formats.UNKNOWN_CLASS]]
    assert len(found.splits["train"]) == 3  # the missing image is left out, the others kept


def test_yolo_faults_named_by_file_and_line(tmp_path):
    root = write_yolo(tmp_path / "y", {"train": 2, "val": 1}, size=64)
    label = min((root / "labels" / "train").glob("*.txt"))
    label.write_text("0 0.5 0.5 0.2 0.2\n7 0.5 0.5 0.2 0.2\n1 0.5 0.5 0 0.3\nnot a line\n2 1.6 1.6 0.1 0.1\n0 0.95 0.5 0.3 0.2\n")
    found, _ = read_detection_data(str(root))
    named = {place: reason for place, reason in found.problems}
    assert named == {
        f"{label}:2": f"{formats.UNKNOWN_CLASS}: 7",
        f"{label}:3": formats.EMPTY_BOX,
        f"{label}:4": formats.BAD_LINE,
        f"{label}:5": formats.OUTSIDE,
        f"{label}:6": formats.PARTLY_OUTSIDE,
    }
    image = next(i for i in found.splits["train"] if i.path.endswith(label.stem + ".jpg"))
    assert image.labels == [0, 0] and image.boxes[1] == pytest.approx([51.2, 25.6, 64.0, 38.4])


def test_voc_is_parsed_safely_and_names_lines(tmp_path):
    root = write_voc(tmp_path / "v", {"train": 2, "val": 1}, size=64)
    xml = min((root / "Annotations").glob("*.xml"))
    text = xml.read_text().replace("<name>", "<name>un", 1)
    xml.write_text(text)
    found, _ = read_detection_data(str(root))
    line = text.split("\n").index("  <object>") + 1
    assert (f"{xml}:{line}", f"{formats.UNKNOWN_CLASS}: un{text.split('<name>un')[1].split('<')[0]}") in found.problems
    bomb = root / "Annotations" / "train_0001.xml"
    bomb.write_text('<?xml version="1.0"?><!DOCTYPE a [<!ENTITY e "xxxxxxxxxx">]><annotation>&e;</annotation>')
    found, _ = read_detection_data(str(root))
    assert any(place == str(bomb) and reason.startswith(formats.BAD_LINE) for place, reason in found.problems)


def test_a_split_is_made_when_the_data_has_none(tmp_path):
    root = write_yolo(tmp_path / "y", {"train": 10}, size=64)
    found, _ = read_detection_data(str(root))
    make_split(found, 0.2, seed=1)
    assert (len(found.splits["train"]), len(found.splits["val"])) == (8, 2) and not found.explicit
    again, _ = read_detection_data(str(root))
    make_split(again, 0.2, seed=1)
    assert [i.path for i in again.splits["val"]] == [i.path for i in found.splits["val"]]


def test_unknown_layout_is_a_clear_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no detection annotations found"):
        read_detection_data(str(tmp_path / "empty"))


def test_parsed_annotations_are_cached_by_the_datas_fingerprint(tmp_path):
    root = write_coco(tmp_path / "c", {"train": 3, "val": 2}, size=64)
    cache = tmp_path / "cache"
    cache.mkdir()
    first, hit = read_detection_data(str(root), cache=cache)
    again, hit_again = read_detection_data(str(root), cache=cache)
    assert (hit, hit_again) == (False, True) and again.to_json() == first.to_json()
    data = json.loads((root / "val.json").read_text())
    data["annotations"].pop()
    (root / "val.json").write_text(json.dumps(data))
    changed, hit_changed = read_detection_data(str(root), cache=cache)
    assert not hit_changed and sum(len(i.boxes) for i in changed.splits["val"]) == sum(len(i.boxes) for i in first.splits["val"]) - 1


@pytest.mark.parametrize("orientation", range(1, 9))
def test_exif_orientation_turns_boxes_with_the_pixels(tmp_path, orientation):
    stored = Image.new("RGB", (40, 24), (0, 0, 0))
    stored.paste((255, 255, 255), (3, 5, 11, 9))  # the object: x 3..11, y 5..9
    exif = stored.getexif()
    exif[formats.EXIF_ORIENTATION] = orientation
    path = tmp_path / "turned.jpg"
    stored.save(path, exif=exif, quality=100)
    width, height, read = formats.image_header(path)
    assert (width, height, read) == (40, 24, orientation)
    with Image.open(path) as image:
        upright = ImageOps.exif_transpose(image).convert("L")
    x1, y1, x2, y2 = orient_box([3, 5, 11, 9], 40, 24, orientation)
    assert upright.size == formats.upright_size(40, 24, orientation)
    bright = upright.point(lambda v: 255 if v > 128 else 0).getbbox()
    assert bright == (x1, y1, x2, y2)


def test_coco_boxes_drawn_on_the_upright_image_are_kept(tmp_path):
    root = write_coco(tmp_path / "c", {"train": 1}, size=64)
    path = root / "train" / "train_0000.jpg"
    image = Image.open(path).resize((64, 32))
    exif = image.getexif()
    exif[formats.EXIF_ORIENTATION] = 6
    image.save(path, exif=exif)
    data = json.loads((root / "train.json").read_text())
    data["images"][0].update(width=32, height=64)  # the upright size: boxes drawn on what a viewer shows
    data["annotations"] = [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [2, 40, 10, 20]}]
    (root / "train.json").write_text(json.dumps(data))
    found, _ = read_detection_data(str(root))
    item = found.splits["train"][0]
    assert (item.width, item.height, item.boxes) == (32, 64, [[2, 40, 12, 60]])


def test_the_bundled_sample_ships_small_with_its_licence_and_reads_clean():
    from trainlab_plugins.detection import SAMPLE_DATA, SPEC
    from trainlab_resources import resource_path

    sample = resource_path(SAMPLE_DATA)
    assert SPEC.sample_path() == sample
    files = list(sample.rglob("*.jpg"))
    assert len(files) == 300 and sum(f.stat().st_size for f in sample.rglob("*") if f.is_file()) < 2_000_000
    assert "CC0" in (sample.parent / "README.md").read_text(encoding="utf-8")
    found, _ = read_detection_data(str(sample))
    assert not found.problems and {s: len(v) for s, v in found.splits.items()} == {"train": 240, "val": 60}
    assert found.category_ids == list(CATEGORY_IDS)
