"""The image readers fuzzed: images listed in tables (CSV, TSV, JSONL; classes, numbers,
label sets) and folders of class folders whose folder and file names are odd and whose
files are images, cut-short images or anything else.

The property (fuzzing.py): a one-line ``DataError``, or the splits read (what
cannot be used skipped and counted).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import assume
from hypothesis import strategies as st

from fuzzing import DEPTHS, JPEG, PNG, contents, fresh, fuzz, json_scalar, odd_text, one_line_error, table_bytes, write
from trainlab_plugins.image.data import read_image_data
from trainlab_plugins.image.folder import read_dataset
from trainlab_plugins.image.labels import ClassLabels, LabelSets, NumberLabels


# A file or folder name: odd characters (newlines, right-to-left marks, a
# leading dot or dash, spaces), never a separator or NUL, which no file system takes.
names = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_characters="/\x00"), min_size=1, max_size=20),
    st.sampled_from(["cat", "dog", "a\nb", " ", "-x", ".hidden", "..x", "\u202eevil", "e\u0301", "x" * 200, "CON", "a\\b"]),
)
LABELS = {"class": ClassLabels(), "number": NumberLabels(), "labels": LabelSets()}


def _files(folder, files) -> None:
    for name, data in files:
        try:
            (folder / name).write_bytes(data)
        except (OSError, ValueError):
            assume(False)  # a name this file system refuses (too long): not a case


# -- images listed in tables ------------------------------------------------------------

image_cell = st.one_of(
    st.sampled_from(["png.png", "jpeg.jpg", "short.png", "junk.png", "missing.png", "", "sub", "/dev/null", "/dev/zero",
                     "a\x00b.png", "\ud800.png", "~/x.png", "../png.png", "pics/../png.png"]),
    odd_text, json_scalar,
)  # fmt: skip
# Cases that failed once, kept: a listed path holding a NUL or a lone surrogate
# (ValueError, UnicodeEncodeError from os.stat), an integer past the largest
# float as a number label (OverflowError), JSON nested past the recursion limit,
# a missing image whose path holds a newline (named in the error).
TABLE_EXAMPLES = (
    b'{"image": "a\\u0000b.png", "label": "x"}\n{"image": "png.png", "label": "y"}\n',
    b'{"image": "\\ud800.png", "label": "x"}\n{"image": "png.png", "label": "y"}\n',
    b"image,label\na\x00b.png,x\npng.png,y\n",
    b'{"image": "png.png", "label": 1' + b"0" * 400 + b'}\n{"image": "jpeg.jpg", "label": 2}\n',
    b'{"image": "png.png", "label": ' + b"[" * 3000 + b"]" * 3000 + b"}\n",
    b'{"image": "!\\n!", "label": null}',  # the path, with its newline, in the error: two lines
    b"image,label\n~no-such-user-here/a.png,x\n~\x00/b.png,y\n",  # expanduser: RuntimeError, ValueError
)
listed_row = st.fixed_dictionaries({"image": image_cell, "label": st.one_of(json_scalar, st.lists(odd_text, max_size=3))})


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl"])
@pytest.mark.parametrize("family", sorted(LABELS))
def test_image_tables_read_or_name_the_file_in_one_line(tmp_path, depth, suffix, family):
    def check(case):
        folder = fresh(tmp_path)
        _files(folder, [("png.png", PNG), ("jpeg.jpg", JPEG), ("short.png", PNG[:30]), ("junk.png", b"junk")])
        (folder / "sub").mkdir()
        table = write(folder / f"train{suffix}", case)
        one_line_error(lambda: read_image_data(str(table), LABELS[family], image_column="image", label_column="label",
                                               val_fraction=0.2, seed=0))  # fmt: skip

    fuzz(depth, f"image table {family} {suffix}", table_bytes(listed_row, suffix), check, examples=TABLE_EXAMPLES)


# -- folders of class folders --------------------------------------------------------------

class_folder = st.tuples(names, st.lists(st.tuples(names.map(lambda n: n + st_suffix(n)), contents), max_size=4))


def st_suffix(name: str) -> str:
    """Most names get an image extension, so that their contents are read, not skipped unread."""
    return "" if len(name) % 3 == 0 else (".png", ".jpg", ".JPEG", ".txt")[len(name) % 4]


layout = st.one_of(
    st.lists(class_folder, max_size=4).map(lambda classes: {"": classes}),
    st.dictionaries(st.sampled_from(["train", "val", "test", "Validation", "training"]), st.lists(class_folder, max_size=3), max_size=3),
)


@pytest.mark.parametrize("depth", DEPTHS)
def test_image_folders_with_odd_names_read_or_name_the_folder_in_one_line(tmp_path, depth):
    def check(case):
        root = fresh(tmp_path)
        for split, classes in case.items():
            for label, files in classes:
                folder = root / split / label
                try:
                    folder.mkdir(parents=True, exist_ok=True)
                except (OSError, ValueError):
                    assume(False)
                if not folder.is_dir():
                    assume(False)
                _files(folder, files)
        assert os.path.isdir(root)
        one_line_error(lambda: read_dataset(str(root), val_fraction=0.2, seed=0))
        one_line_error(lambda: read_dataset(str(root), val_fraction=0.2, seed=0, whole=True, label_names=["cat", "dog"]))
        one_line_error(lambda: read_image_data(str(root), ClassLabels(), image_column="image", label_column="label",
                                               val_fraction=0.5, seed=1))  # fmt: skip

    two = [("x.png", PNG), ("y.png", PNG)]
    # A case that failed once, kept: class names with a newline in the error that names them (two lines).
    examples = ({"train": [("a\nb", two), ("c", two)], "val": [("new\nclass", two), ("c", two)]},)
    fuzz(depth, "image folders", layout, check, examples=examples)
