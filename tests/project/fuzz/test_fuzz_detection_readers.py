"""The object-detection readers fuzzed: COCO JSON, YOLO (data.yaml and label files),
Pascal VOC XML, and the annotation cache a reading leaves behind.

The property (fuzzing.py): a one-line ``DataError``, or the annotations read
(what cannot be used skipped and named).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import strategies as st

from fuzzing import (
    DEPTHS,
    JPEG,
    PNG,
    contents,
    file_bytes,
    fresh,
    fuzz,
    json_scalar,
    json_value,
    odd_text,
    one_line_error,
    write,
)
from trainlab_plugins.detection.formats import read_detection_data

number = st.one_of(st.floats(-50, 50), json_scalar)
bbox = st.one_of(st.lists(number, min_size=4, max_size=4), json_value)
ident = st.one_of(st.integers(0, 3), json_scalar, st.lists(st.integers(), max_size=2))


def _coco(images, annotations, categories) -> bytes:
    return json.dumps({"images": images, "annotations": annotations, "categories": categories}, ensure_ascii=False).encode(
        "utf-8", "surrogatepass"
    )


FILE_NAMES = ["a.png", "b.jpg", "c.png", "a\x00.png", "missing.png", "../a.png"]
coco = st.builds(
    _coco,
    st.lists(st.fixed_dictionaries({"id": ident, "file_name": st.one_of(st.sampled_from(FILE_NAMES), odd_text)},
                                   optional={"width": json_scalar, "height": json_scalar}), max_size=4),
    st.lists(st.fixed_dictionaries({"id": ident, "image_id": ident, "category_id": ident, "bbox": bbox},
                                   optional={"iscrowd": json_scalar}), max_size=6),
    st.one_of(st.lists(st.fixed_dictionaries({"id": ident, "name": st.one_of(odd_text, json_scalar)}), max_size=3), json_value),
)  # fmt: skip


def _images(folder) -> None:
    write(folder / "a.png", PNG)
    write(folder / "b.jpg", JPEG)
    write(folder / "c.png", PNG[:40])


BOX = {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 2, 2]}
# Cases that failed once, kept: JSON nested past the recursion limit; ids that
# are lists (unhashable); an infinite class id and a box past the largest float
# (OverflowError); a file name too long for the file system (OSError).
COCO_EXAMPLES = (
    b'{"images": ' + b"[" * 3000 + b"]" * 3000 + b"}",
    _coco([{"id": [1], "file_name": "a.png"}], [{**BOX, "image_id": [1]}], [{"id": 1, "name": "cat"}]),
    _coco([{"id": 1, "file_name": "a.png"}], [{**BOX, "category_id": float("inf")}], [{"id": float("inf"), "name": "cat"}]),
    _coco([{"id": 1, "file_name": "a.png"}], [{**BOX, "bbox": [10**400, 0, 1, 1]}], [{"id": 1, "name": "cat"}]),
    _coco([{"id": 1, "file_name": "x" * 300}], [BOX], [{"id": 1, "name": "cat"}]),
)


@pytest.mark.parametrize("depth", DEPTHS)
def test_coco_files_read_or_name_the_file_in_one_line(tmp_path, depth):
    def check(case):
        folder = fresh(tmp_path)
        _images(folder)
        path = write(folder / "train.json", case)
        one_line_error(lambda: read_detection_data(str(path), "coco"))
        one_line_error(lambda: read_detection_data(str(folder), "auto"))

    fuzz(depth, "detection coco", file_bytes(coco), check, examples=COCO_EXAMPLES)


# YOLO: data.yaml's values are the fuzzed part, never an absolute path or a
# folder above the data (a path the user names is walked, whatever it holds).
yaml_value = st.one_of(json_scalar, st.lists(odd_text, max_size=3), st.dictionaries(st.integers(-1, 3), odd_text, max_size=3),
                       st.sampled_from(["images/train", "images/val", "images", "list.txt", "."]))  # fmt: skip


def _data_yaml(config: dict) -> bytes:
    return json.dumps(config).encode()  # JSON is YAML too, and escapes a lone surrogate as YAML reads it


data_yaml = st.fixed_dictionaries(
    {"names": st.one_of(st.lists(odd_text, max_size=3), st.dictionaries(st.integers(-1, 3), odd_text, max_size=3), json_scalar)},
    optional={"train": yaml_value, "val": yaml_value, "nc": json_scalar},
).map(lambda c: {k: v for k, v in c.items() if not (isinstance(v, str) and (v.startswith(("/", "~")) or ".." in v))})
label_line = st.lists(st.one_of(st.sampled_from(["0", "1", "-1", "7", "0.5", "nan", "inf", "1e999", "x"]), number.map(str)), max_size=9)
label_file = st.lists(label_line, max_size=5).map(
    lambda lines: "\n".join(" ".join(line) for line in lines).encode("utf-8", "surrogatepass")
)


@pytest.mark.parametrize("depth", DEPTHS)
def test_yolo_folders_read_or_name_the_file_in_one_line(tmp_path, depth):
    strategy = st.tuples(file_bytes(st.builds(_data_yaml, data_yaml)), file_bytes(label_file), contents, file_bytes(label_file))

    def check(case):
        config, labels, image, more_labels = case
        root = fresh(tmp_path)
        write(root / "data.yaml", config)
        write(root / "images" / "train" / "a.png", PNG)
        write(root / "images" / "train" / "b.png", image)
        write(root / "images" / "val" / "c.jpg", JPEG)
        write(root / "labels" / "train" / "a.txt", labels)
        write(root / "labels" / "train" / "b.txt", more_labels)
        write(root / "labels" / "val" / "c.txt", labels)
        write(root / "list.txt", b"images/train/a.png\nimages/val/c.jpg\n")
        one_line_error(lambda: read_detection_data(str(root), "yolo"))

    # Cases that failed once, kept: PyYAML's messages of several lines, a data.yaml
    # that is not UTF-8 or nested past the recursion limit, an infinite class
    # number, a folder named with a newline or too long a name.
    examples = tuple(
        (config, b"0 0.5 0.5 0.2 0.2", PNG, b"")
        for config in (b"[\n", b"\x80", b"[" * 1000, b"names: {.inf: a}\n", b'{"names": ["a"], "train": "a\\nb"}',
                       b'{"names": ["a"], "train": "' + b"x" * 300 + b'"}')
    )  # fmt: skip
    fuzz(depth, "detection yolo", strategy, check, examples=examples)


def _voc(filename, width, height, objects) -> bytes:
    body = "".join(
        f"<object><name>{name}</name><difficult>{difficult}</difficult><bndbox><xmin>{b[0]}</xmin><ymin>{b[1]}</ymin>"
        f"<xmax>{b[2]}</xmax><ymax>{b[3]}</ymax></bndbox></object>"
        for name, difficult, b in objects
    )
    text = f"<annotation><filename>{filename}</filename><size><width>{width}</width><height>{height}</height></size>{body}</annotation>"
    return text.encode("utf-8", "surrogatepass")


xml_text = odd_text.map(lambda t: t.replace("&", "&amp;").replace("<", "&lt;"))
voc = st.builds(
    _voc, st.one_of(st.sampled_from(["a.png", "b.jpg", ""]), xml_text), number, number,
    st.lists(st.tuples(st.one_of(st.sampled_from(["cat", "dog"]), xml_text), st.sampled_from(["0", "1", "x"]),
                       st.lists(number, min_size=4, max_size=4)), max_size=4),
)  # fmt: skip


@pytest.mark.parametrize("depth", DEPTHS)
def test_voc_folders_read_or_name_the_file_in_one_line(tmp_path, depth):
    def check(case):
        first, second = case
        root = fresh(tmp_path)
        write(root / "JPEGImages" / "a.png", PNG)
        write(root / "JPEGImages" / "b.jpg", JPEG)
        write(root / "Annotations" / "a.xml", first)
        write(root / "Annotations" / "b.xml", second)
        one_line_error(lambda: read_detection_data(str(root), "voc"))

    # Cases that failed once, kept: an infinite size (OverflowError), a file name too long (OSError).
    examples = ((_voc("a.png", "inf", 3, []), _voc("x" * 300, 4, 3, [("cat", "0", [1, 1, 2, 2])])),)
    fuzz(depth, "detection voc", st.tuples(file_bytes(voc), file_bytes(voc)), check, examples=examples)


@pytest.mark.parametrize("depth", DEPTHS)
def test_a_damaged_annotation_cache_entry_is_read_again_never_raised(tmp_path, depth):
    root = tmp_path / "data"
    _images(root)
    write(root / "train.json", _coco([{"id": 1, "file_name": "a.png"}], [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 2, 2]}],
                                     [{"id": 1, "name": "cat"}]))  # fmt: skip
    cache = tmp_path / "cache"
    found, _ = read_detection_data(str(root), "coco", cache=cache)
    (entry,) = cache.iterdir()
    valid = entry.read_bytes()

    def check(case):
        entry.write_bytes(case)
        again = one_line_error(lambda: read_detection_data(str(root), "coco", cache=cache), errors=())
        # What is not a cache entry is read again; an entry that keeps the shape
        # of one is taken as read (the cache carries no checksum).
        assert again[1] or again[0].classes == found.classes

    fuzz(depth, "detection cache", file_bytes(st.just(valid)), check)
